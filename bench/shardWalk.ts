/**
 * What walking the graphs costs a shard of a PostgreSQL index: the index loaded whole and as N shards in this
 * process, the same queries (sampled chunks' own vectors) answered through the graphs by the whole index and by each
 * shard, the shards' answers merged in the ranking order. Prints, per shard count, recall@10 against the exact scan and
 * the milliseconds a query takes: the whole index's, the slowest shard's (what a query waits for when each shard is on
 * a runner of its own) and all shards' together (what one machine spends).
 * Usage: npm run bench:shard-walk -- --url 'postgres://…?schema=…' [--shards 2,4] [--queries 200] [--ef 64]
 */

import { parseArgs } from "node:util"
import { IndexStore, type Top, topVectors } from "@funcpipe/pipeline"
import { makePartitionReader, mergeHits } from "@funcpipe/pipeline/cluster"
import { layerPostgres } from "@funcpipe/pipeline/postgres"
import { Effect, Option } from "effect"
import { markdownTable } from "./Table.ts"

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    shards: { type: "string", default: "2,4" },
    queries: { type: "string", default: "200" },
    ef: { type: "string", default: "64" }
  }
})
if (values.url === undefined) {
  console.error("give the index's URL: --url 'postgres://user:password@host/db?schema=name'")
  process.exit(2)
}
const url = values.url
const ef = Number(values.ef)
const K = 10

const program = Effect.gen(function* () {
  const whole = Option.getOrThrow(yield* IndexStore.use((store) => store.snapshot))
  if (whole.annSearch === undefined) return yield* Effect.die(new Error("the index has no graphs (--ann hnsw)"))
  const n = Math.min(Number(values.queries), whole.positions)
  const step = whole.positions / n
  const asks = Array.from({ length: n }, (_, i) => whole.chunkAt(Math.floor(i * step)).vector)
  const keyOf = (view: typeof whole, tops: ReadonlyArray<Top>) =>
    tops.map(({ position, score }) => {
      const key = view.keyOf(position)
      return { score, docId: key.docId, start: key.start, end: key.end, text: key.text, title: "" }
    })
  const exact = asks.map(
    (vector) => new Set(keyOf(whole, topVectors(whole, vector, K)).map((h) => `${h.docId} ${h.start}`))
  )
  const recallOf = (answers: ReadonlyArray<ReadonlyArray<{ docId: string; start: number }>>) => {
    let hits = 0
    answers.forEach((answer, i) => {
      for (const hit of answer) if (exact[i]!.has(`${hit.docId} ${hit.start}`)) hits++
    })
    return hits / (K * answers.length)
  }
  // Warm once, then time.
  for (const vector of asks) topVectors(whole, vector, K, undefined, ef)
  let started = performance.now()
  const wholeAnswers = asks.map((vector) => keyOf(whole, topVectors(whole, vector, K, undefined, ef)))
  const wholeMs = (performance.now() - started) / n
  const rows: Array<Array<string>> = [
    ["1 (whole)", recallOf(wholeAnswers).toFixed(3), wholeMs.toFixed(2), wholeMs.toFixed(2)]
  ]
  const reader = yield* makePartitionReader(url)
  for (const shards of values.shards.split(",").map(Number)) {
    const parts = yield* Effect.forEach(
      Array.from({ length: shards }, (_, s) => s),
      (s) => Effect.map(reader.load(s, shards), (p) => Option.getOrThrow(p).snapshot)
    )
    for (const part of parts) for (const vector of asks) topVectors(part, vector, K, undefined, ef)
    const slowest = new Array<number>(n).fill(0)
    let all = 0
    const merged = asks.map((vector, i) => {
      const lists = parts.map((part) => {
        started = performance.now()
        const hits = keyOf(part, topVectors(part, vector, K, undefined, ef))
        const took = performance.now() - started
        all += took
        slowest[i] = Math.max(slowest[i]!, took)
        return hits
      })
      return mergeHits(lists, K)
    })
    const slowestMs = slowest.reduce((a, b) => a + b, 0) / n
    rows.push([String(shards), recallOf(merged).toFixed(3), slowestMs.toFixed(2), (all / n).toFixed(2)])
  }
  console.log(`${whole.positions} chunks, ${n} queries (sampled chunks' vectors), efSearch ${ef}\n`)
  console.log(markdownTable(["shards", "recall@10", "ms a query, slowest shard", "ms a query, all shards"], rows))
})

Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(layerPostgres(url)))).catch((error) => {
  console.error(String(error))
  process.exit(1)
})
