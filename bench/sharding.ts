/**
 * Single node against sharded serving on this machine: one PostgreSQL index, answered warm in one process, and by 2
 * and 8 shards on 2 runner processes (`funcpipe serve --cluster`) with this process as the entry point. Prints query
 * latency (sequential) and throughput (concurrent) per mode, and fails if any sharded answer differs from the single
 * node's by a bit.
 * Usage: node -C @funcpipe/source bench/sharding.ts [--mb 20] [--queries 10] [--concurrency 8] [--url postgres://…]
 * The server comes from --url, else $FUNCPIPE_BENCH_PG, else $FUNCPIPE_TEST_PG; the index goes in a schema of its own.
 */

import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { NodeServices } from "@effect/platform-node"
import { Embedder, IndexStore, layerIndexStore, openSnapshot, querySnapshot } from "@funcpipe/pipeline"
import { queryShards } from "@funcpipe/pipeline/cluster"
import { clusterPrefix, layerEntry } from "@funcpipe/server"
import { Effect, Layer } from "effect"
import { CLI_SOURCE, REPO_ROOT, runNode } from "./Child.ts"
import { phraseQueries, writeJsonlCorpus } from "./Corpus.ts"
import { benchServer, inSchema, onServer } from "./Pg.ts"
import { markdownTable, median, ms, p95 } from "./Table.ts"

const { values } = parseArgs({
  options: {
    mb: { type: "string", default: "20" },
    queries: { type: "string", default: "10" },
    concurrency: { type: "string", default: "8" },
    url: { type: "string" },
    seed: { type: "string", default: "42" }
  }
})
const server = benchServer(values.url)
const seed = Number(values.seed)
const concurrency = Number(values.concurrency)
const dir = mkdtempSync(join(tmpdir(), "funcpipe-bench-shards-"))
const schema = `bench_shards_${process.pid}`
const url = inSchema(server, schema)
const modes = ["lexical", "vector", "hybrid"] as const

const queries = phraseQueries(seed + 1, Number(values.queries))

const runners: Array<ChildProcess> = []
/** Stops a runner: SIGTERM, then SIGKILL if it has not exited within 20 s (its tables are dropped next). */
const stop = (proc: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve()
    const timer = setTimeout(() => proc.kill("SIGKILL"), 20_000)
    proc.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    proc.kill("SIGTERM")
  })

const cleanUp = async () => {
  await Promise.all(runners.map(stop))
  const prefix = clusterPrefix({ index: url })
  await onServer(server, (sql) =>
    Effect.gen(function* () {
      yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
      const tables = yield* sql<{ readonly name: string }>`
        SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND starts_with(tablename, ${prefix})`
      for (const { name } of tables) yield* sql`DROP TABLE IF EXISTS ${sql(name)} CASCADE`
    })
  )
  rmSync(dir, { recursive: true, force: true })
}

const startRunner = (port: number) =>
  new Promise<void>((resolve, reject) => {
    const args = ["-C", "@funcpipe/source", CLI_SOURCE, "serve", "--cluster", "--index", url]
    args.push("--runner-port", String(port))
    const proc = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ["ignore", "ignore", "pipe"] })
    runners.push(proc)
    let errors = ""
    proc.stderr!.on("data", (chunk) => {
      errors += String(chunk)
      if (errors.includes("runner on")) resolve()
    })
    proc.once("exit", (code) => reject(new Error(`runner exited with ${code}: ${errors}`)))
  })

type Row = readonly [number, string, number, number, string]
type Timed = { readonly rows: ReadonlyArray<Row>; readonly ms: number }

/** Each (query, mode) once sequentially (latency), then all of them `concurrency` at a time (throughput). */
const measure = <E, R>(ask: (q: string, mode: (typeof modes)[number]) => Effect.Effect<ReadonlyArray<Row>, E, R>) =>
  Effect.gen(function* () {
    const cases = queries.flatMap((q) => modes.map((mode) => [q, mode] as const))
    for (const [q, mode] of cases.slice(0, 6)) yield* ask(q, mode) // warm-up: loads, JIT
    const sequential: Array<Timed & { readonly mode: string }> = []
    for (const [q, mode] of cases) {
      const t = performance.now()
      const rows = yield* ask(q, mode)
      sequential.push({ rows, ms: performance.now() - t, mode })
    }
    const started = performance.now()
    const rounds = 3
    yield* Effect.forEach(Array.from({ length: rounds }, () => cases).flat(), ([q, mode]) => ask(q, mode), {
      concurrency
    })
    const qps = (rounds * cases.length) / ((performance.now() - started) / 1000)
    return { sequential, qps }
  })

