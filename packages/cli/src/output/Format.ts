/** How results, chunks and run summaries are shown to people and to programs. */
import {
  type AnswerExplanation,
  type AnswerView,
  answerJson,
  manifestJson,
  type ShownChunk
} from "@funcpipe/domain/Answer"
import type { Chunk } from "@funcpipe/domain/Chunk"
import { type IndexManifest, keepsOriginals, vectorStorageOf } from "@funcpipe/domain/Manifest"
import { isKeepAll, printRule } from "@funcpipe/domain/Rule"
import { cutPassage } from "@funcpipe/pipeline/analysis/Passage"
import type { IndexReport } from "@funcpipe/pipeline/programs/IndexRun"
import type { FileChange } from "@funcpipe/pipeline/programs/IndexStatus"
import type { RunSummary, Skip } from "@funcpipe/pipeline/programs/Ingest"
import type { WatchRun } from "@funcpipe/pipeline/programs/Watch"
import { Schema } from "effect"
import type { ResultView } from "./Terminal.ts"

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/** The run summary for stderr: one line of counts, then one line per skipped record. */
export const summaryLines = (summary: RunSummary): ReadonlyArray<string> => [
  `read ${plural(summary.read, "record")}: ${summary.kept} kept, ` +
    `${summary.dropped === undefined ? "" : `${summary.dropped} dropped by keep rule, `}` +
    `${summary.skipped.length} skipped; ` +
    `${plural(summary.chunks, "chunk")} (${seconds(summary.elapsedMillis)})`,
  ...skipLines(summary.skipped)
]

const seconds = (millis: number) => `${(millis / 1000).toFixed(1)} s`

/** One stderr line per skipped record, with file and line where known. */
export const skipLines = (skipped: ReadonlyArray<Skip>): ReadonlyArray<string> =>
  skipped.map((s) => `  skipped ${s.line > 0 ? `${s.source}:${s.line}` : s.source}: ${s.reason}`)

/** What the keep rule did, when there is one (or was one): the rule, documents kept and dropped, and a change. */
const keepLines = (report: IndexReport): ReadonlyArray<string> => {
  if (isKeepAll(report.keep) && report.keepChanged === undefined) return []
  const { added, unchanged, updated } = report.plan
  return [
    `keep rule ${printRule(report.keep)}: kept ${added.length + updated.length + unchanged.length}, dropped by keep ` +
      `rule ${report.dropped}${report.keepChanged === undefined ? "" : ` (the rule was ${report.keepChanged.from})`}`
  ]
}

const planCounts = ({ plan: { added, deleted, unchanged, updated } }: IndexReport): string =>
  `added ${added.length}, updated ${updated.length}, unchanged ${unchanged.length}, deleted ${deleted.length}`

/** What a run that wrote did: the plan counts, the chunks written, what the index holds now, and how long it took. */
const runLine = (report: IndexReport, location: string): string =>
  `${planCounts(report)}; ${plural(report.chunksWritten, "chunk")} written; ${location} holds ` +
  `${plural(report.documents, "document")} and ${plural(report.chunks, "chunk")}` +
  `${report.rebuilt ? " (rebuilt)" : ""} (${seconds(report.elapsedMillis)})`

/** The result of `funcpipe index`: the plan counts and what the index holds now; a dry run lists what would go. */
export const indexReportLines = (report: IndexReport, location: string): ReadonlyArray<string> => {
  const { deleted } = report.plan
  const counts = planCounts(report)
  if (!report.dryRun) return [...keepLines(report), runLine(report, location)]
  return [
    ...keepLines(report),
    `dry run, nothing written: would have ${counts}; ${location} holds ${plural(report.documents, "document")} and ` +
      `${plural(report.chunks, "chunk")} now`,
    ...deleted.map((docId) => `  would delete ${docId}`),
    ...(report.pruneNeeded === undefined
      ? []
      : [`the deletions need --prune (${report.pruneNeeded}); without it the run changes nothing`])
  ]
}

/**
 * The line of one run of `funcpipe index --watch` for stderr: what it did, as `index` says it, or why it changed
 * nothing and what the watch waits for.
 */
