/**
 * The chunk stage: fixed windows of code points over a cleaned body, with the reference's tail policies; or windows
 * that end at a word, a sentence or a heading (`ChunkStrategy`).
 */
import { ChunkDraft, Offset } from "@funcpipe/domain/Chunk"
import { ChunkerConfig, type ChunkStrategy, type CleanerConfig } from "@funcpipe/domain/Config"
import type { CleanDoc } from "@funcpipe/domain/Document"
import { isWhitespaceUnit } from "@funcpipe/domain/Whitespace"
import { countBelow } from "../base/Sorted.ts"
import { headingStarts, markupOf } from "./Display.ts"
import { cleanAligned } from "./Original.ts"

/** A window of a body: `[start, end)` in code points, and its text. */
export interface Span {
  readonly start: number
  readonly end: number
  readonly text: string
}

const surrogate = /[\uD800-\uDFFF]/

/** The UTF-16 index after the code point at `i`: a lead surrogate followed by a trail one is a single code point. */
const nextCodePoint = (text: string, i: number): number => {
  const unit = text.charCodeAt(i)
  return unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? i + 2 : i + 1
}

/** Adds the window at `start` whose body part ends at `segmentEnd` (code points), padding a short one if asked. */
const pushSpan = (
  out: Array<Span>,
  start: number,
  segmentEnd: number,
  windowEnd: number,
  text: string,
  pad: boolean
): void => {
  if (!pad) out.push({ start, end: segmentEnd, text })
  else if (segmentEnd === windowEnd) out.push({ start, end: windowEnd, text })
  else out.push({ start, end: windowEnd, text: text + "\u0000".repeat(windowEnd - segmentEnd) })
}

/**
 * The windows `chunkDoc` makes, as plain values for hot paths: same offsets (code points), same texts (padding
 * included). A body without surrogates is sliced directly, its code points being its UTF-16 units; otherwise one pass
 * walks the body by UTF-16 index while counting code points, as `Array.from` does (a lone surrogate counts as one).
 */
export const chunkSpans = (
  body: string,
  config: ChunkerConfig,
  sections?: ReadonlyArray<number>
): ReadonlyArray<Span> => {
  const strategy = config.strategy ?? "fixed"
  if (strategy !== "fixed") return boundarySpans(body, config.chunkSize, config.overlap, strategy, sections ?? [])
  const { chunkSize, overlap, tailPolicy } = config
  const step = chunkSize - overlap
  const pad = tailPolicy === "pad"
  const out: Array<Span> = []
  if (!surrogate.test(body)) {
    const n = body.length
    for (let start = 0; start < n; start += step) {
      const windowEnd = start + chunkSize
      if (windowEnd > n && tailPolicy === "drop") break
      const segmentEnd = Math.min(windowEnd, n)
      pushSpan(out, start, segmentEnd, windowEnd, body.slice(start, segmentEnd), pad)
    }
    return out
  }
  let n = 0
  for (let i = 0; i < body.length; i = nextCodePoint(body, i)) n++
  // Two cursors, each a code point and its UTF-16 index; both only move forward, so the walk is linear.
  let startPoint = 0
  let startUnit = 0
  let endPoint = 0
  let endUnit = 0
  for (let start = 0; start < n; start += step) {
    const windowEnd = start + chunkSize
    if (windowEnd > n && tailPolicy === "drop") break
    const segmentEnd = Math.min(windowEnd, n)
    for (; startPoint < start; startPoint++) startUnit = nextCodePoint(body, startUnit)
    for (; endPoint < segmentEnd; endPoint++) endUnit = nextCodePoint(body, endUnit)
    pushSpan(out, start, segmentEnd, windowEnd, body.slice(startUnit, endUnit), pad)
  }
  return out
}

/** Ends a sentence: `.`, `!`, `?` and their full-width forms, `…`. */
const SENTENCE_END = new Set([0x2e, 0x21, 0x3f, 0x3002, 0xff01, 0xff1f, 0x2026])
/** May follow a sentence's end before the space: closing quotes and brackets. */
const CLOSING = new Set([0x22, 0x27, 0x29, 0x5d, 0x2019, 0x201d, 0xbb])

/**
 * Windows that end at a boundary, over the UTF-16 units of `body`: each starts at a word, takes at most `size` code
 * points, and ends at the last boundary of the strategy's kind in its second half (for `sentences` and `markdown` a
 * sentence end, else a space), at the window's end when there is none, and never past the next section start (units,
 * from `sections`). Consecutive windows share about `overlap` code points, cut back to a word's start.
 */
