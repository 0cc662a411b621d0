/**
 * The PostgreSQL store against the SQLite file on one generated corpus: indexing, an unchanged re-run, cold `funcpipe
 * query` processes in every mode, and queries in a warm process; every answer of the two stores is compared.
 * Usage: node bench/postgres.ts [--mb 10] [--queries 5] [--url postgres://…] [--dir PATH] [--keep]
 * The server comes from --url, else $FUNCPIPE_BENCH_PG, else $FUNCPIPE_TEST_PG; the index goes in a schema of its own.
 */

import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { NodeServices } from "@effect/platform-node"
import { Embedder, IndexStore, layerIndexStore, openSnapshot, querySnapshot } from "@funcpipe/pipeline"
import { Effect, Layer } from "effect"
import { cliEntry, runNode } from "./Child.ts"
import { phraseQueries, writeJsonlCorpus } from "./Corpus.ts"
import { benchServer, inSchema, onServer } from "./Pg.ts"

const { values } = parseArgs({
  options: {
    mb: { type: "string", default: "10" },
    queries: { type: "string", default: "5" },
    url: { type: "string" },
    dir: { type: "string" },
    keep: { type: "boolean", default: false },
    seed: { type: "string", default: "42" }
  }
})
const server = benchServer(values.url)
const seed = Number(values.seed)
const dir = values.dir ?? mkdtempSync(join(tmpdir(), "funcpipe-bench-pg-"))
mkdirSync(dir, { recursive: true })
const schema = `bench_${process.pid}`
const pgUrl = inSchema(server, schema)
const stores = [
  ["SQLite", join(dir, "index.db")],
  ["PostgreSQL", pgUrl]
] as const
const modes = ["lexical", "vector", "hybrid"] as const

const queries = phraseQueries(seed + 1, Number(values.queries))

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`
const rssFile = join(dir, "rss")
const cli = cliEntry()

const corpus = join(dir, "corpus.jsonl")
const written = await writeJsonlCorpus(corpus, Number(values.mb) * 1_000_000, seed)
console.log(
  `corpus: ${written.docs} documents, ${(written.bytes / 1e6).toFixed(1)} MB; queries: ${queries.length} × ${modes.length} modes`
)

const rows: Array<Array<string>> = []
const answers = new Map<string, Array<string>>()
for (const [name, index] of stores) {
  const run = (args: ReadonlyArray<string>) =>
    runNode([cli, ...args, "--index", index], rssFile).then((r) => {
      if (r.code !== 0) throw new Error(`${name}: funcpipe ${args.join(" ")} failed: ${r.stderr}`)
      return r
    })
  const indexed = await run(["index", corpus])
  const again = await run(["index", corpus])
  const cold: Record<string, Array<number>> = { lexical: [], vector: [], hybrid: [] }
  const outputs: Array<string> = []
  for (const q of queries) {
    for (const mode of modes) {
      const r = await run(["query", q, "--mode", mode, "--top-k", "10", "--json"])
      cold[mode]!.push(r.wallMs)
      outputs.push(r.stdout)
    }
  }
  answers.set(name, outputs)
  // A warm process (as `serve` is): the snapshot opened once, then every query answered from it.
  const warm = await Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* IndexStore
      const opened = performance.now()
      const snapshot = yield* openSnapshot()
      const load = performance.now() - opened
      const times: Record<string, Array<number>> = { lexical: [], vector: [], hybrid: [] }
      for (let round = 0; round < 3; round++) {
        for (const q of queries) {
          for (const mode of modes) {
            const t = performance.now()
            yield* querySnapshot(snapshot, store.location, q, 10, { mode })
            times[mode]!.push(performance.now() - t)
          }
        }
      }
      return { load, times }
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(layerIndexStore(index), Embedder.layerLocalSha256, NodeServices.layer))
    )
  )
  const size =
    name === "SQLite"
      ? `${(statSync(index).size / 1e6).toFixed(1)} MB`
      : await onServer(server, (sql) =>
          Effect.map(
            sql<{ mb: string }>`SELECT round(sum(pg_total_relation_size(c.oid)) / 1e6, 1)::text AS mb FROM pg_class c
              JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ${schema} AND c.relkind = 'r'`,
            (r) => `${r[0]!.mb} MB`
          )
        )
  rows.push([
    name,
    `${seconds(indexed.wallMs)}, ${Math.round(indexed.peakRssKiB / 1024)} MB`,
    seconds(again.wallMs),
    size,
    ...modes.map((m) => seconds(median(cold[m]!))),
    `${warm.load.toFixed(0)} ms`,
    ...modes.map((m) => `${median(warm.times[m]!).toFixed(1)} ms`)
  ])
}

const [sqlite, pg] = [answers.get("SQLite")!, answers.get("PostgreSQL")!]
const same = sqlite.filter((out, i) => out === pg[i]).length
console.log(
  "\n| store | index (wall, peak RSS) | unchanged re-run | size | query lexical | query vector | query hybrid | " +
    "warm: open snapshot | warm lexical | warm vector | warm hybrid |"
)
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (const row of rows) console.log(`| ${row.join(" | ")} |`)
console.log(`\nidentical answers (query --json, SQLite vs PostgreSQL): ${same} of ${sqlite.length}`)

if (!values.keep) {
  await onServer(server, (sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`)
  if (values.dir === undefined) rmSync(dir, { recursive: true, force: true })
}
if (same !== sqlite.length) process.exit(1)