try {
  const corpus = join(dir, "corpus.jsonl")
  const written = await writeJsonlCorpus(corpus, Number(values.mb) * 1_000_000, seed)
  const indexed = await runNode([CLI_SOURCE, "index", corpus, "--index", url, "--json"], join(dir, "rss"))
  if (indexed.code !== 0) throw new Error(`indexing failed: ${indexed.stderr}`)
  const { chunks } = JSON.parse(indexed.stdout) as { chunks: number }
  console.error(`corpus: ${written.docs} documents, ${chunks} chunks; ${queries.length} queries per mode`)

  const local = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)
  const single = await Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* IndexStore
      const t = performance.now()
      const snapshot = yield* openSnapshot()
      const load = performance.now() - t
      const result = yield* measure((q, mode) =>
        Effect.map(querySnapshot(snapshot, store.location, q, 10, { mode }), ({ results }) =>
          results.map((r) => [r.score, r.chunk.docId, r.chunk.start, r.chunk.end, r.chunk.text] as Row)
        )
      )
      return { ...result, load }
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(layerIndexStore(url), local)))
  )

  await startRunner(34500 + (process.pid % 500))
  await startRunner(35000 + (process.pid % 500))
  const sharded = await Effect.runPromise(
    Effect.gen(function* () {
      const out = []
      for (const shards of [2, 8]) {
        const t = performance.now()
        // The first query loads every shard from the store (in parallel over the two runners).
        yield* queryShards(queries[0]!, 10, { shards, mode: "lexical", timeout: "10 minutes" })
        const load = performance.now() - t
        const result = yield* measure((q, mode) =>
          Effect.map(queryShards(q, 10, { shards, mode, timeout: "60 seconds" }), ({ results }) =>
            results.map((r) => [r.score, r.chunk.docId, r.chunk.start, r.chunk.end, r.chunk.text] as Row)
          )
        )
        out.push({ shards, load, ...result })
      }
      return out
    }).pipe(Effect.provide(Layer.merge(layerEntry({ index: url }), local)))
  )

  let differ = 0
  const rows = [
    { name: "single node (1 process)", ...single },
    ...sharded.map((s) => ({ name: `${s.shards} shards on 2 runners`, ...s }))
  ].map((run) => {
    differ += run.sequential.filter(
      (t, i) => JSON.stringify(t.rows) !== JSON.stringify(single.sequential[i]!.rows)
    ).length
    const of = (mode: string) => run.sequential.filter((t) => t.mode === mode).map((t) => t.ms)
    return [
      run.name,
      `${ms(run.load)} ms`,
      ...modes.map((m) => `${ms(median(of(m)))} / ${ms(p95(of(m)))}`),
      `${run.qps.toFixed(1)}`
    ]
  })
  console.log(
    `\n${written.docs} documents, ${chunks} chunks, ${queries.length} queries per mode, top 10; ` +
      `latency median / p95 in ms, sequential; throughput all modes, ${concurrency} at a time\n`
  )
  console.log(markdownTable(["serving", "load (first query)", "lexical", "vector", "hybrid", "queries/s"], rows))
  // Each runner's peak resident memory so far (Linux), and this process's (the single node's snapshot was held here).
  const peaks = runners.map((proc) => {
    const status = existsSync(`/proc/${proc.pid}/status`) ? readFileSync(`/proc/${proc.pid}/status`, "utf8") : ""
    const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1]
    return kb === undefined ? "?" : `${Math.round(Number(kb) / 1024)} MB`
  })
  const own = Math.round(process.resourceUsage().maxRSS / 1024)
  console.log(`\npeak RSS: runners ${peaks.join(", ")}; this process (single node and entry point) ${own} MB`)
  const total = (1 + sharded.length) * queries.length * modes.length
  console.log(`\nidentical to the single node, to the bit: ${total - differ} of ${total} answers`)
  await cleanUp()
  if (differ > 0) process.exit(1)
  process.exit(0)
} catch (error) {
  console.error(error)
  await cleanUp()
  process.exit(1)
}
