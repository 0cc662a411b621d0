/**
 * The shapes of answers: the JSON that `funcpipe query --json`, `status --json` and the HTTP API print, as schemas,
 * and the functions that build them from the programs' results. The HTTP contract (`http/Api.ts`) imports these;
 * they import no HTTP module, so the CLI prints answers without loading one.
 */

import { Schema } from "effect"
import { FusionMethod, ResultGroup, RetrievalMode } from "./Config.ts"
import { type IndexManifest, vectorStorageOf } from "./Manifest.ts"
import { isKeepAll, printRule } from "./Rule.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** One term's share of a BM25 score. */
export const TermScore = Schema.Struct({
  term: Schema.String,
  tf: Count,
  df: Count,
  idf: Schema.Finite,
  score: Schema.Finite
}).annotate({ identifier: "TermScore" })

/** Why a result scored what it did, as far as its mode used each part (`null` for a part it did not use). */
export const Explanation = Schema.Struct({
  cosine: Schema.NullOr(Schema.Finite),
  bm25: Schema.NullOr(Schema.Struct({ score: Schema.Finite, terms: Schema.Array(TermScore) })),
  vector_rank: Schema.NullOr(Schema.Int),
  lexical_rank: Schema.NullOr(Schema.Int),
  fusion: Schema.NullOr(
    Schema.Struct({
      method: FusionMethod,
      alpha: Schema.Finite,
      lexical: Schema.Finite,
      vector: Schema.Finite
    })
  ).annotate({ description: "In hybrid mode, what each ranking added to the fused score" })
}).annotate({ identifier: "Explanation" })
export type Explanation = typeof Explanation.Type

/** A span `[start, end)` of a text, in code points. */
export const Span = Schema.Tuple([Count, Count])

/** One ranked chunk. */
export const QueryResult = Schema.Struct({
  rank: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  score: Schema.Finite.annotate({ description: "cosine in [-1, 1], BM25 above 0, fused in (0, 1]" }),
  doc_id: Schema.String,
  title: Schema.String.annotate({ description: "The document's title (empty when it has none)" }),
  start: Count.annotate({ description: "Where the chunk starts in its document's cleaned text, in code points" }),
  end: Count,
  text: Schema.String.annotate({
    description: "The chunk's cleaned text (what was indexed and what the ranking order compares)"
  }),
  passage: Schema.String.annotate({
    description:
      "The chunk as the document has it: its original text, out to whole words, Markdown and HTML markup removed, " +
      "on one line; cut around the matches (… where left out) when `passage_width` asks"
  }),
  section: Schema.Array(Schema.String).annotate({
    description:
      "The headings the chunk is under, outermost first (Markdown, HTML, Word and EPUB documents; empty otherwise)"
  }),
  source: Schema.String.annotate({
    description: "Where the document was read from: its file, or `api` for documents put through the API"
  }),
  page: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({
      description: "The page the chunk starts on, from 1 (PDF documents only; absent for others)"
    })
  ),
  explain: Schema.optionalKey(Explanation),
  highlights: Schema.optionalKey(
    Schema.Array(Span).annotate({
      description: "Spans of `text` (code points) whose words match the query's terms"
    })
  ),
  passage_highlights: Schema.optionalKey(
    Schema.Array(Span).annotate({
      description: "Spans of `passage` (code points) whose words match the query's terms"
    })
  ),
  more_in_document: Schema.optionalKey(
    Count.annotate({
      description: 'With `group: "doc"`: how many more of this document\'s chunks matched besides the one shown'
    })
  )
}).annotate({ identifier: "QueryResult" })
export type QueryResult = typeof QueryResult.Type

/** A query's answer: the same object `funcpipe query --json` prints. */
export const QueryResponse = Schema.Struct({
  query: Schema.String.annotate({ description: "The query text after cleaning" }),
  top_k: Schema.Int,
  mode: RetrievalMode,
  model: Schema.String,
  group: Schema.optionalKey(
    ResultGroup.annotate({ description: "Present when results are documents (`doc`): one per document" })
  ),
  note: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "Why the query was answered otherwise than asked: a model that finds nothing in the query it can place " +
        "(a number, words it does not know) answers it in lexical mode"
    })
  ),
  results: Schema.Array(QueryResult)
}).annotate({
  identifier: "QueryResponse",
  examples: [
    {
      query: "which probe reached interstellar space?",
      top_k: 1,
      mode: "lexical",
      model: "local-sha256",
      results: [
        {
          rank: 1,
          score: 4.454058,
          doc_id: "voyager-1",
          title: "Voyager 1",
          start: 0,
          end: 90,
          text: "launched in 1977, voyager 1 flew past jupiter and saturn and is now in interstellar space.",
          passage: "Launched in 1977, Voyager 1 flew past Jupiter and Saturn and is now in interstellar space.",
          section: [],
          source: "/home/me/notes/missions.csv"
        }
      ]
    }
  ]
})
export type QueryResponse = typeof QueryResponse.Type

