/**
 * `npm run bench:vectors -- [--rows N] [--dims D] [--queries Q]`: exact vector top 10 over random rows (default
 * 1M × 384), FuncPipe's engine against usearch's exact search (SIMD, one thread) and a plain JavaScript float32 scan,
 * in one process, interleaved query by query. Every FuncPipe answer of the float32 scan is checked against the
 * float64 scan's (rows, scores and order bit for bit).
 */
import { loadavg } from "node:os"
import { parseArgs } from "node:util"
import { prng } from "./Corpus.ts"
import { count, fixed, markdownTable, median, ms, p95 } from "./Table.ts"
import { engineTop, engineView, plainScan, randomQuery, randomVectors } from "./VectorScan.ts"

const { values: flags } = parseArgs({
  options: {
    rows: { type: "string", default: "1000000" },
    dims: { type: "string", default: "384" },
    queries: { type: "string", default: "30" },
    "no-float64": { type: "boolean", default: false }
  }
})
const ROWS = Number(flags.rows)
const DIMS = Number(flags.dims)
const QUERIES = Number(flags.queries)
const K = 10
const WARM_UPS = 3

interface Usearch {
  readonly exactSearch: (
    dataset: Float32Array,
    queries: Float32Array,
    dimensions: number,
    count: number,
    metric: string,
    threads?: number
  ) => { readonly keys: BigUint64Array; readonly distances: Float32Array }
  readonly MetricKind: { readonly Cos: string }
}
const usearch = await import("usearch").then(
  (m) => (m.default ?? m) as unknown as Usearch,
  () => undefined
)

const time = <A>(f: () => A): { readonly value: A; readonly ms: number } => {
  const start = performance.now()
  const value = f()
  return { value, ms: performance.now() - start }
}

console.error(`vectors: ${count(ROWS)} × ${DIMS}, ${QUERIES} queries, load ${loadavg()[0]!.toFixed(2)}`)
const vectors = randomVectors(ROWS, DIMS, 7)
const plain = plainScan(vectors)
const float32 = engineView(vectors, "float32")
const float64 = flags["no-float64"] ? undefined : engineView(vectors, "float64")
const random = prng(8)
const queries = Array.from({ length: QUERIES + WARM_UPS }, () => randomQuery(random, DIMS))

const times = {
  plain: [] as Array<number>,
  f32: [] as Array<number>,
  f64: [] as Array<number>,
  usearch: [] as Array<number>
}
let identical = 0
let overlap = 0
queries.forEach((q, i) => {
  const f32q = Float32Array.from(q)
  const a = time(() => engineTop(float32, q, K))
  const b = float64 === undefined ? undefined : time(() => engineTop(float64, q, K))
  const c = time(() => plain.top(f32q, K))
  const d =
    usearch === undefined
      ? undefined
      : time(() => usearch.exactSearch(vectors.f32, f32q, DIMS, K, usearch.MetricKind.Cos, 1))
  if (i < WARM_UPS) return
  times.f32.push(a.ms)
  times.plain.push(c.ms)
  if (b !== undefined) {
    times.f64.push(b.ms)
    if (JSON.stringify(a.value) === JSON.stringify(b.value)) identical++
  }
  if (d !== undefined) {
    times.usearch.push(d.ms)
    const mine = new Set(a.value.map((t) => t.position))
    overlap += [...d.value.keys].filter((key) => mine.has(Number(key))).length
  }
})

const base = usearch === undefined ? median(times.plain) : median(times.usearch)
const row = (name: string, xs: ReadonlyArray<number>) => [
  name,
  ms(median(xs)),
  ms(p95(xs)),
  `${fixed(median(xs) / base, 2)}×`
]
console.log(`## Exact vector top ${K}, ${count(ROWS)} × ${DIMS} (${QUERIES} queries after ${WARM_UPS} warm-ups)`)
console.log()
console.log(
  markdownTable(
    ["scan", "median ms", "p95 ms", usearch === undefined ? "ratio to the plain scan" : "ratio to usearch"],
    [
      ...(usearch === undefined ? [] : [row("usearch exactSearch (SIMD, 1 thread)", times.usearch)]),
      row("FuncPipe, float32 blocks (WebAssembly SIMD, exact re-scoring)", times.f32),
      ...(float64 === undefined ? [] : [row("FuncPipe, float64 blocks (before)", times.f64)]),
      row("plain JavaScript Float32Array scan", times.plain)
    ]
  )
)
console.log()
if (float64 !== undefined) {
  console.log(`float32 answers identical to float64 answers (rows, scores, order): ${identical}/${QUERIES}`)
  if (identical !== QUERIES) process.exitCode = 1
}
if (usearch !== undefined)
  console.log(`usearch's top ${K} rows found by FuncPipe: ${fixed((100 * overlap) / (QUERIES * K), 1)} %`)