export const watchRunLine = (run: WatchRun, location: string): string =>
  run._tag === "Indexed"
    ? `watch: ${runLine(run.report, location)}`
    : `watch: run failed, nothing changed: ${run.error.message}; ` +
      (run.retryMillis === undefined ? "waiting for changes" : `trying again in ${seconds(run.retryMillis)}`)

/** The line after the first run of `funcpipe index --watch`: what is watched, and how to stop. */
export const watchingLine = (paths: number, folders: number): string =>
  `watch: watching ${plural(paths, "path")}${folders > 0 ? ` (${plural(folders, "folder")})` : ""} for changes; ` +
  "stop with Ctrl-C"

const count = (n: number) => n.toLocaleString("en-US")

/**
 * What embedding cost, for a model that calls a service (one that made requests): "embedded 1,234 chunks with
 * openai:text-embedding-3-small: 17 requests, 45,678 tokens". Undefined for a local model.
 */
export const embedUsageLine = (
  chunks: number,
  usage: { readonly model: string; readonly requests: number; readonly inputTokens: number | undefined }
): string | undefined =>
  usage.requests === 0
    ? undefined
    : `embedded ${count(chunks)} chunk${chunks === 1 ? "" : "s"} with ${usage.model}: ` +
      `${count(usage.requests)} request${usage.requests === 1 ? "" : "s"}, ` +
      (usage.inputTokens === undefined ? "tokens not reported by the service" : `${count(usage.inputTokens)} tokens`)

/** A record that was skipped, in JSON: its file, its line (0 for a whole file) and why. */
const SkipJson = Schema.Struct({ source: Schema.String, line: Schema.Int, reason: Schema.String })

/** The `--json` output of `funcpipe index`: the keys docs/cli.md documents, checked when encoded. */
export const IndexReportJson = Schema.Struct({
  index: Schema.String,
  dry_run: Schema.Boolean,
  rebuilt: Schema.Boolean,
  added: Schema.Int,
  updated: Schema.Int,
  unchanged: Schema.Int,
  deleted: Schema.Int,
  chunks_written: Schema.Int,
  documents: Schema.Int,
  chunks: Schema.Int,
  deleted_ids: Schema.Array(Schema.String),
  prune_needed: Schema.NullOr(Schema.String),
  keep: Schema.NullOr(Schema.String),
  dropped_by_keep: Schema.Int,
  skipped: Schema.Array(SkipJson),
  seconds: Schema.Finite
})

/** What `search --json` adds to the answer: the records its in-memory indexing skipped, and how long it took. */
export const SearchRunJson = Schema.Struct({ skipped: Schema.Array(SkipJson), seconds: Schema.Finite })

const encodeIndexReport = Schema.encodeSync(IndexReportJson)
const encodeSearchRun = Schema.encodeSync(SearchRunJson)

