/** How results, chunks and run summaries are shown to people and to programs. */
import { answerJson, type AnswerView as ApiAnswerView, manifestJson } from "@funcpipe/domain/Api"
import type { Chunk } from "@funcpipe/domain/Chunk"
import type { ScoredChunk } from "@funcpipe/domain/Ranking"
import type { Explanation } from "@funcpipe/pipeline/programs/QueryIndex"
import type { IndexManifest } from "@funcpipe/domain/Manifest"
import type { RunSummary, Skip } from "@funcpipe/pipeline/programs/Ingest"
import type { IndexReport } from "@funcpipe/pipeline/programs/IndexRun"
import type { FileChange } from "@funcpipe/pipeline/programs/IndexStatus"

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/** The run summary for stderr: one line of counts, then one line per skipped record. */
export const summaryLines = (summary: RunSummary): ReadonlyArray<string> => [
  `read ${plural(summary.read, "record")}: ${summary.kept} kept, ${summary.skipped.length} skipped; ` +
  `${plural(summary.chunks, "chunk")} (${seconds(summary.elapsedMillis)})`,
  ...skipLines(summary.skipped)
]

const seconds = (millis: number) => `${(millis / 1000).toFixed(1)} s`

/** One stderr line per skipped record, with file and line where known. */
export const skipLines = (skipped: ReadonlyArray<Skip>): ReadonlyArray<string> =>
  skipped.map((s) => `  skipped ${s.line > 0 ? `${s.source}:${s.line}` : s.source}: ${s.reason}`)

/** The result of `funcpipe index`: the plan counts and what the index holds now; a dry run lists what would go. */
export const indexReportLines = (report: IndexReport, location: string): ReadonlyArray<string> => {
  const { added, deleted, unchanged, updated } = report.plan
  const counts = `added ${added.length}, updated ${updated.length}, unchanged ${unchanged.length}, deleted ${deleted.length}`
  if (!report.dryRun) {
    return [
      `${counts}; ${plural(report.chunksWritten, "chunk")} written; ${location} holds ` +
      `${plural(report.documents, "document")} and ${plural(report.chunks, "chunk")}` +
      `${report.rebuilt ? " (rebuilt)" : ""} (${seconds(report.elapsedMillis)})`
    ]
  }
  return [
    `dry run, nothing written: would have ${counts}; ${location} holds ${plural(report.documents, "document")} and ` +
    `${plural(report.chunks, "chunk")} now`,
    ...deleted.map((docId) => `  would delete ${docId}`),
    ...(report.pruneNeeded === undefined
      ? []
      : [`the deletions need --prune (${report.pruneNeeded}); without it the run changes nothing`])
  ]
}

/** The `--json` form of `funcpipe index`. */
export const indexReportJson = (report: IndexReport, location: string): string =>
  JSON.stringify({
    index: location,
    dry_run: report.dryRun,
    rebuilt: report.rebuilt,
    added: report.plan.added.length,
    updated: report.plan.updated.length,
    unchanged: report.plan.unchanged.length,
    deleted: report.plan.deleted.length,
    chunks_written: report.chunksWritten,
    documents: report.documents,
    chunks: report.chunks,
    deleted_ids: report.plan.deleted,
    prune_needed: report.pruneNeeded ?? null,
    skipped: report.skipped.map((s) => ({ source: s.source, line: s.line, reason: s.reason }))
  })

/** The status of an index, as returned by `indexStatus`. */
export interface StatusView {
  readonly location: string
  readonly manifest: IndexManifest
  readonly roots: ReadonlyArray<string>
  readonly documents: number
  readonly changed: ReadonlyArray<FileChange>
  readonly unreadable: ReadonlyArray<string>
}

const iso = (millis: number) => new Date(millis).toISOString()

const changeLine = (c: FileChange) =>
  `  ${c.source}: ${[c.added && `${c.added} new`, c.updated && `${c.updated} changed`, c.deleted && `${c.deleted} gone`]
    .filter(Boolean).join(", ")}`

