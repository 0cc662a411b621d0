/**
 * The HTTP API of `funcpipe serve` as a contract: endpoints, request and response schemas, and the errors with their
 * status codes. Servers implement it and clients derive a typed client from it (`HttpApiClient.make(FuncPipeApi)`);
 * the JSON shapes are the CLI's `--json` shapes, built by the functions below for both.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Alpha, B, FusionMethod, K1, RetrievalMode } from "../Config.ts"
import { RuleFromText } from "../Rule.ts"
import { hasNonWhitespace } from "../Whitespace.ts"

/** The most results one query may ask for. */
export const MAX_TOP_K = 1000
/** The most queries one batch may hold. */
export const MAX_BATCH = 100
/** The longest query text, in UTF-16 units (a long pasted paragraph fits). */
export const MAX_QUERY_LENGTH = 10_000
/** The most documents one `PUT /v1/documents` may hold. */
export const MAX_PUT_DOCUMENTS = 1000

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

// ---------------------------------------------------------------------------------------------------------------
// Queries

/** A query as `POST /v1/query` takes it: the CLI's `query` options, in snake case. */
export const QueryRequest = Schema.Struct({
  text: Schema.String.check(
    Schema.makeFilter((s: string) => hasNonWhitespace.test(s) || "the query is blank: give some words to search for"),
    Schema.makeFilter((s: string) => s.isWellFormed() || "the query contains a lone UTF-16 surrogate"),
    Schema.isMaxLength(MAX_QUERY_LENGTH, { message: `the query is longer than ${MAX_QUERY_LENGTH} characters` })
  ).annotate({ description: "What to search for; cleaned and analyzed like the indexed documents" }),
  top_k: Schema.optionalKey(
    Schema.Int.check(
      Schema.isBetween(
        { minimum: 1, maximum: MAX_TOP_K },
        {
          message: `top_k must be an integer from 1 to ${MAX_TOP_K}`
        }
      )
    ).annotate({ description: `How many results (default 3, at most ${MAX_TOP_K})` })
  ),
  mode: Schema.optionalKey(
    RetrievalMode.annotate({
      description:
        "lexical (BM25), vector (embedding similarity) or hybrid (both fused); default: the index's best mode"
    })
  ),
  explain: Schema.optionalKey(Schema.Boolean.annotate({ description: "Add each result's score breakdown" })),
  k1: Schema.optionalKey(K1.annotate({ description: "BM25 term-frequency saturation (default 0.9)" })),
  b: Schema.optionalKey(B.annotate({ description: "BM25 length normalisation, 0 to 1 (default 0.4)" })),
  fusion: Schema.optionalKey(
    FusionMethod.annotate({
      description: "How hybrid mode fuses its rankings: linear (weighted normalised scores, the default) or rrf"
    })
  ),
  alpha: Schema.optionalKey(
    Alpha.annotate({
      description: "The lexical ranking's weight in hybrid mode, 0 to 1 (default 0.9 for linear, 0.5 for rrf)"
    })
  ),
  expand: Schema.optionalKey(
    Schema.Literals(["bo1", "rm3"]).annotate({
      description: "Expand the query from its 3 best chunks (pseudo-relevance feedback): bo1 or rm3; off by default"
    })
  ),
  where: Schema.optionalKey(
    RuleFromText.annotate({
      description: "Search only the documents this rule keeps, e.g. `categories = astro-ph and not title ^= Erratum`"
    })
  ),
  highlight: Schema.optionalKey(
    Schema.Boolean.annotate({
      description: "Add each result's `highlights`: the spans of its text whose words match the query's terms"
    })
  )
}).annotate({ identifier: "QueryRequest" })
export type QueryRequest = typeof QueryRequest.Type

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
  text: Schema.String,
  explain: Schema.optionalKey(Explanation),
  highlights: Schema.optionalKey(
    Schema.Array(Span).annotate({
      description: "Spans of `text` (code points) whose words match the query's terms"
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
  results: Schema.Array(QueryResult)
}).annotate({ identifier: "QueryResponse" })
export type QueryResponse = typeof QueryResponse.Type

/** Many queries in one request, answered from one snapshot of the index. */
export const BatchRequest = Schema.Struct({
  queries: Schema.Array(QueryRequest).check(
    Schema.isMinLength(1, { message: "give at least one query" }),
    Schema.isMaxLength(MAX_BATCH, { message: `a batch holds at most ${MAX_BATCH} queries` })
  )
}).annotate({ identifier: "BatchRequest" })

/** The answers of a batch, in the order of its queries. */
export const BatchResponse = Schema.Struct({ answers: Schema.Array(QueryResponse) }).annotate({
  identifier: "BatchResponse"
})

// ---------------------------------------------------------------------------------------------------------------
// Index and documents

/** An index's settings and counts: the same keys as in `funcpipe status --json`. */
export const ManifestInfo = Schema.Struct({
  format_version: Schema.Int,
  model: Schema.String,
  dimensions: Schema.Int,
  clean_rules: Schema.Array(Schema.String),
  chunk_size: Schema.Int,
  overlap: Schema.Int,
  tail_policy: Schema.String,
  stop_words: Schema.String,
  stemmer: Schema.String,
  keep: Schema.NullOr(Schema.String).annotate({
    description: "The keep rule the index was built with; null keeps all"
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

/** A document to add or replace, in the JSONL input's field names. */
export const DocumentInput = Schema.Struct({
  doc_id: Schema.String.check(Schema.isNonEmpty({ message: "a document id must not be empty" })),
  title: Schema.optionalKey(Schema.String),
  text: Schema.String,
  categories: Schema.optionalKey(Schema.NullOr(Schema.String))
}).annotate({ identifier: "DocumentInput" })

export const PutDocumentsRequest = Schema.Struct({
  documents: Schema.Array(DocumentInput).check(
    Schema.isMinLength(1, { message: "give at least one document" }),
    Schema.isMaxLength(MAX_PUT_DOCUMENTS, { message: `one request holds at most ${MAX_PUT_DOCUMENTS} documents` })
  )
}).annotate({ identifier: "PutDocumentsRequest" })

export const PutDocumentsResponse = Schema.Struct({
  added: Schema.Array(Schema.String),
  updated: Schema.Array(Schema.String),
  unchanged: Schema.Array(Schema.String),
  skipped: Schema.Array(Schema.Struct({ doc_id: Schema.String, reason: Schema.String })),
  chunks_written: Count,
  documents: Count.annotate({ description: "Documents in the index after the change" }),
  chunks: Count
}).annotate({ identifier: "PutDocumentsResponse" })

export const DeleteDocumentResponse = Schema.Struct({
  deleted: Schema.String,
  documents: Count,
  chunks: Count
}).annotate({ identifier: "DeleteDocumentResponse" })

// ---------------------------------------------------------------------------------------------------------------
// Errors: each carries the message a person can act on (the CLI's message where the CLI has the same failure).

/** One problem with a request: where (`text`, `queries[2].top_k`, or empty for the whole body) and what. */
export const Issue = Schema.Struct({ path: Schema.String, message: Schema.String })

/** The request does not match the endpoint's schema, or its values break a rule (a blank query). */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()(
  "InvalidRequest",
  {
    message: Schema.String,
    issues: Schema.Array(Issue)
  },
  { httpApiStatus: 400 }
) {}

/** The server wants `Authorization: Bearer <token>` and the request had none or another one. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  {
    message: Schema.String
  },
  { httpApiStatus: 401 }
) {}

/** A write endpoint was called on a server started without `--writable`. */
export class WritesDisabled extends Schema.TaggedError<WritesDisabled>()(
  "WritesDisabled",
  {
    message: Schema.String
  },
  { httpApiStatus: 403 }
) {}

/** No document with this id is in the index. */
export class DocumentNotFound extends Schema.TaggedError<DocumentNotFound>()(
  "DocumentNotFound",
  {
    message: Schema.String,
    doc_id: Schema.String
  },
  { httpApiStatus: 404 }
) {}

/** The index cannot answer this request as asked: it was built with another embedding model or other settings. */
export class IndexConflict extends Schema.TaggedError<IndexConflict>()(
  "IndexConflict",
  {
    message: Schema.String,
    reason: Schema.String.annotate({ description: "The failure's name, e.g. ModelMismatch" })
  },
  { httpApiStatus: 409 }
) {}

/** The server has no readable index to answer from (none built yet, damaged, being written), or it is shutting down. */
export class IndexUnavailable extends Schema.TaggedError<IndexUnavailable>()(
  "IndexUnavailable",
  {
    message: Schema.String,
    reason: Schema.String.annotate({ description: "The failure's name, e.g. IndexMissing" })
  },
  { httpApiStatus: 503 }
) {}

const IndexErrors = [InvalidRequest, IndexConflict, IndexUnavailable] as const

// ---------------------------------------------------------------------------------------------------------------
// Endpoints

export class SearchGroup extends HttpApiGroup.make("search").add(
  HttpApiEndpoint.post("query", "/v1/query", {
    payload: QueryRequest,
    success: QueryResponse,
    error: IndexErrors
  }).annotate(OpenApi.Summary, "Answer a query with the best-matching chunks"),
  HttpApiEndpoint.post("batch", "/v1/query/batch", {
    payload: BatchRequest,
    success: BatchResponse,
    error: IndexErrors
  }).annotate(OpenApi.Summary, "Answer many queries from one snapshot of the index")
) {}

export class IndexGroup extends HttpApiGroup.make("index").add(
  HttpApiEndpoint.get("status", "/v1/status", { success: StatusResponse }).annotate(
    OpenApi.Summary,
    "The served index's settings and counts, and the snapshot's age"
  ),
  HttpApiEndpoint.get("document", "/v1/documents/:id", {
    params: { id: Schema.String },
    success: DocumentResponse,
    error: [DocumentNotFound, IndexUnavailable]
  }).annotate(OpenApi.Summary, "A stored document and its chunks (escape a / in the id as %2F)")
) {}

export class DocumentsGroup extends HttpApiGroup.make("documents").add(
  HttpApiEndpoint.put("put", "/v1/documents", {
    payload: PutDocumentsRequest,
    success: PutDocumentsResponse,
    error: [...IndexErrors, WritesDisabled]
  }).annotate(OpenApi.Summary, "Add or replace documents (server started with --writable)"),
  HttpApiEndpoint.delete("delete", "/v1/documents/:id", {
    params: { id: Schema.String },
    success: DeleteDocumentResponse,
    error: [DocumentNotFound, IndexConflict, IndexUnavailable, WritesDisabled]
  }).annotate(OpenApi.Summary, "Delete a document and its chunks (server started with --writable)")
) {}

export class SystemGroup extends HttpApiGroup.make("system", { topLevel: true }).add(
  HttpApiEndpoint.get("health", "/healthz", { success: Schema.Struct({ status: Schema.Literal("ok") }) }).annotate(
    OpenApi.Summary,
    "Liveness: answers while the process runs"
  )
) {}

/** Adds the bearer scheme: servers bound beyond loopback require it (`--token`), others ignore it. */
// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is open-ended JSON; only two keys are touched here
const bearerScheme = (spec: Record<string, any>): Record<string, any> => ({
  ...spec,
  components: {
    ...spec["components"],
    securitySchemes: {
      ...spec["components"]?.["securitySchemes"],
      bearer: {
        type: "http",
        scheme: "bearer",
        description: "Required when the server was started with --token (always when it listens beyond loopback)"
      }
    }
  },
  security: [{}, { bearer: [] }]
})

/** The whole API. */
export class FuncPipeApi extends HttpApi.make("funcpipe")
  .add(SearchGroup)
  .add(IndexGroup)
  .add(DocumentsGroup)
  .add(SystemGroup)
  // A key the schema does not name is an error, so a misspelt option (`topk`) is reported rather than ignored; every
  // problem of a request is reported at once. Headers keep the defaults (requests carry many undeclared ones).
  .annotate(HttpApi.ParseOptions, { onExcessProperty: "error", errors: "all" })
  .annotate(HttpApi.HeadersParseOptions, {})
  .annotateMerge(
    OpenApi.annotations({
      title: "FuncPipe",
      version: "1",
      description: "Ranked chunks from a FuncPipe index: query, inspect and (with --writable) change it.",
      transform: bearerScheme
    })
  ) {}

// ---------------------------------------------------------------------------------------------------------------
// The JSON shapes, built once for the CLI and the server (in their own module, which the CLI loads without HTTP)

export * from "../ApiJson.ts"
