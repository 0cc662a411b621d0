/**
 * Prompt construction, a pure stage: from a question and ranked chunks, the messages that ask a chat model to answer
 * from them alone and to cite them. Chunks of one document that overlap or touch are merged into one passage; the
 * passages, numbered `[1]`, `[2]` … in ranking order with their title and doc id, are packed into a budget of tokens;
 * a passage that does not fit whole is cut at a word's end, never inside a word. The same inputs give the same
 * messages, byte for byte.
 *
 * Tokens are estimated, not counted: one token per 3 bytes of UTF-8, rounded up. Tokenizers of current chat models
 * give about 4 bytes of English a token and 2–3 bytes of other scripts (a CJK character is 3 bytes and 1–2 tokens),
 * so the estimate errs on the side of a prompt that fits.
 */

import { plainPassage } from "@funcpipe/domain/Answer"
import type { SourcePassage } from "@funcpipe/domain/Ask"

/** A ranked chunk as the prompt needs it: where it is, and its text. */
export interface PromptChunk {
  readonly docId: string
  readonly title: string
  /** The chunk's span in its document's cleaned text, in code points. */
  readonly start: number
  readonly end: number
  /** The chunk's cleaned text (the span's code points). */
  readonly text: string
}

/** A numbered source of a prompt: a passage of one document (the shape the answers' JSON is made from). */
export type PromptSource = SourcePassage

/** The messages for the model, and the sources they number. */
export interface PromptMessages {
  readonly system: string
  readonly user: string
  readonly sources: ReadonlyArray<PromptSource>
}

export interface PromptOptions {
  /** The most tokens (estimated) the sources may take: default `DEFAULT_CONTEXT_TOKENS`. */
  readonly contextTokens?: number
  /** The system message in place of `DEFAULT_SYSTEM_PROMPT`. */
  readonly system?: string
  /**
   * A span's text as the document has it (its original words, case and punctuation), for a span of merged chunks;
   * without it, the chunks' cleaned texts are joined.
   */
  readonly passageOf?: (docId: string, start: number, end: number) => string | undefined
}

export const DEFAULT_CONTEXT_TOKENS = 3000

/** A passage cut shorter than this many tokens is left out: a few words out of context mislead more than they help. */
const LEAST_CUT_TOKENS = 40

export const DEFAULT_SYSTEM_PROMPT = [
  "You answer questions from the numbered sources given with each question, and from nothing else.",
  "Cite the source of every statement with its number in square brackets, like [1], or [1][3] for several.",
  "If the sources do not hold the answer, say that the documents do not say, and nothing more.",
  "Quote sparingly, and answer in the language of the question."
].join("\n")

const encoder = new TextEncoder()

/** The estimated tokens of a text: one per 3 bytes of UTF-8, rounded up. */
export const estimateTokens = (text: string): number => Math.ceil(encoder.encode(text).length / 3)

/** A span of one document made of chunks that overlap or touch, ranked by its best chunk. */
interface Span {
  readonly docId: string
  readonly title: string
  readonly start: number
  readonly end: number
  /** The span's code points (cleaned), for joining its chunks without `passageOf`. */
  readonly points: ReadonlyArray<string>
  readonly rank: number
}

/** The chunks of each document merged where they overlap or touch, in the order of each span's best chunk. */
const mergedSpans = (chunks: ReadonlyArray<PromptChunk>): Array<Span> => {
  const byDoc = new Map<string, Array<{ chunk: PromptChunk; rank: number; points: Array<string> }>>()
  chunks.forEach((chunk, rank) => {
    const list = byDoc.get(chunk.docId) ?? []
    list.push({ chunk, rank, points: Array.from(plainEnd(chunk.text)) })
    byDoc.set(chunk.docId, list)
  })
  const spans: Array<Span> = []
  for (const list of byDoc.values()) {
    list.sort((a, b) => a.chunk.start - b.chunk.start || a.rank - b.rank)
    let open: { start: number; points: Array<string>; rank: number; title: string; docId: string } | undefined
    const close = () => {
      if (open !== undefined) spans.push({ ...open, end: open.start + open.points.length })
    }
    for (const { chunk, points, rank } of list) {
      if (open !== undefined && chunk.start <= open.start + open.points.length) {
        // Overlapping or touching: the chunk's code points past the span's end extend it.
        const past = open.start + open.points.length - chunk.start
        open.points.push(...points.slice(past))
        open.rank = Math.min(open.rank, rank)
        continue
      }
      close()
      open = { start: chunk.start, points: [...points], rank, title: chunk.title, docId: chunk.docId }
    }
    close()
  }
  return spans.sort((a, b) => a.rank - b.rank)
}

