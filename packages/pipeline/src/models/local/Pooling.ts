/**
 * The `local:<folder>` models' pure parts: what a folder's model name becomes, how a transformer's token vectors are
 * pooled into one vector per text, and how texts are grouped into batches.
 */
import { Result } from "effect"

/** The prefix of the model names of Hugging Face model folders: `local:/models/all-MiniLM-L6-v2`. */
export const LOCAL_PREFIX = "local:"

/**
 * How a text's token vectors become one vector: `mean` averages the vectors of its real tokens (the attention mask's
 * ones, so padding never counts), `cls` takes the first token's. Both are then scaled to length 1.
 */
export type Pooling = "mean" | "cls"

/** The pooling of a folder without a sentence-transformers pooling file (`1_Pooling/config.json`). */
export const DEFAULT_POOLING: Pooling = "mean"

/** At most this many texts go through the model at once. */
export const BATCH_TEXTS = 32

/**
 * At most this many characters (code units) go through the model at once, about 8,000 tokens of English: attention's
 * memory grows with the batch times the square of its longest text, so long chunks go in smaller batches.
 */
export const BATCH_CHARACTERS = 32_768

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * The pooling a sentence-transformers `1_Pooling/config.json` asks for: `mean` or `cls`, or why FuncPipe cannot do
 * what it asks (max pooling, several poolings at once, a file that is not such a configuration).
 */
export const poolingOf = (config: unknown): Result.Result<Pooling, string> => {
  if (!isRecord(config)) return Result.fail("it is not a JSON object")
  const modes = Object.entries(config)
    .filter(([key, value]) => key.startsWith("pooling_mode_") && value === true)
    .map(([key]) => key.slice("pooling_mode_".length))
  if (modes.length === 1 && modes[0] === "mean_tokens") return Result.succeed("mean")
  if (modes.length === 1 && modes[0] === "cls_token") return Result.succeed("cls")
  return Result.fail(
    modes.length === 0
      ? "it names no pooling mode"
      : `it asks for ${modes.join(" + ")} pooling; FuncPipe pools by mean_tokens or cls_token`
  )
}

/**
 * One vector per text from a transformer's output: `hidden` holds `[texts, tokens, dimensions]` numbers row by row
 * (`last_hidden_state`), `mask` `[texts, tokens]` (1 for a real token, 0 for padding). Each vector is pooled as
 * `pooling` says, then scaled to length 1; a text with no real token, or whose pooled vector is all zeros, gets a
 * vector of zeros.
 */
export const poolVectors = (
  hidden: ArrayLike<number>,
  shape: readonly [number, number, number],
  mask: ArrayLike<number | bigint>,
  pooling: Pooling
): Array<Float64Array> => {
  const [texts, tokens, dimensions] = shape
  const out: Array<Float64Array> = []
  for (let t = 0; t < texts; t++) {
    const vector = new Float64Array(dimensions)
    let count = 0
    for (let k = 0; k < tokens; k++) {
      if (Number(mask[t * tokens + k]) === 0) continue
      if (pooling === "cls" && count > 0) break
      const row = (t * tokens + k) * dimensions
      for (let d = 0; d < dimensions; d++) vector[d]! += hidden[row + d]!
      count++
    }
    let squares = 0
    for (let d = 0; d < dimensions; d++) {
      vector[d]! /= Math.max(count, 1)
      squares += vector[d]! * vector[d]!
    }
    const norm = Math.sqrt(squares)
    if (norm > 0) for (let d = 0; d < dimensions; d++) vector[d]! /= norm
    out.push(vector)
  }
  return out
}

/**
 * The texts' positions in batches of at most `maxTexts` texts and `maxCharacters` characters, longest texts first: a
 * batch is padded to its longest text, so texts of similar length go together. A text longer than `maxCharacters`
 * is a batch of its own. Every position appears once.
 */
export const lengthBatches = (
  texts: ReadonlyArray<string>,
  maxTexts: number = BATCH_TEXTS,
  maxCharacters: number = BATCH_CHARACTERS
): Array<Array<number>> => {
  const order = texts.map((_, i) => i)
  order.sort((a, b) => texts[b]!.length - texts[a]!.length || a - b)
  const out: Array<Array<number>> = []
  let batch: Array<number> = []
  let characters = 0
  for (const i of order) {
    const length = texts[i]!.length
    if (batch.length > 0 && (batch.length === maxTexts || characters + length > maxCharacters)) {
      out.push(batch)
      batch = []
      characters = 0
    }
    batch.push(i)
    characters += length
  }
  if (batch.length > 0) out.push(batch)
  return out
}
