/**
 * The tools FuncPipe offers agents over MCP (`funcpipe mcp`, and `/mcp` on `serve`), a contract beside the HTTP API:
 * `search`, `read` and `status` (and `ask` where a chat model is given), as `effect/ai` tools whose parameters are the
 * HTTP API's schemas, so an agent gets the same checks and messages as a client of `/v1/query`. The servers implement
 * them (`@funcpipe/server/Mcp`).
 */

import { Schema } from "effect"
import { Tool, Toolkit } from "effect/ai"
import { ManifestInfo, QueryResponse } from "../Answer.ts"
import { AskResponse } from "../Ask.ts"
import { AskRequest, QueryRequest } from "./Api.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** The most results one `search` call may ask for: an agent's context is the budget. */
export const MAX_TOOL_TOP_K = 50
/** The most characters `read` gives of a whole document; past it, `truncated` says so. */
export const MAX_READ_CHARS = 20_000

/** Why a tool could not do what was asked, in the words the CLI and the API use. */
export class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", {
  message: Schema.String,
  reason: Schema.String.annotate({ description: "The failure's name, e.g. DocumentNotFound" })
}) {}

export const Search = Tool.make("search", {
  description:
    "Search the indexed documents. Returns the best-matching chunks, best first, each with its document id (doc_id), " +
    "its span [start, end) in code points, its title and section headings, and its passage as written. Use `read` " +
    "with a result's doc_id (and its start and end) to see more of the document.",
  parameters: Schema.Struct({
    query: QueryRequest.fields.text,
    mode: QueryRequest.fields.mode,
    top_k: Schema.optionalKey(
      Schema.Int.check(
        Schema.isBetween(
          { minimum: 1, maximum: MAX_TOOL_TOP_K },
          { message: `top_k must be an integer from 1 to ${MAX_TOOL_TOP_K}` }
        )
      ).annotate({ description: `How many chunks (default 5, at most ${MAX_TOOL_TOP_K})` })
    ),
    where: QueryRequest.fields.where
  }),
  success: QueryResponse,
  failure: ToolFailure
})
  .annotate(Tool.Readonly, true)
  .annotate(Tool.Idempotent, true)

/** A chunk of a document as `read` gives it. */
export const ReadChunk = Schema.Struct({
  start: Count,
  end: Count,
  text: Schema.String.annotate({ description: "The chunk as the document has it, markup removed, on one line" })
})

export const ReadResponse = Schema.Struct({
  doc_id: Schema.String,
  title: Schema.String,
  source: Schema.String.annotate({ description: "Where the document was read from" }),
  categories: Schema.NullOr(Schema.String),
  chunks: Schema.Array(ReadChunk).annotate({
    description: "With start and end: the chunks there and their neighbours, in text order; without: none"
  }),
  text: Schema.NullOr(Schema.String).annotate({
    description: `Without start and end: the document as written (its first ${MAX_READ_CHARS} characters); else null`
  }),
  truncated: Schema.Boolean.annotate({ description: "Whether `text` stops before the document's end" }),
  chunk_count: Count
})

export const Read = Tool.make("read", {
  description:
    "Read a document of the index by its doc_id: the whole document as written (up to " +
    `${MAX_READ_CHARS} characters), or, given a span start and end from a search result, the chunks there and ` +
    "`neighbours` chunks before and after them.",
  parameters: Schema.Struct({
    doc_id: Schema.String.check(Schema.isNonEmpty({ message: "give the doc_id of a document" })),
    start: Schema.optionalKey(
      Count.annotate({ description: "The span's start, in code points (from a search result)" })
    ),
    end: Schema.optionalKey(Count.annotate({ description: "The span's end, in code points" })),
    neighbours: Schema.optionalKey(
      Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 20 })).annotate({
        description: "How many chunks before and after the span to add (default 1)"
      })
    )
  }),
  success: ReadResponse,
  failure: ToolFailure
})
  .annotate(Tool.Readonly, true)
  .annotate(Tool.Idempotent, true)

export const Status = Tool.make("status", {
  description:
    "What the index holds: how many documents and chunks, the embedding model, the retrieval modes it answers in.",
  success: Schema.Struct({
    index: Schema.String,
    manifest: Schema.NullOr(ManifestInfo).annotate({ description: "null while there is no index to answer from" }),
    snapshot_at: Schema.NullOr(Schema.String)
  }),
  failure: ToolFailure
})
  .annotate(Tool.Readonly, true)
  .annotate(Tool.Idempotent, true)

/** Every tool, as registered on the MCP servers. */
export const FuncPipeTools = Toolkit.make(Search, Read, Status)

/** Offered only by a server started with a chat model (`--llm`): an answer written from the documents, cited. */
export const Ask = Tool.make("ask", {
  description:
    "Answer a question from the indexed documents with the server's chat model. The answer cites its sources as " +
    "[n]; `sources` gives each one's doc_id and span, for `read`.",
  parameters: Schema.Struct({
    question: AskRequest.fields.text,
    top_k: AskRequest.fields.top_k,
    mode: AskRequest.fields.mode,
    where: AskRequest.fields.where
  }),
  success: AskResponse,
  failure: ToolFailure
}).annotate(Tool.Readonly, true)

export const AskTools = Toolkit.make(Ask)
