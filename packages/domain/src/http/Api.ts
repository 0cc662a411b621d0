/**
 * The HTTP API of `funcpipe serve` as a contract: endpoints, request and response schemas, and the errors with their
 * status codes. Servers implement it and clients derive a typed client from it (`HttpApiClient.make(FuncPipeApi)`);
 * the JSON shapes of its answers are the CLI's `--json` shapes, defined in `../Answer.ts`.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BatchResponse, DocumentResponse, QueryResponse, StatusResponse } from "../Answer.ts"
import { AskEvent, AskResponse } from "../Ask.ts"
import { Alpha, B, FusionMethod, K1, ResultGroup, RetrievalMode } from "../Config.ts"
import { RuleFromText } from "../RuleParser.ts"
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
  group: Schema.optionalKey(
    ResultGroup.annotate({
      description:
        "chunk (the default: each chunk ranked on its own) or doc (the best chunk of each document, with how many " +
        "more of its chunks matched; top_k then counts documents)"
    })
  ),
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
      description:
        "Add each result's `highlights` and `passage_highlights`: the spans of its text and of its passage whose " +
        "words match the query's terms"
    })
  ),
  exact: Schema.optionalKey(
    Schema.Boolean.annotate({
      description: "Score every vector, even where the index has an approximate vector index (index --ann hnsw)"
    })
  ),
  ann_candidates: Schema.optionalKey(
    Schema.Int.check(
      Schema.isBetween(
        { minimum: 1, maximum: 10_000 },
        { message: "ann_candidates must be an integer from 1 to 10000" }
      )
    ).annotate({
      description:
        "How many candidates the approximate vector index proposes per graph, all scored exactly (efSearch; " +
        "default 64): more finds more of the exact top k, slower"
    })
  ),
  passage_width: Schema.optionalKey(
    Schema.Int.check(Schema.isBetween({ minimum: 20, maximum: 100_000 })).annotate({
      description:
        "Cut each result's passage to about this many characters around its matches (… where text is left out)"
    })
  )
}).annotate({
  identifier: "QueryRequest",
  examples: [
    { text: "Which probe reached interstellar space?", top_k: 3 },
    { text: "saturn rings", top_k: 5, mode: "lexical", explain: true, highlight: true, passage_width: 200 }
  ]
})
export type QueryRequest = typeof QueryRequest.Type

/** Many queries in one request, answered from one snapshot of the index. */
export const BatchRequest = Schema.Struct({
  queries: Schema.Array(QueryRequest).check(
    Schema.isMinLength(1, { message: "give at least one query" }),
    Schema.isMaxLength(MAX_BATCH, { message: `a batch holds at most ${MAX_BATCH} queries` })
  )
}).annotate({
  identifier: "BatchRequest",
  examples: [{ queries: [{ text: "moon phases" }, { text: "polaris", top_k: 1 }] }]
})

/** The most chunks one question may retrieve for its prompt. */
export const MAX_ASK_TOP_K = 100
/** How many chunks a question retrieves unless it says. */
export const DEFAULT_ASK_TOP_K = 8

/** A question for `POST /v1/ask`: `/v1/query`'s text, top_k, mode and where. */
export const AskRequest = Schema.Struct({
  text: QueryRequest.fields.text.annotate({ description: "The question; its words retrieve the chunks it is given" }),
  top_k: Schema.optionalKey(
    Schema.Int.check(
      Schema.isBetween(
        { minimum: 1, maximum: MAX_ASK_TOP_K },
        { message: `top_k must be an integer from 1 to ${MAX_ASK_TOP_K}` }
      )
    ).annotate({
      description: `How many chunks to retrieve for the prompt (default ${DEFAULT_ASK_TOP_K}, at most ${MAX_ASK_TOP_K})`
    })
  ),
  mode: QueryRequest.fields.mode,
  where: QueryRequest.fields.where
}).annotate({
  identifier: "AskRequest",
  examples: [{ text: "How far away is the Moon?" }, { text: "Which probe left the heliosphere?", top_k: 4 }]
})
export type AskRequest = typeof AskRequest.Type

