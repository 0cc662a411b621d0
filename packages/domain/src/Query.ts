/** A search request: the (cleaned) query text, its embedding and how many results to return. */
import { Schema } from "effect"
import { Embedding } from "./Embedding.ts"
import { hasNonWhitespace } from "./Whitespace.ts"

/** How many results to return: an integer of at least 1 (booleans, fractions and NaN are rejected). */
export const TopK = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "top-k must be at least 1" })).pipe(
  Schema.brand("TopK")
)
export type TopK = typeof TopK.Type

/** How many results a query gets when it does not say: the CLI's `--top-k` and the HTTP API's `top_k` alike. */
export const DEFAULT_TOP_K: TopK = TopK.make(3)

/** Query text: must hold at least one non-whitespace character. */
export const QueryText = Schema.String.check(
  Schema.makeFilter((s: string) => hasNonWhitespace.test(s) || "the query is blank: give some words to search for"),
  Schema.makeFilter((s: string) => s.isWellFormed() || "the query contains a lone UTF-16 surrogate")
).pipe(Schema.brand("QueryText"))
export type QueryText = typeof QueryText.Type

/** What `retrieve` answers: the query's text, its embedding (same model as the index) and the result count. */
export class SearchQuery extends Schema.Class<SearchQuery>("domain/SearchQuery")({
  text: QueryText,
  embedding: Embedding,
  topK: TopK
}) {}
