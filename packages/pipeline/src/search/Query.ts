/** Turns user query text into a `SearchQuery`: clean it like the index's bodies, check it, embed it. */

import { CleanerConfig } from "@funcpipe/domain/Config"
import { decodeAs, type InvalidInput } from "@funcpipe/domain/Decode"
import type { Embedding } from "@funcpipe/domain/Embedding"
import { QueryText, SearchQuery, TopK } from "@funcpipe/domain/Query"
import { Result } from "effect"
import { cleanText } from "../analysis/Clean.ts"
import { embedText } from "../analysis/Embed.ts"

const decodeText = decodeAs(QueryText, "query")
const decodeTopK = decodeAs(TopK, "top-k")

/** Query text after cleaning, checked, with its checked result count: everything but the embedding. */
export interface PreparedQuery {
  readonly text: QueryText
  readonly topK: TopK
}

/** Cleans `text` with the index's own rules and rejects a blank query or a bad `topK`. */
export const prepareQuery = (
  text: string,
  topK: unknown,
  cleaner: CleanerConfig = CleanerConfig.default
): Result.Result<PreparedQuery, InvalidInput> =>
  Result.gen(function* () {
    const cleaned = yield* decodeText(cleanText(text, cleaner))
    const k = yield* decodeTopK(topK)
    return { text: cleaned, topK: k }
  })

/**
 * `prepareQuery`, then embeds the cleaned text with `embed` (`local-sha256` by default), so a query and a chunk with
 * the same text get the same vector.
 */
export const makeQuery = (
  text: string,
  topK: unknown,
  cleaner: CleanerConfig = CleanerConfig.default,
  embed: (cleaned: string) => Embedding = embedText
): Result.Result<SearchQuery, InvalidInput> =>
  Result.map(
    prepareQuery(text, topK, cleaner),
    (q) => new SearchQuery({ text: q.text, embedding: embed(q.text), topK: q.topK })
  )
