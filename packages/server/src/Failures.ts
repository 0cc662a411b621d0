/**
 * The API's answer to each failure of the pipeline's programs: its status (400, 409 or 503) and the error the
 * contract names for it, with the CLI's message. Every handler maps failures through here.
 */

import { DocumentNotFound, IndexConflict, IndexUnavailable, InvalidRequest } from "@funcpipe/domain/http/Api"
import type { ModelError } from "@funcpipe/pipeline/models/ModelErrors"
import type { IndexRunError } from "@funcpipe/pipeline/programs/IndexErrors"
import type { QueryError } from "@funcpipe/pipeline/search/QueryErrors"
import type { StoreError } from "@funcpipe/pipeline/store/StoreErrors"
import { Schema } from "effect"

/** A failure of the pipeline's programs, by family. */
export type PipelineError = QueryError | StoreError | ModelError | IndexRunError

/** What the API answers for a pipeline failure. */
export type ApiFailure = InvalidRequest | IndexConflict | IndexUnavailable

/** A request error with one issue, whose message is the whole error's. */
const invalid = (message: string, path: string) => new InvalidRequest({ message, issues: [{ path, message }] })

/** No document with this id. */
export const notFound = (docId: string) =>
  new DocumentNotFound({ message: `there is no document ${JSON.stringify(docId)} in the index`, doc_id: docId })

export const isApiError: (u: unknown) => u is ApiFailure = Schema.is(
  Schema.Union([InvalidRequest, IndexConflict, IndexUnavailable])
)

/** The request-level name of the query programs' subjects, for an issue's path. */
const fieldOf: Record<string, string> = { query: "text", "top-k": "top_k" }

/** A field of the request at `path` (a batch's `queries[2]`, or the whole body). */
const fieldAt = (path: string, field: string) => (path === "" ? field : `${path}.${field}`)

/** The index cannot answer this request as asked (409). */
const conflict = (error: PipelineError) => new IndexConflict({ message: error.message, reason: error._tag })

/** There is no readable index to answer from (503). */
const unavailable = (error: PipelineError) => new IndexUnavailable({ message: error.message, reason: error._tag })

/**
 * The status each failure of the pipeline's programs answers with: 400 when the request is at fault (its text,
 * filter or documents), 409 when the index cannot do what was asked as it stands (another model, other settings, a
 * deletion it guards against), 503 when there is no readable index or model to answer with. docs/cli.md has the same
 * table, and a test holds the two equal.
 */
export const PIPELINE_STATUS: { readonly [Tag in PipelineError["_tag"]]: 400 | 409 | 503 } = {
  InvalidInput: 400,
  ZeroVector: 400,
  QueryFilterInvalid: 400,
  NothingToIndex: 400,
  NothingKept: 400,
  ModelMismatch: 409,
  DimensionMismatch: 409,
  SettingsChanged: 409,
  PruneNeeded: 409,
  CodesNeedGraphs: 409,
  IndexMissing: 503,
  NotAnIndex: 503,
  IndexCorrupt: 503,
  IndexTooNew: 503,
  IndexTooOld: 503,
  IndexBusy: 503,
  StoreFailure: 503,
  IndexUnreachable: 503,
  IndexCredentialsRefused: 503,
  ForeignSchema: 503,
  UnknownModel: 503,
  ModelUnavailable: 503,
  EmbedFailure: 503
}

/** The request's field a 400 failure is about. */
const fieldOfFailure = (error: PipelineError, path: string): string => {
  switch (error._tag) {
    case "InvalidInput":
      return fieldAt(path, fieldOf[error.subject] ?? error.subject)
    case "QueryFilterInvalid":
      return fieldAt(path, "where")
    case "NothingToIndex":
    case "NothingKept":
      return fieldAt(path, "documents")
    default:
      return fieldAt(path, "text")
  }
}

/**
 * Maps a pipeline failure to the API's error for its status (`PIPELINE_STATUS`); `path` places a batch's query. The
 * message is the CLI's message for the same failure.
 */
export const apiError = (error: PipelineError, path = ""): ApiFailure => {
  switch (PIPELINE_STATUS[error._tag]) {
    case 400:
      return invalid(error.message, fieldOfFailure(error, path))
    case 409:
      return conflict(error)
    case 503:
      return unavailable(error)
  }
}

/** Answers one query from a loaded snapshot, in the `query --json` shape. */