/** A padded tail's U+0000s (written without the character, which a pattern should not hold literally). */
const PADDING = new RegExp(`${String.fromCharCode(0)}+$`)

/** A chunk's text without a padded tail's U+0000s. */
const plainEnd = (text: string) => text.replace(PADDING, "")

/** The longest start of `text` that ends at a word's end and fits `tokens`, with `…` after it; none if too short. */
const cutToFit = (text: string, tokens: number): string | undefined => {
  if (tokens < LEAST_CUT_TOKENS) return undefined
  const words = text.split(" ")
  let lo = 0
  let hi = words.length
  // The most words whose text and the mark fit.
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (estimateTokens(`${words.slice(0, mid).join(" ")} …`) <= tokens) lo = mid
    else hi = mid - 1
  }
  return lo === 0 ? undefined : `${words.slice(0, lo).join(" ")} …`
}

/** A source's heading line: its number, title and doc id. */
const headingOf = (number: number, title: string, docId: string) =>
  `[${number}] ${title === "" || title === docId ? docId : `${title} (${docId})`}`

/**
 * The messages that ask a model to answer `question` from `chunks` (ranked, best first) and to cite them, with the
 * sources they number. Chunks that add nothing (a span already given) add no source.
 */
export const buildPrompt = (
  question: string,
  chunks: ReadonlyArray<PromptChunk>,
  options: PromptOptions = {}
): PromptMessages => {
  const budget = options.contextTokens ?? DEFAULT_CONTEXT_TOKENS
  const sources: Array<PromptSource> = []
  let used = 0
  for (const span of mergedSpans(chunks)) {
    const written = options.passageOf?.(span.docId, span.start, span.end) ?? span.points.join("")
    const text = plainPassage(written)
    if (text === "") continue
    const number = sources.length + 1
    const heading = headingOf(number, span.title, span.docId)
    const whole = estimateTokens(`${heading}\n${text}\n\n`)
    if (used + whole <= budget) {
      sources.push({ number, docId: span.docId, title: span.title, start: span.start, end: span.end, text, cut: false })
      used += whole
      continue
    }
    const cut = cutToFit(text, budget - used - estimateTokens(`${heading}\n\n\n`))
    if (cut !== undefined) {
      sources.push({
        number,
        docId: span.docId,
        title: span.title,
        start: span.start,
        end: span.end,
        text: cut,
        cut: true
      })
    }
    break
  }
  const blocks = sources.map((s) => `${headingOf(s.number, s.title, s.docId)}\n${s.text}`)
  const user =
    sources.length === 0
      ? `No source was found for this question.\n\nQuestion: ${question.trim()}`
      : `Sources:\n\n${blocks.join("\n\n")}\n\nQuestion: ${question.trim()}`
  return { system: options.system ?? DEFAULT_SYSTEM_PROMPT, user, sources }
}

/**
 * The source numbers an answer cites (`[2]`, `[1][3]`, `[1, 3]`), in the order first cited, each with whether the
 * prompt gave such a source: a citation of a number it did not give is flagged, not dropped.
 */
export const citationsOf = (
  answer: string,
  sources: ReadonlyArray<PromptSource>
): ReadonlyArray<{ readonly number: number; readonly known: boolean }> => {
  const seen = new Set<number>()
  const cited: Array<{ number: number; known: boolean }> = []
  for (const match of answer.matchAll(/\[(\d+(?:\s*,\s*\d+)*)\]/g)) {
    for (const part of match[1]!.split(",")) {
      const number = Number(part.trim())
      if (seen.has(number)) continue
      seen.add(number)
      cited.push({ number, known: sources.some((s) => s.number === number) })
    }
  }
  return cited
}