/** The answers of a batch, in the order of its queries. */
export const BatchResponse = Schema.Struct({ answers: Schema.Array(QueryResponse) }).annotate({
  identifier: "BatchResponse"
})

/** An index's settings and counts: the same keys as in `funcpipe status --json`. */
export const ManifestInfo = Schema.Struct({
  format_version: Schema.Int,
  model: Schema.String,
  dimensions: Schema.Int,
  clean_rules: Schema.Array(Schema.String),
  chunk_size: Schema.Int,
  overlap: Schema.Int,
  tail_policy: Schema.String,
  chunker: Schema.String.annotate({ description: "Where chunks end: fixed, words, sentences or markdown" }),
  stop_words: Schema.String,
  stemmer: Schema.String,
  analyzer_version: Schema.Int.annotate({ description: "1, or 2: marks inside words (E[x]tract) joined" }),
  keep: Schema.NullOr(Schema.String).annotate({
    description: "The keep rule the index was built with; null keeps all"
  }),
  ann: Schema.NullOr(
    Schema.Struct({
      kind: Schema.Literal("hnsw"),
      m: Schema.Int,
      ef_construction: Schema.Int,
      codes: Schema.Literals(["float32", "i8"]).annotate({
        description: "The rows the graphs are walked over (index --vector-codes)"
      })
    })
  ).annotate({ description: "The approximate vector index (index --ann hnsw); null: every vector query is exact" }),
  vector_storage: Schema.Literals(["float32", "exact"]).annotate({
    description: "How vectors finer than float32 are stored (index --vector-storage): rounded to float32, or exact"
  }),
  created_at: Schema.String,
  updated_at: Schema.String,
  documents: Count,
  chunks: Count
}).annotate({ identifier: "ManifestInfo" })
export type ManifestInfo = typeof ManifestInfo.Type

/** What the server answers from, and whether its last look at the index file went wrong. */
export const StatusResponse = Schema.Struct({
  index: Schema.String.annotate({ description: "The index file" }),
  ready: Schema.Boolean.annotate({ description: "Whether queries can be answered" }),
  writable: Schema.Boolean,
  link_sources: Schema.Boolean.annotate({
    description: "Whether GET /v1/documents/{id}/text hands out documents' text (serve --link-sources)"
  }),
  ask: Schema.Boolean.annotate({
    description: "Whether POST /v1/ask answers questions: the server was started with a chat model (serve --llm)"
  }),
  manifest: Schema.NullOr(ManifestInfo).annotate({ description: "The index being served; null before there is one" }),
  snapshot_at: Schema.NullOr(Schema.String).annotate({ description: "When the served snapshot was opened (ISO 8601)" }),
  reload_error: Schema.NullOr(Schema.Struct({ at: Schema.String, message: Schema.String })).annotate({
    description: "Why the last attempt to open a newer state of the index failed (the older one is still served)"
  })
}).annotate({ identifier: "StatusResponse" })
export type StatusResponse = typeof StatusResponse.Type

/** A stored document with its chunks in text order. */
export const DocumentResponse = Schema.Struct({
  doc_id: Schema.String,
  title: Schema.String,
  source: Schema.String.annotate({
    description: "The file it was read from, or `api` for documents put through the API"
  }),
  categories: Schema.NullOr(Schema.String),
  hash: Schema.String,
  chunks: Schema.Array(Schema.Struct({ start: Count, end: Count, text: Schema.String }))
}).annotate({ identifier: "DocumentResponse" })

/** A result as the query programs return it: a ranked chunk (a domain `RankedChunk`, or a sharded query's hit). */
export interface AnswerResult {
  readonly chunk: {
    readonly docId: string
    readonly start: number
    readonly end: number
    readonly text: string
  }
  readonly score: number
  readonly rank: number
}

/** The score breakdown as the engine returns it. */
export interface AnswerExplanation {
  readonly cosine: number | null
  readonly bm25: {
    readonly score: number
    readonly terms: ReadonlyArray<{
      readonly term: string
      readonly tf: number
      readonly df: number
      readonly idf: number
      readonly score: number
    }>
  } | null
  readonly vectorRank: number | null
  readonly lexicalRank: number | null
  readonly fusion: {
    readonly method: FusionMethod
    readonly alpha: number
    readonly lexical: number
    readonly vector: number
  } | null
}