// ---------------------------------------------------------------------------------------------------------------
// Index and documents

/** A document to add or replace, in the JSONL input's field names. */
export const DocumentInput = Schema.Struct({
  doc_id: Schema.String.check(Schema.isNonEmpty({ message: "a document id must not be empty" })),
  title: Schema.optionalKey(Schema.String),
  text: Schema.String,
  categories: Schema.optionalKey(
    Schema.NullOr(Schema.Union([Schema.String, Schema.Array(Schema.String)])).annotate({
      description: 'Labels: a list (["astro-ph", "draft"]) or one string of them, as JSONL input takes them'
    })
  )
}).annotate({ identifier: "DocumentInput" })

export const PutDocumentsRequest = Schema.Struct({
  documents: Schema.Array(DocumentInput).check(
    Schema.isMinLength(1, { message: "give at least one document" }),
    Schema.isMaxLength(MAX_PUT_DOCUMENTS, { message: `one request holds at most ${MAX_PUT_DOCUMENTS} documents` })
  )
}).annotate({
  identifier: "PutDocumentsRequest",
  examples: [
    {
      documents: [
        { doc_id: "comet", title: "Comets", text: "A comet has an icy nucleus and a long tail.", categories: ["astro"] }
      ]
    }
  ]
})

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

/** The server was not started with `--link-sources`, so it does not hand out documents' text. */
export class SourcesOff extends Schema.TaggedError<SourcesOff>()(
  "SourcesOff",
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

/** The server was started without a chat model (`serve --llm`), so it cannot answer questions. */
export class AskDisabled extends Schema.TaggedError<AskDisabled>()(
  "AskDisabled",
  {
    message: Schema.String
  },
  { httpApiStatus: 501 }
) {}

/** The chat model could not answer (refused key, rate limit, unreachable, broke off): why, in its service's words. */
export class ChatModelFailed extends Schema.TaggedError<ChatModelFailed>()(
  "ChatModelFailed",
  {
    message: Schema.String,
    reason: Schema.String.annotate({ description: "The failure's kind, e.g. RateLimitError" })
  },
  { httpApiStatus: 502 }
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

export class AnswersGroup extends HttpApiGroup.make("answers").add(
  HttpApiEndpoint.post("ask", "/v1/ask", {
    payload: AskRequest,
    success: [
      AskResponse,
      HttpApiSchema.StreamSse({ data: AskEvent }).annotate({
        description:
          "With Accept: text/event-stream, the answer as it comes: `token` events, then one `done` event (the JSON " +
          "answer) or one `error` event"
      })
    ],
    error: [...IndexErrors, AskDisabled, ChatModelFailed]
  }).annotate(
    OpenApi.Summary,
    "Answer a question from the index with the server's chat model, citing the chunks it comes from " +
      "(server started with --llm)"
  )
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
  }).annotate(OpenApi.Summary, "A stored document and its chunks (escape a / in the id as %2F)"),
  HttpApiEndpoint.get("text", "/v1/documents/:id/text", {
    params: { id: Schema.String },
    success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/plain; charset=utf-8" })),
    error: [DocumentNotFound, IndexUnavailable, SourcesOff]
  }).annotate(
    OpenApi.Summary,
    "A document's text as written, as plain text (server started with --link-sources; an index of format 2 has " +
      "only the cleaned text)"
  )
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

export class SystemGroup extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("health", "/healthz", { success: Schema.Struct({ status: Schema.Literal("ok") }) }).annotate(
      OpenApi.Summary,
      "Liveness: answers while the process runs"
    )
  )
  .add(
    HttpApiEndpoint.get("ready", "/readyz", {
      success: Schema.Struct({
        status: Schema.Literal("ready"),
        snapshot_at: Schema.String.annotate({ description: "When the served snapshot was opened (ISO 8601)" })
      }),
      error: IndexUnavailable
    }).annotate(
      OpenApi.Summary,
      "Readiness: 200 once an index is loaded and queries can be answered, 503 (with the reason) until then"
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
  .add(AnswersGroup)
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
