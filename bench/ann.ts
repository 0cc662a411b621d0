/**
 * `npm run bench:ann -- [--glove-rows N] [--rows N] [--dims D] [--queries Q] [--ef 16,32,64,128,256]`: the HNSW graph
 * (packages/pipeline/src/search/Hnsw.ts) against the exact scan of the same rows, as ann-benchmarks measures it:
 * build time, recall@10 against exact search, and queries per second on one thread, over a range of `efSearch`.
 *
 * Two sets: the `glove-100d` word vectors (every word a row; 1,000 rows held out as queries; installed by
 * `funcpipe models install glove-100d` into $FUNCPIPE_MODELS, which CI sets to build/models), and synthetic clustered
 * rows (default 100k × 384; clusters, as real embeddings have, rather than uniform noise, which no index can beat a
 * scan on).
 */
import { loadavg } from "node:os"
import { parseArgs } from "node:util"
import { NodeServices } from "@effect/platform-node"
import { buildGraph, type GraphRows, readGlove, searchGraph } from "@funcpipe/pipeline"
import { Effect } from "effect"
import { prng } from "./Corpus.ts"
import { count, fixed, markdownTable } from "./Table.ts"

const { values: flags } = parseArgs({
  options: {
    rows: { type: "string", default: "100000" },
    dims: { type: "string", default: "384" },
    queries: { type: "string", default: "1000" },
    ef: { type: "string", default: "16,32,64,128,256" },
    "glove-rows": { type: "string", default: "0" }
  }
})
const K = 10
const EFS = flags.ef.split(",").map(Number)

/** Rows scaled to unit length (all-zero rows stay zero). */
const normalize = (data: Float32Array, d: number) => {
  for (let r = 0; r * d < data.length; r++) {
    let n = 0
    for (let k = 0; k < d; k++) n += data[r * d + k]! ** 2
    if (n === 0) continue
    const s = 1 / Math.sqrt(n)
    for (let k = 0; k < d; k++) data[r * d + k]! *= s
  }
  return data
}

/** The exact top 10 of each query by cosine (a plain scan), and the time one query took on average. */
const exactTop = (rows: GraphRows, queries: Float32Array) => {
  const d = rows.dimensions
  const q = queries.length / d
  const truth: Array<Int32Array> = []
  const start = performance.now()
  for (let i = 0; i < q; i++) {
    const best = new Float64Array(K).fill(-Infinity)
    const ids = new Int32Array(K).fill(-1)
    for (let r = 0; r < rows.count; r++) {
      let s = 0
      for (let k = 0; k < d; k++) s += queries[i * d + k]! * rows.data[r * d + k]!
      if (s <= best[K - 1]!) continue
      let j = K - 1
      while (j > 0 && best[j - 1]! < s) {
        best[j] = best[j - 1]!
        ids[j] = ids[j - 1]!
        j--
      }
      best[j] = s
      ids[j] = r
    }
    truth.push(ids)
  }
  return { truth, msPerQuery: (performance.now() - start) / q }
}

const measure = (name: string, rows: GraphRows, queries: Float32Array) => {
  const d = rows.dimensions
  const q = queries.length / d
  console.error(`${name}: ${count(rows.count)} × ${d}, ${count(q)} queries, load ${loadavg()[0]!.toFixed(2)}`)
  const built = performance.now()
  const graph = buildGraph(rows)
  const buildSeconds = (performance.now() - built) / 1000
  console.error(`  built in ${fixed(buildSeconds, 1)} s`)
  const exact = exactTop(rows, queries)
  console.error(`  exact scan ${fixed(exact.msPerQuery, 2)} ms a query`)
  // One pass first, so that every setting is timed with the code compiled.
  for (let i = 0; i < q; i++) searchGraph(graph, rows, queries.subarray(i * d, (i + 1) * d), 64)
  const table: Array<Array<string>> = []
  for (const ef of EFS) {
    let hits = 0
    const start = performance.now()
    for (let i = 0; i < q; i++) {
      const found = searchGraph(graph, rows, queries.subarray(i * d, (i + 1) * d), Math.max(ef, K))
      const truth = new Set(exact.truth[i])
      for (let j = 0; j < Math.min(K, found.length); j++) if (truth.has(found[j]!)) hits++
    }
    const msPerQuery = (performance.now() - start) / q
    table.push([
      String(ef),
      fixed(hits / (q * K), 3),
      fixed(1000 / msPerQuery, 0),
      fixed(msPerQuery, 3),
      `${fixed(exact.msPerQuery / msPerQuery, 1)}×`
    ])
  }
  console.log(
    `\n### ${name}: ${count(rows.count)} × ${d}, build ${fixed(buildSeconds, 1)} s, exact scan ${fixed(exact.msPerQuery, 2)} ms a query\n`
  )
  console.log(markdownTable(["efSearch", "recall@10", "queries/s", "ms a query", "vs exact scan"], table))
}

// The GloVe words: rows, with 1,000 of them (evenly spaced) held out as queries.
try {
  const { dimensions: d, vectors } = await Effect.runPromise(
    readGlove().pipe(
      Effect.mapError((e) => new Error(e.message)),
      Effect.provide(NodeServices.layer)
    )
  )
  const total = Number(flags["glove-rows"]) || vectors.length / d
  const held = Math.min(Number(flags.queries), 1000)
  const every = Math.floor(total / held)
  const rows = new Float32Array((total - held) * d)
  const queries = new Float32Array(held * d)
  let r = 0
  let h = 0
  for (let i = 0; i < total; i++) {
    const target = i % every === 0 && h < held ? queries.subarray(h++ * d) : rows.subarray(r++ * d)
    for (let k = 0; k < d; k++) target[k] = vectors[i * d + k]!
  }
  measure(
    "glove-100d words",
    { count: r, dimensions: d, data: normalize(rows.subarray(0, r * d), d) },
    normalize(queries, d)
  )
} catch (error) {
  console.error(
    `glove-100d skipped (${error instanceof Error ? error.message : String(error)}); install it with funcpipe models install glove-100d`
  )
}

// Synthetic clustered rows: 1,000 centres, each row a centre plus noise.
{
  const n = Number(flags.rows)
  const d = Number(flags.dims)
  const random = prng(11)
  const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random())
  const centres = Float32Array.from({ length: 1000 * d }, gauss)
  const make = (count: number) => {
    const out = new Float32Array(count * d)
    for (let i = 0; i < count; i++) {
      const c = Math.floor(random() * 1000)
      for (let k = 0; k < d; k++) out[i * d + k] = centres[c * d + k]! + 0.6 * gauss()
    }
    return normalize(out, d)
  }
  measure("synthetic clusters", { count: n, dimensions: d, data: make(n) }, make(Math.min(Number(flags.queries), 1000)))
}