/** `funcpipe status` for people. */
export const statusLines = (s: StatusView): ReadonlyArray<string> => [
  `index      ${s.location}`,
  `format     ${s.manifest.formatVersion}`,
  `model      ${s.manifest.model} (${s.manifest.dimensions} dimensions)`,
  `cleaning   ${s.manifest.cleaner.rules.join(", ") || "(none)"}`,
  `chunking   size ${s.manifest.chunker.chunkSize}, overlap ${s.manifest.chunker.overlap}, tail ${s.manifest.chunker.tailPolicy}`,
  `analyzer   stop words ${s.manifest.analyzer.stopWords}, stemmer ${s.manifest.analyzer.stemmer}`,
  `created    ${iso(s.manifest.createdAt)}`,
  `updated    ${iso(s.manifest.updatedAt)}`,
  `documents  ${s.documents}`,
  `chunks     ${s.manifest.chunks}`,
  `paths      ${s.roots.join(", ")}`,
  ...(s.changed.length === 0 && s.unreadable.length === 0
    ? ["changed    nothing since the last index run"]
    : [`changed    ${plural(s.changed.length, "file")} since the last index run (run funcpipe index again to update):`,
      ...s.changed.map(changeLine),
      ...s.unreadable.map((u) => `  ${u}`)])
]

/** `funcpipe status --json`. */
export const statusJson = (s: StatusView): string =>
  JSON.stringify({
    index: s.location,
    ...manifestJson(s.manifest),
    documents: s.documents,
    paths: s.roots,
    changed: s.changed,
    unreadable: s.unreadable
  })

/** Shows a chunk's text on one line: line breaks and tabs as escapes, long texts cut at 160 code points. */
const oneLine = (text: string): string => {
  const points = Array.from(text.replace(/\r/g, "\\r").replace(/\n/g, "\\n").replace(/\t/g, "\\t"))
  return points.length > 160 ? `${points.slice(0, 159).join("")}…` : points.join("")
}

/** A query's answer, as `queryIndex` and `searchPaths` return it. */
export type AnswerView = ApiAnswerView & {
  readonly results: ReadonlyArray<ScoredChunk>
  readonly explanations: ReadonlyArray<Explanation> | undefined
}

const num = (x: number) => Number(x.toPrecision(6)).toString()

/** An explanation on indented lines under its result. */
const explainLines = (e: Explanation): ReadonlyArray<string> => [
  ...(e.bm25 === null ? [] : [
    `     bm25 ${num(e.bm25.score)}` + (e.bm25.terms.length === 0 ? " (no query terms)" : ` = ${
      e.bm25.terms.map((t) => `${t.term} ${num(t.score)} (tf ${t.tf}, df ${t.df}, idf ${num(t.idf)})`).join(" + ")
    }`)
  ]),
  ...(e.cosine === null ? [] : [`     cosine ${num(e.cosine)}`]),
  ...(e.vectorRank === null && e.lexicalRank === null ? [] : [
    `     fused from vector rank ${e.vectorRank ?? "-"} and lexical rank ${e.lexicalRank ?? "-"} (1/(60 + rank) each)`
  ])
]

/** Human-readable results: rank, score, doc id, span and text, one result per line (plus explanations). */
export const resultLines = (answer: AnswerView): ReadonlyArray<string> =>
  answer.results.length === 0
    ? [`no results in ${answer.query.mode} mode`]
    : answer.results.flatMap((r, i) => [
      `${r.rank}. ${r.score.toFixed(6)}  ${r.chunk.docId}  [${r.chunk.start}, ${r.chunk.end})  ${oneLine(r.chunk.text)}`,
      ...(answer.explanations?.[i] === undefined ? [] : explainLines(answer.explanations[i]))
    ])

/** The `--json` form of an answer: the HTTP API's answer shape, stable keys, documented in the README. */
export const resultsJson = (answer: AnswerView): string => JSON.stringify(answerJson(answer))

/** The one-line summary of an in-memory search's indexing, for stderr. */
export const searchSummaryLine = (report: IndexReport): string =>
  `indexed ${plural(report.documents, "document")} into ${plural(report.chunks, "chunk")} in memory, ` +
  `${report.skipped.length} skipped (${seconds(report.elapsedMillis)})`

/** One JSON object per chunk with the reference's field names, in pipeline order; ends with a newline if non-empty. */
export const chunksJsonl = (chunks: ReadonlyArray<Chunk>): string =>
  chunks.map((c) =>
    JSON.stringify({ doc_id: c.docId, start: c.start, end: c.end, text: c.text, embedding: c.embedding.vector }) + "\n"
  ).join("")