const boundarySpans = (
  body: string,
  size: number,
  overlap: number,
  strategy: Exclude<ChunkStrategy, "fixed">,
  sections: ReadonlyArray<number>
): ReadonlyArray<Span> => {
  // Code point offsets of units: needed only when the body holds surrogate pairs.
  const astral = surrogate.test(body)
  const pointOf = astral ? codePointOffsets(body) : undefined
  const n = body.length
  /** The unit `count` code points after `from`, at most `limit`. */
  const advance = (from: number, count: number, limit: number): number => {
    if (!astral) return Math.min(limit, from + count)
    let at = from
    for (let k = 0; k < count && at < limit; k++) at = nextCodePoint(body, at)
    return Math.min(at, limit)
  }
  const space = (i: number) => isWhitespaceUnit(body.charCodeAt(i))
  const sentenceEndsAt = (cut: number): boolean => {
    if (cut < n && !space(cut)) return false
    let k = cut - 1
    while (k > 0 && CLOSING.has(body.charCodeAt(k))) k--
    return SENTENCE_END.has(body.charCodeAt(k))
  }
  const out: Array<Span> = []
  let section = 0
  let start = 0
  while (start < n && space(start)) start++
  while (start < n) {
    while (section < sections.length && sections[section]! <= start) section++
    const limit = section < sections.length ? sections[section]! : n
    const hard = advance(start, size, limit)
    let end = hard
    if (hard < limit && !space(hard) && !space(hard - 1)) {
      // The window ends inside a word: look back, over its second half, for the best place to end.
      const floor = advance(start, Math.ceil(size / 2), hard)
      let word = -1
      let sentence = -1
      for (let cut = hard; cut >= floor; cut--) {
        if (word < 0 && space(cut)) word = cut
        if (strategy !== "words" && sentenceEndsAt(cut)) {
          sentence = cut
          break
        }
        if (strategy === "words" && word >= 0) break
      }
      end = sentence >= 0 ? sentence : word >= 0 ? word : hard
    } else if (strategy !== "words" && hard < limit) {
      // It ends at a space: a sentence end in its second half is still the better place.
      const floor = advance(start, Math.ceil(size / 2), hard)
      for (let cut = hard; cut >= floor; cut--) {
        if (sentenceEndsAt(cut)) {
          end = cut
          break
        }
      }
    }
    let last = end
    while (last > start && space(last - 1)) last--
    out.push({
      start: pointOf === undefined ? start : pointOf[start]!,
      end: pointOf === undefined ? last : pointOf[last]!,
      text: body.slice(start, last)
    })
    // The next window starts `overlap` code points before this one's end, at the start of a word, but at least
    // `size - overlap` after this one's start (a chunk that ended early would otherwise step back over most of itself),
    // and never after this one's end, which would leave text out.
    let next = end
    if (overlap > 0 && end < limit) {
      next = Math.min(end, Math.max(start + 1, backward(body, end, overlap), advance(start, size - overlap, end)))
      while (next < end && !space(next - 1)) next++
    }
    while (next < n && space(next)) next++
    start = next
  }
  return out
}

/** The unit `count` code points before `from` (at least 0). */
const backward = (body: string, from: number, count: number): number => {
  let at = from
  for (let k = 0; k < count && at > 0; k++) {
    at--
    if (at > 0 && (body.charCodeAt(at) & 0xfc00) === 0xdc00 && (body.charCodeAt(at - 1) & 0xfc00) === 0xd800) at--
  }
  return at
}

/** Each UTF-16 index's code point offset (and the body's length in code points at index `length`). */
const codePointOffsets = (body: string): Uint32Array => {
  const offsets = new Uint32Array(body.length + 1)
  let point = 0
  for (let i = 0; i < body.length; ) {
    const next = nextCodePoint(body, i)
    for (let k = i; k < next; k++) offsets[k] = point
    point++
    i = next
  }
  offsets[body.length] = point
  return offsets
}

/**
 * Where the sections of a document start in its cleaned text (UTF-16 units), for the `markdown` chunker: its headings
 * as written, mapped through the clean rules.
 */
export const sectionStarts = (original: string, cleaner: Pick<CleanerConfig, "rules">): ReadonlyArray<number> => {
  const headings = headingStarts(original)
  if (headings.length === 0) return headings
  const { from } = cleanAligned(original, cleaner)
  // The first cleaned unit that comes from the heading's line or after it (`from` never decreases).
  return headings.map((at) => countBelow(from, at))
}

/**
 * The spans of a document whose body as written is `original` and cleaned is `cleaned`, as `config` cuts them; the
 * `markdown` chunker keeps to the sections of a Markdown file (by its `source`'s extension), and cuts any other
 * document as `sentences` does.
 */
export const chunkBody = (
  original: string,
  cleaned: string,
  config: ChunkerConfig,
  cleaner: Pick<CleanerConfig, "rules">,
  source = ""
): ReadonlyArray<Span> =>
  chunkSpans(
    cleaned,
    config,
    config.strategy === "markdown" && markupOf(source) === "markdown" ? sectionStarts(original, cleaner) : undefined
  )

/**
 * Splits the body into windows of `chunkSize` code points starting every `chunkSize - overlap` code points.
 * A window that would run past the end is the tail: `emit_short` keeps it as is, `drop` stops before it, and `pad`
 * fills it with U+0000 to full length (its `end` is then `start + chunkSize`, past the body). An empty body yields no
 * chunks. Offsets count code points, so an emoji is one position, as in the reference.
 */
export const chunkDoc = (
  doc: CleanDoc,
  config: ChunkerConfig = ChunkerConfig.default,
  sections?: ReadonlyArray<number>
): ReadonlyArray<ChunkDraft> =>
  chunkSpans(doc.body, config, sections).map(
    (span) =>
      new ChunkDraft({ docId: doc.docId, start: Offset.make(span.start), end: Offset.make(span.end), text: span.text })
  )
