/** The chunk stage: fixed windows of code points over a cleaned body, with the reference's tail policies. */
import { ChunkDraft, Offset } from "@funcpipe/domain/Chunk"
import { ChunkerConfig } from "@funcpipe/domain/Config"
import type { CleanDoc } from "@funcpipe/domain/Document"

/**
 * Splits the body into windows of `chunkSize` code points starting every `chunkSize - overlap` code points.
 * A window that would run past the end is the tail: `emit_short` keeps it as is, `drop` stops before it, and `pad`
 * fills it with U+0000 to full length (its `end` is then `start + chunkSize`, past the body). An empty body yields no
 * chunks. Offsets count code points, so an emoji is one position, as in the reference.
 */
export const chunkDoc = (doc: CleanDoc, config: ChunkerConfig = ChunkerConfig.default): ReadonlyArray<ChunkDraft> => {
  const points = Array.from(doc.body)
  const n = points.length
  const { chunkSize, overlap, tailPolicy } = config
  const step = chunkSize - overlap
  const out: Array<ChunkDraft> = []
  for (let start = 0; start < n; start += step) {
    const windowEnd = start + chunkSize
    const short = windowEnd > n
    if (short && tailPolicy === "drop") break
    const segmentEnd = Math.min(windowEnd, n)
    let text = points.slice(start, segmentEnd).join("")
    if (short && tailPolicy === "pad") text += "\u0000".repeat(windowEnd - segmentEnd)
    const end = tailPolicy === "pad" ? windowEnd : segmentEnd
    out.push(new ChunkDraft({ docId: doc.docId, start: Offset.make(start), end: Offset.make(end), text }))
  }
  return out
}
