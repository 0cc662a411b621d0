/**
 * The errors of answering a query: the query itself is unusable, or the index cannot answer it as asked (none yet, a
 * filter it cannot apply, another model's vectors). One family, with one guard that tells them from anything else.
 */
import { InvalidInput } from "@funcpipe/domain/Decode"
import { Schema } from "effect"

/** Two vectors of different lengths were compared: they come from different models or a damaged index. */
export class DimensionMismatch extends Schema.TaggedError<DimensionMismatch>()("DimensionMismatch", {
  expected: Schema.Int,
  actual: Schema.Int
}) {
  override get message(): string {
    return `vectors have different dimensions (${this.expected} and ${this.actual}); they cannot be compared`
  }
}

/** A vector with no components or with all components zero has no direction, so its cosine is undefined. */
export class ZeroVector extends Schema.TaggedError<ZeroVector>()("ZeroVector", {
  length: Schema.Int
}) {
  override get message(): string {
    return this.length === 0
      ? "an empty vector has no direction; its cosine similarity is undefined"
      : "a vector of zeros has no direction; its cosine similarity is undefined"
  }
}

/** The query and the index were embedded by different models, so their vectors cannot be compared. */
export class ModelMismatch extends Schema.TaggedError<ModelMismatch>()("ModelMismatch", {
  index: Schema.String,
  query: Schema.String
}) {
  override get message(): string {
    return (
      `the index was built with the model "${this.index}" but the query was embedded with "${this.query}"; ` +
      `query with the index's model or rebuild the index`
    )
  }
}

/** Nothing has been indexed at the location yet. */
export class IndexMissing extends Schema.TaggedError<IndexMissing>()("IndexMissing", {
  location: Schema.String
}) {
  override get message(): string {
    return `there is no index at ${this.location} yet; build one with: funcpipe index <paths...>`
  }
}

/** A query filter reads what the index does not keep. */
export class QueryFilterInvalid extends Schema.TaggedError<QueryFilterInvalid>()("QueryFilterInvalid", {
  reason: Schema.String
}) {
  override get message(): string {
    return `a query filter cannot use this rule: ${this.reason}`
  }
}

/** Every error a query fails with, apart from the store's and the models' own. */
export const QueryError = Schema.Union([
  InvalidInput,
  ZeroVector,
  DimensionMismatch,
  ModelMismatch,
  IndexMissing,
  QueryFilterInvalid
])
export type QueryError = typeof QueryError.Type

/** Whether `u` is one of the query errors. */
export const isQueryError: (u: unknown) => u is QueryError = Schema.is(QueryError)