/** The `--json` form of `funcpipe index`. */
export const indexReportJson = (report: IndexReport, location: string): string =>
  JSON.stringify(
    encodeIndexReport({
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
      keep: isKeepAll(report.keep) ? null : printRule(report.keep),
      dropped_by_keep: report.dropped,
      skipped: report.skipped.map((s) => ({ source: s.source, line: s.line, reason: s.reason })),
      seconds: report.elapsedMillis / 1000
    })
  )

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
    .filter(Boolean)
    .join(", ")}`

/** How the index stores and searches vectors, for people. */
const vectorLine = (m: IndexManifest): string =>
  `${vectorStorageOf(m) === "float32" ? "stored as float32" : "stored exactly"}, ${m.ann === undefined ? "every one scanned" : `approximate (hnsw, m ${m.ann.m}, efConstruction ${m.ann.efConstruction}, walked over ${m.ann.codes ?? "float32"} rows)`}`

/** `funcpipe status` for people. */
export const statusLines = (s: StatusView): ReadonlyArray<string> => [
  `index      ${s.location}`,
  `format     ${s.manifest.formatVersion}${keepsOriginals(s.manifest.formatVersion) ? "" : " (keeps only the cleaned text, so results show it; funcpipe index --rebuild keeps the text as written)"}`,
  `model      ${s.manifest.model} (${s.manifest.dimensions} dimensions)`,
  `vectors    ${vectorLine(s.manifest)}`,
  `cleaning   ${s.manifest.cleaner.rules.join(", ") || "(none)"}`,
  `chunking   ${s.manifest.chunker.strategy ?? "fixed"}, size ${s.manifest.chunker.chunkSize}, overlap ${s.manifest.chunker.overlap}, tail ${s.manifest.chunker.tailPolicy}`,
  `analyzer   stop words ${s.manifest.analyzer.stopWords}, stemmer ${s.manifest.analyzer.stemmer}, version ${s.manifest.analyzer.version ?? 1}`,
  ...(s.manifest.keep === undefined ? [] : [`keep       ${printRule(s.manifest.keep)}`]),
  `created    ${iso(s.manifest.createdAt)}`,
  `updated    ${iso(s.manifest.updatedAt)}`,
  `documents  ${s.documents}`,
  `chunks     ${s.manifest.chunks}`,
  `paths      ${s.roots.join(", ")}`,
  ...(s.changed.length === 0 && s.unreadable.length === 0
    ? ["changed    nothing since the last index run"]
    : [
        `changed    ${plural(s.changed.length, "file")} since the last index run (run funcpipe index again to update):`,
        ...s.changed.map(changeLine),
        ...s.unreadable.map((u) => `  ${u}`)
      ])
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

const BOLD = "\u001b[1m"
const NORMAL = "\u001b[22m"

/** How many code points of a passage a plain (not terminal) result line shows. */
const PLAIN_WIDTH = 160

/**
 * A passage for one line with `room` columns: the part of `text` that shows the most of its matched `spans` (code
 * points), cut at word boundaries, `…` where text is left out, matched words in bold if asked.
 */
const passageLine = (
  text: string,
  spans: ReadonlyArray<readonly [number, number]>,
  room: number,
  bold: boolean
): string => {
  const cut = cutPassage(text, spans, Math.max(20, room - 2))
  if (!bold) return cut.text
  const points = Array.from(cut.text)
  let out = ""
  let at = 0
  for (const [start, end] of cut.spans) {
    out += `${points.slice(at, start).join("")}${BOLD}${points.slice(start, end).join("")}${NORMAL}`
    at = end
  }
  return out + points.slice(at).join("")
}

const num = (x: number) => Number(x.toPrecision(6)).toString()

/** An explanation on indented lines under its result. */
const explainLines = (e: AnswerExplanation): ReadonlyArray<string> => [
  ...(e.bm25 === null
    ? []
    : [
        `     bm25 ${num(e.bm25.score)}` +
          (e.bm25.terms.length === 0
            ? " (no query terms)"
            : ` = ${e.bm25.terms
                .map((t) => `${t.term} ${num(t.score)} (tf ${t.tf}, df ${t.df}, idf ${num(t.idf)})`)
                .join(" + ")}`)
      ]),
  ...(e.cosine === null ? [] : [`     cosine ${num(e.cosine)}`]),
  ...(e.fusion === null
    ? []
    : [
        `     fused ${e.fusion.method} (alpha ${e.fusion.alpha}): lexical rank ${e.lexicalRank ?? "-"} adds ` +
          `${num(e.fusion.lexical)}, vector rank ${e.vectorRank ?? "-"} adds ${num(e.fusion.vector)}`
      ])
]

/** Why there are no results, when the query itself explains it. */
const noResultsLine = (query: AnswerView["query"]): string =>
  query.stopWordsOnly
    ? `no results in ${query.mode} mode: every word of the query is a stop word (such as "the" or "of"), and ` +
      `lexical search leaves stop words out (see --stop-words)`
    : `no results in ${query.mode} mode`

/** The title shown after a doc id: quoted, shortened, and left out when it says nothing more than the id. */
const titleOf = (answer: AnswerView, docId: string): string => {
  const title = oneLine(answer.titles.get(docId) ?? "").trim()
  if (title === "" || title === docId || docId.endsWith(`/${title}`)) return ""
  const points = [...title]
  return ` "${points.length > 60 ? `${points.slice(0, 59).join("")}…` : title}"`
}

/** With results grouped by document: how many more of the document's chunks matched, on an indented line. */
const moreLines = (more: number | undefined): ReadonlyArray<string> =>
  more === undefined || more === 0 ? [] : [`     also in this document: ${plural(more, "more passage")}`]

/** A heading or title without the Markdown marks a title may keep (`` `RefCell<T>` ``), to compare the two. */
const unmarked = (text: string | undefined) => text?.replace(/[`*_]/g, "").trim()

