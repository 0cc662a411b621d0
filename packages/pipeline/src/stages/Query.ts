/** Turns user query text into a `SearchQuery`: clean it like the index's bodies, check it, embed it. */
import { Result } from "effect"
import { CleanerConfig } from "@funcpipe/domain/Config"
import { decodeAs, type InvalidInput } from "@funcpipe/domain/Decode"
import type { Embedding } from "@funcpipe/domain/Embedding"
import { QueryText, SearchQuery, TopK } from "@funcpipe/domain/Query"
import { cleanText } from "./Clean.ts"
import { embedText } from "./Embed.ts"

const decodeText = decodeAs(QueryText, "query")
const decodeTopK = decodeAs(TopK, "top-k")

/**
 * Cleans `text` with the index's own rules (so a query and a chunk with the same text get the same vector), rejects
 * a blank query or a bad `topK`, and embeds the cleaned text with `embed` (`local-sha256` by default).
 */
export const makeQuery = (
  text: string,
  topK: unknown,
  cleaner: CleanerConfig = CleanerConfig.default,
  embed: (cleaned: string) => Embedding = embedText
): Result.Result<SearchQuery, InvalidInput> =>
  Result.gen(function*() {
    const cleaned = yield* decodeText(cleanText(text, cleaner))
    const k = yield* decodeTopK(topK)
    return new SearchQuery({ text: cleaned, embedding: embed(cleaned), topK: k })
  })
