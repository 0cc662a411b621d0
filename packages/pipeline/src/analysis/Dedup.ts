/** Structural de-duplication of chunks, as the reference does it. */
import type { ChunkDraft } from "@funcpipe/domain/Chunk"
import { compareCodePoints } from "@funcpipe/domain/Ranking"

/**
 * Stable-sorts by (doc id, start), doc ids by code point, and keeps the first chunk of each
 * (doc id, text, start, end). Works for drafts and embedded chunks alike.
 */
export const dedupChunks = <C extends ChunkDraft>(chunks: ReadonlyArray<C>): ReadonlyArray<C> => {
  const sorted = [...chunks].sort((a, b) => compareCodePoints(a.docId, b.docId) || a.start - b.start)
  const seen = new Set<string>()
  return sorted.filter((chunk) => {
    const key = JSON.stringify([chunk.docId, chunk.text, chunk.start, chunk.end])
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}
