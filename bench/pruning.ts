/**
 * Pruned against exhaustive lexical top k, on one snapshot in process: each word query's postings loaded once, then
 * both ways timed in turn (interleaved, so both see the same machine), their answers compared to the bit.
 */
import { NodeServices } from "@effect/platform-node"
import { Bm25Params } from "@funcpipe/domain"
import {
  analyze,
  bm25,
  IndexStore,
  layerSqlite,
  loadTerms,
  type PruningCounts,
  prunePays,
  tiesOf,
  topLexicalPruned,
  topOf
} from "@funcpipe/pipeline"
import { Effect, Option } from "effect"
import type { BenchQuery, QueryKind } from "./Queries.ts"
import { fixed, markdownTable, median, ms } from "./Table.ts"

export interface PruningReport {
  readonly table: string
  /** Queries whose pruned answer differed from the exhaustive one (none when all is well). */
  readonly mismatches: ReadonlyArray<string>
}

/** Times both ways for every word query (`reps` timed runs each, after one warm-up) and tabulates them by kind. */
export const comparePruning = (
  indexFile: string,
  queries: ReadonlyArray<BenchQuery>,
  kinds: ReadonlyArray<QueryKind>,
  k: number,
  reps: number
): Promise<PruningReport> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* IndexStore
        const view = Option.getOrThrow(yield* store.snapshot)
        const params = Bm25Params.default
        const rows: Array<Array<string>> = []
        const mismatches: Array<string> = []
        for (const kind of kinds) {
          const exhaustiveTimes: Array<number> = []
          const prunedTimes: Array<number> = []
          const counts: PruningCounts = { postings: 0, visited: 0, scored: 0 }
          let n = 0
          for (const query of queries.filter((q) => q.kind === kind)) {
            n++
            const terms = analyze(query.text, view.manifest.analyzer)
            const loaded = loadTerms(view, terms)
            const exhaustive = () => topOf(bm25(view, loaded, terms, params).candidates, k, tiesOf(view))
            // As the engine chooses: short lists are scored outright.
            const pruned = (into?: PruningCounts) =>
              prunePays(loaded) ? topLexicalPruned(view, loaded, terms, params, k, undefined, into) : exhaustive()
            const expected = exhaustive()
            if (JSON.stringify(pruned(counts)) !== JSON.stringify(expected)) mismatches.push(query.text)
            for (let r = 0; r < reps; r++) {
              let t0 = performance.now()
              exhaustive()
              exhaustiveTimes.push(performance.now() - t0)
              t0 = performance.now()
              pruned()
              prunedTimes.push(performance.now() - t0)
            }
          }
          if (n === 0) continue
          const e = median(exhaustiveTimes)
          const p = median(prunedTimes)
          rows.push([
            kind,
            String(n),
            ms(e),
            ms(p),
            `${fixed(e / p, 1)}×`,
            `${fixed((100 * counts.visited) / Math.max(1, counts.postings), 1)} %`,
            `${fixed((100 * counts.scored) / Math.max(1, counts.postings), 1)} %`
          ])
        }
        const table = markdownTable(
          [
            "query kind",
            "queries",
            "exhaustive median ms",
            "pruned median ms",
            "speed-up",
            "chunks visited / postings",
            "chunks scored / postings"
          ],
          rows
        )
        return { table, mismatches }
      })
    ).pipe(Effect.provide(layerSqlite(indexFile)), Effect.provide(NodeServices.layer))
  )
