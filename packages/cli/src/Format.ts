/** How results, chunks and run summaries are shown to people and to programs. */
import type { Chunk } from "@funcpipe/domain/Chunk"
import type { SearchQuery } from "@funcpipe/domain/Query"
import type { RankedChunk } from "@funcpipe/domain/Ranking"
import type { RunSummary } from "@funcpipe/pipeline/programs/Ingest"

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/** The run summary for stderr: one line of counts, then one line per skipped record. */
export const summaryLines = (summary: RunSummary): ReadonlyArray<string> => [
  `read ${plural(summary.read, "record")}: ${summary.kept} kept, ${summary.skipped.length} skipped; ` +
  `${plural(summary.chunks, "chunk")} (${(summary.elapsedMillis / 1000).toFixed(1)} s)`,
  ...summary.skipped.map((s) => `  skipped ${s.line > 0 ? `${s.source}:${s.line}` : s.source}: ${s.reason}`)
]

/** Shows a chunk's text on one line: line breaks and tabs as escapes, long texts cut at 160 code points. */
const oneLine = (text: string): string => {
  const points = Array.from(text.replace(/\r/g, "\\r").replace(/\n/g, "\\n").replace(/\t/g, "\\t"))
  return points.length > 160 ? `${points.slice(0, 159).join("")}…` : points.join("")
}

/** Human-readable results: rank, score, doc id, span and text, one result per line. */
export const resultLines = (results: ReadonlyArray<RankedChunk>): ReadonlyArray<string> =>
  results.length === 0
    ? ["no results: nothing was indexed"]
    : results.map((r) =>
      `${r.rank}. ${r.score.toFixed(6)}  ${r.chunk.docId}  [${r.chunk.start}, ${r.chunk.end})  ${oneLine(r.chunk.text)}`
    )

/** The `--json` form of a search: stable keys, documented in the README. */
export const resultsJson = (query: SearchQuery, results: ReadonlyArray<RankedChunk>): string =>
  JSON.stringify({
    query: query.text,
    top_k: query.topK,
    model: query.embedding.model,
    results: results.map((r) => ({
      rank: r.rank,
      score: r.score,
      doc_id: r.chunk.docId,
      start: r.chunk.start,
      end: r.chunk.end,
      text: r.chunk.text
    }))
  })

/** One JSON object per chunk with the reference's field names, in pipeline order; ends with a newline if non-empty. */
export const chunksJsonl = (chunks: ReadonlyArray<Chunk>): string =>
  chunks.map((c) =>
    JSON.stringify({ doc_id: c.docId, start: c.start, end: c.end, text: c.text, embedding: c.embedding.vector }) + "\n"
  ).join("")