/** A query's answer, as `queryIndex`, `queryShards` and `searchPaths` return it. */
export interface AnswerView {
  readonly manifest: { readonly model: string }
  readonly query: {
    readonly text: string
    readonly topK: number
    readonly mode: RetrievalMode
    /** The query has words, but every one is a stop word, so lexical search had nothing to look for. */
    readonly stopWordsOnly: boolean
    /** `doc` when each result stands for a document (absent: each result is a chunk). */
    readonly group?: ResultGroup
    /** Why the query was answered otherwise than asked (e.g. in lexical mode, the model finding nothing in it). */
    readonly note?: string
  }
  readonly results: ReadonlyArray<AnswerResult>
  /** The titles of the results' documents, by doc id. */
  readonly titles: ReadonlyMap<string, string>
  readonly explanations: ReadonlyArray<AnswerExplanation> | undefined
  /** With results grouped by document: how many more of each result's document's chunks matched. */
  readonly more?: ReadonlyArray<number> | undefined
  /** What each result shows of its chunk (absent: its cleaned text, without headings). */
  readonly shown?: ReadonlyArray<ShownChunk> | undefined
}

/** What a result shows of its chunk: the original text of its span, markup removed, and its headings. */
export interface ShownChunk {
  readonly passage: string
  readonly section: ReadonlyArray<string>
  readonly source: string
  /** The page the chunk starts on, in a document that has pages (a PDF). */
  readonly page?: number | undefined
}

/** What an answer's JSON adds for a page: spans of `text` and passages (cut, with their spans) per result. */
export interface AnswerMarks {
  readonly highlights?: ReadonlyArray<ReadonlyArray<readonly [number, number]>> | undefined
  readonly passages?:
    | ReadonlyArray<{ readonly text: string; readonly spans?: ReadonlyArray<readonly [number, number]> | undefined }>
    | undefined
}

/** A padded tail's U+0000s at the end of a chunk's text. */
const PADDING = new RegExp(`${String.fromCharCode(0)}+$`)

/** A result's passage when nothing better is known: its cleaned text on one line, without a padded tail's U+0000s. */
export const plainPassage = (text: string): string => text.replace(PADDING, "").replace(/\s+/g, " ").trim()

const explanationJson = (e: AnswerExplanation): Explanation => ({
  cosine: e.cosine,
  bm25: e.bm25 === null ? null : { score: e.bm25.score, terms: e.bm25.terms },
  vector_rank: e.vectorRank,
  lexical_rank: e.lexicalRank,
  fusion: e.fusion
})

/**
 * The JSON form of an answer (`funcpipe query --json`, `POST /v1/query`): stable keys, documented in docs/cli.md.
 * `marks`, when given, holds each result's highlighted spans and its passage as cut for display.
 */
export const answerJson = (answer: AnswerView, marks: AnswerMarks = {}): QueryResponse => ({
  query: answer.query.text,
  top_k: answer.query.topK,
  mode: answer.query.mode,
  model: answer.manifest.model,
  ...(answer.query.group === "doc" ? { group: "doc" as const } : {}),
  ...(answer.query.note === undefined ? {} : { note: answer.query.note }),
  results: answer.results.map((r, i) => ({
    rank: r.rank,
    score: r.score,
    doc_id: r.chunk.docId,
    title: answer.titles.get(r.chunk.docId) ?? "",
    start: r.chunk.start,
    end: r.chunk.end,
    text: r.chunk.text,
    passage: marks.passages?.[i]?.text ?? answer.shown?.[i]?.passage ?? plainPassage(r.chunk.text),
    section: answer.shown?.[i]?.section ?? [],
    source: answer.shown?.[i]?.source ?? "",
    ...(answer.shown?.[i]?.page === undefined ? {} : { page: answer.shown[i].page }),
    ...(answer.explanations?.[i] === undefined ? {} : { explain: explanationJson(answer.explanations[i]) }),
    ...(marks.highlights?.[i] === undefined ? {} : { highlights: marks.highlights[i] }),
    ...(marks.passages?.[i]?.spans === undefined ? {} : { passage_highlights: marks.passages[i].spans }),
    ...(answer.more?.[i] === undefined ? {} : { more_in_document: answer.more[i] })
  }))
})

const iso = (millis: number) => new Date(millis).toISOString()

/** An index's settings and counts in the JSON of `funcpipe status --json` and `GET /v1/status`. */
export const manifestJson = (m: IndexManifest): ManifestInfo => ({
  format_version: m.formatVersion,
  model: m.model,
  dimensions: m.dimensions,
  clean_rules: m.cleaner.rules,
  chunk_size: m.chunker.chunkSize,
  overlap: m.chunker.overlap,
  tail_policy: m.chunker.tailPolicy,
  chunker: m.chunker.strategy ?? "fixed",
  stop_words: m.analyzer.stopWords,
  stemmer: m.analyzer.stemmer,
  analyzer_version: m.analyzer.version ?? 1,
  keep: m.keep === undefined || isKeepAll(m.keep) ? null : printRule(m.keep),
  ann:
    m.ann === undefined
      ? null
      : { kind: m.ann.kind, m: m.ann.m, ef_construction: m.ann.efConstruction, codes: m.ann.codes ?? "float32" },
  vector_storage: vectorStorageOf(m),
  created_at: iso(m.createdAt),
  updated_at: iso(m.updatedAt),
  documents: m.documents,
  chunks: m.chunks
})