/**
 * Where in its document a result's chunk starts, on an indented line: the page (`p. 12`, a PDF) and the headings it
 * is under; none for a document without either, or when the one heading is the title already shown.
 */
const sectionLines = (shown: ShownChunk | undefined, title: string | undefined): ReadonlyArray<string> => {
  const section = shown?.section ?? []
  const headings =
    section.length === 0 || (section.length === 1 && unmarked(section[0]) === unmarked(title))
      ? undefined
      : `in ${section.map((h) => oneLine(h)).join(" › ")}`
  const page = shown?.page === undefined ? undefined : `p. ${shown.page}`
  const where = [page, headings].filter((part) => part !== undefined)
  return where.length === 0 ? [] : [`     ${where.join(", ")}`]
}

/**
 * Human-readable results: rank, score, doc id, title and span, then the passage, on one line per result (plus the
 * headings it is under and explanations). The passage is the chunk as the document has it, cut around the matches: to
 * the terminal's width with the matches in bold on a terminal, to 160 characters otherwise. With `raw`, the chunk's
 * cleaned text instead (on plain output whole up to 160 characters, line breaks escaped, as indexed).
 */
export const resultLines = (answer: AnswerView, view: ResultView): ReadonlyArray<string> =>
  answer.results.length === 0
    ? [noResultsLine(answer.query)]
    : answer.results.flatMap((r, i) => {
        const head = `${r.rank}. ${r.score.toFixed(6)}  ${r.chunk.docId}${titleOf(answer, r.chunk.docId)}  [${r.chunk.start}, ${r.chunk.end})  `
        const text =
          view.raw && view.style === undefined
            ? oneLine(r.chunk.text)
            : passageLine(
                view.texts[i] ?? "",
                view.spans[i] ?? [],
                view.style === undefined ? PLAIN_WIDTH + 2 : view.style.columns - Array.from(head).length,
                view.style?.bold ?? false
              )
        return [
          `${head}${text}`,
          ...(view.raw ? [] : sectionLines(answer.shown?.[i], answer.titles.get(r.chunk.docId))),
          ...moreLines(answer.more?.[i]),
          ...(answer.explanations?.[i] === undefined ? [] : explainLines(answer.explanations[i]))
        ]
      })

/** The `--json` form of an answer: the HTTP API's answer shape, stable keys, documented in docs/cli.md. */
export const resultsJson = (answer: AnswerView): string => JSON.stringify(answerJson(answer))

/** `search --json`: the answer's keys, then the skipped records and the seconds of the in-memory indexing. */
export const searchJson = (answer: AnswerView, report: IndexReport): string =>
  JSON.stringify({
    ...answerJson(answer),
    ...encodeSearchRun({
      skipped: report.skipped.map((s) => ({ source: s.source, line: s.line, reason: s.reason })),
      seconds: report.elapsedMillis / 1000
    })
  })

/** The one-line summary of an in-memory search's indexing, for stderr. */
export const searchSummaryLine = (report: IndexReport): string =>
  `indexed ${plural(report.documents, "document")} into ${plural(report.chunks, "chunk")} in memory, ` +
  `${isKeepAll(report.keep) ? "" : `${report.dropped} dropped by keep rule, `}${report.skipped.length} skipped ` +
  `(${seconds(report.elapsedMillis)})`

/** One JSON object per chunk with the reference's field names, in pipeline order; ends with a newline if non-empty. */
export const chunksJsonl = (chunks: ReadonlyArray<Chunk>): string =>
  chunks
    .map(
      (c) =>
        JSON.stringify({ doc_id: c.docId, start: c.start, end: c.end, text: c.text, embedding: c.embedding.vector }) +
        "\n"
    )
    .join("")
