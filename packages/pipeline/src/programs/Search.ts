/** The in-memory search workflow: index the paths into a throwaway index, then answer one query from it. */

import type { AnalyzerConfig, ChunkerConfig } from "@funcpipe/domain/Config"
import { CleanerConfig } from "@funcpipe/domain/Config"
import type { Rule } from "@funcpipe/domain/Rule"
import { Effect } from "effect"
import { prepareQuery } from "../search/Query.ts"
import { layerTemporary } from "../store/sqlite/TempIndexStore.ts"
import { indexPaths } from "./IndexRun.ts"
import { type QueryOptions, queryIndex } from "./QueryIndex.ts"

/**
 * Indexes `paths` (the documents `keep` keeps) into an in-memory index and answers `query` exactly as `funcpipe query`
 * would answer from a file.
 * The query is checked before any document is read, so a blank query or a bad `topK` fails at once.
 */
export const searchPaths = Effect.fn("searchPaths")(function* (
  paths: ReadonlyArray<string>,
  query: string,
  topK: number,
  options: QueryOptions & {
    readonly chunker?: ChunkerConfig
    readonly analyzer?: AnalyzerConfig
    readonly keep?: Rule
  } = {}
) {
  yield* Effect.fromResult(prepareQuery(query, topK, CleanerConfig.default))
  return yield* Effect.gen(function* () {
    const report = yield* indexPaths(paths, options)
    const answer = yield* queryIndex(query, topK, options)
    return { ...answer, report } as const
  }).pipe(Effect.provide(layerTemporary))
})
