/** The chunk stage: fixed windows of code points over a cleaned body, with the reference's tail policies. */
import { ChunkDraft, Offset } from "@funcpipe/domain/Chunk"
import { ChunkerConfig } from "@funcpipe/domain/Config"
import type { CleanDoc } from "@funcpipe/domain/Document"

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
export const chunkSpans = (body: string, config: ChunkerConfig): ReadonlyArray<Span> => {
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

/**
 * Splits the body into windows of `chunkSize` code points starting every `chunkSize - overlap` code points.
 * A window that would run past the end is the tail: `emit_short` keeps it as is, `drop` stops before it, and `pad`
 * fills it with U+0000 to full length (its `end` is then `start + chunkSize`, past the body). An empty body yields no
 * chunks. Offsets count code points, so an emoji is one position, as in the reference.
 */
export const chunkDoc = (doc: CleanDoc, config: ChunkerConfig = ChunkerConfig.default): ReadonlyArray<ChunkDraft> =>
  chunkSpans(doc.body, config).map(
    (span) =>
      new ChunkDraft({ docId: doc.docId, start: Offset.make(span.start), end: Offset.make(span.end), text: span.text })
  )
