/** How texts are grouped into requests to the embeddings service, and how the answer to one request is checked. */

import { Result } from "effect"

/**
 * A text's size in tokens, approximately: one token per 3 bytes of UTF-8, rounded up. Tokenizers give English about
 * 4 characters per token, so this errs on the large side, which keeps batches within a service's limit.
 */
export const approxTokens = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c < 0xdc00) {
      bytes += 4 // a surrogate pair is one code point of 4 bytes
      i++
    } else bytes += 3
  }
  return Math.ceil(bytes / 3)
}

/**
 * Splits `texts` into consecutive batches of at most `maxInputs` texts and `maxTokens` approximate tokens; a text
 * over `maxTokens` on its own is a batch of one (the service decides whether it is too long). Returns `[start, end)`
 * index pairs in order.
 */
export const planBatches = (
  texts: ReadonlyArray<string>,
  maxInputs: number,
  maxTokens: number
): ReadonlyArray<readonly [number, number]> => {
  const out: Array<readonly [number, number]> = []
  let start = 0
  let tokens = 0
  for (let i = 0; i < texts.length; i++) {
    const t = approxTokens(texts[i]!)
    if (i > start && (i - start === maxInputs || tokens + t > maxTokens)) {
      out.push([start, i])
      start = i
      tokens = 0
    }
    tokens += t
  }
  if (start < texts.length) out.push([start, texts.length])
  return out
}

/** The vectors of one response, in input order, and the tokens the service counted (when it says). */
export interface Answer {
  readonly vectors: Array<Array<number>>
  readonly tokens: number | undefined
}

/** Whether `u` is an object with fields (not null, not a list): what a JSON object parses to. */
export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Reads an embeddings response: `count` vectors (placed by their `index` field when every item has one), each of
 * `dimensions` finite numbers (or, with `dimensions` undefined, all of one length). A failure says, in words, what is
 * wrong with the answer.
 */
export const decodeAnswer = (
  body: unknown,
  count: number,
  dimensions: number | undefined,
  lengthNote = ""
): Result.Result<Answer, string> => {
  if (!isRecord(body) || !Array.isArray(body.data)) {
    return Result.fail('it is not an embeddings response (there is no "data" list)')
  }
  const data = body.data as ReadonlyArray<unknown>
  if (data.length !== count) {
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`
    return Result.fail(`it holds ${plural(data.length, "vector")} for ${plural(count, "text")}`)
  }
  const byIndex = data.every((item) => isRecord(item) && Number.isInteger(item.index))
  const vectors: Array<Array<number>> = new Array(count)
  let length = dimensions
  for (let i = 0; i < count; i++) {
    const item = data[i]
    const at = byIndex ? (item as { readonly index: number }).index : i
    if (at < 0 || at >= count || vectors[at] !== undefined) {
      return Result.fail('the "index" fields of its vectors do not number the texts 0, 1, 2, …')
    }
    const vector = isRecord(item) ? item.embedding : undefined
    if (!Array.isArray(vector) || vector.length === 0) {
      return Result.fail(`the vector of text ${at} is not a list of numbers`)
    }
    length ??= vector.length
    if (vector.length !== length) {
      return Result.fail(
        `the vector of text ${at} has ${vector.length} numbers where the model's vectors have ${length}${lengthNote}`
      )
    }
    for (let j = 0; j < vector.length; j++) {
      const x: unknown = vector[j]
      if (typeof x !== "number" || !Number.isFinite(x)) {
        const shown = JSON.stringify(x) ?? String(x)
        return Result.fail(`the vector of text ${at} holds ${shown} at position ${j}, not a finite number`)
      }
    }
    vectors[at] = vector as Array<number>
  }
  const usage = body.usage
  const tokens =
    isRecord(usage) && Number.isInteger(usage.prompt_tokens) && (usage.prompt_tokens as number) >= 0
      ? (usage.prompt_tokens as number)
      : undefined
  return Result.succeed({ vectors, tokens })
}
