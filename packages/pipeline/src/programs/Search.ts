/** The in-memory search workflow: ingest the paths, then answer one query from the chunks. */
import { Effect } from "effect"
import type { ChunkerConfig } from "@funcpipe/domain/Config"
import { CleanerConfig } from "@funcpipe/domain/Config"
import { SearchQuery } from "@funcpipe/domain/Query"
import { Embedder } from "../services/Embedder.ts"
import { dedupChunks } from "../stages/Dedup.ts"
import { prepareQuery } from "../stages/Query.ts"
import { retrieve, vectorIndex } from "../stages/Retrieve.ts"
import { ingest } from "./Ingest.ts"

/**
 * Indexes `paths` in memory and returns the best `topK` chunks for `query` in the ranking order, with the ingest
 * summary. The query is checked before any document is read, so a blank query or a bad `topK` fails at once.
 */
export const searchPaths = Effect.fn("searchPaths")(function*(
  paths: ReadonlyArray<string>,
  query: string,
  topK: number,
  options: { readonly cleaner?: CleanerConfig; readonly chunker?: ChunkerConfig } = {}
) {
  const embedder = yield* Embedder
  const prepared = yield* Effect.fromResult(prepareQuery(query, topK, options.cleaner ?? CleanerConfig.default))
  const [embedding] = yield* embedder.embedMany([prepared.text])
  const search = new SearchQuery({ text: prepared.text, embedding: embedding!, topK: prepared.topK })
  const { chunks, summary } = yield* ingest(paths, options)
  // The same document given twice (or twice in one CSV) must not answer twice.
  const index = yield* Effect.fromResult(vectorIndex(embedder.model, embedder.dimensions, dedupChunks(chunks)))
  const results = yield* Effect.fromResult(retrieve(search, index))
  return { query: search, results, summary } as const
})
