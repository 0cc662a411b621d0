/**
 * `npm run bench:ann -- [--glove-rows N] [--rows N] [--dims D] [--queries Q] [--ef 16,32,64,128,256] [--codes]`: the HNSW graph
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
import {
  buildGraph,
  codeDistance,
  codeRow,
  DEFAULT_HNSW,
  Embedder,
  FloatScanner,
  type GraphRows,
  heldRows,
  holdCodes,
  holdFloats,
  IndexStore,
  layerModel,
  layerSqlite,
  Models,
  openSnapshot,
  querySnapshot,
  readGlove,
  searchGraph,
  searchGraphBy,
  searchGraphWithin,
  topVectors
} from "@funcpipe/pipeline"
import { Context, Effect, Layer, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import { prng } from "./Corpus.ts"
import { count, fixed, markdownTable } from "./Table.ts"

const { values: flags } = parseArgs({
  options: {
    rows: { type: "string", default: "100000" },
    dims: { type: "string", default: "384" },
    queries: { type: "string", default: "1000" },
    ef: { type: "string", default: "16,32,64,128,256" },
    "glove-rows": { type: "string", default: "0" },
    // The graphs' build settings (an index's defaults unless given).
    m: { type: "string", default: String(DEFAULT_HNSW.m) },
    "ef-construction": { type: "string", default: String(DEFAULT_HNSW.efConstruction) },
    index: { type: "string" },
    model: { type: "string", default: "glove-100d" },
    "skip-sets": { type: "boolean", default: false },
    // With --segments: only the graphs of the parts, not also one over all the rows (which takes as long again).
    "parts-only": { type: "boolean", default: false },
    // Also walk each graph over i8 scan codes of its rows (`--vector-codes i8`).
    codes: { type: "boolean", default: false },
    segments: { type: "string", default: "1" }
  }
})
const K = 10
const EFS = flags.ef.split(",").map(Number)
const PARAMS = { m: Number(flags.m), efConstruction: Number(flags["ef-construction"]) }

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

/**
 * The engine's exact scan of float32 rows, ms a query: the rows held where its SIMD kernel reads them (as a server
 * holds an index's float32 vectors), each query's cosines of every row in one call, then the top 10 picked from them.
 */
const kernelScanMs = (rows: GraphRows, queries: Float32Array): number => {
  const d = rows.dimensions
  const n = rows.count * d
  const held = holdFloats(n, d, rows.count) ?? new Float32Array(n)
  held.set(rows.data.subarray(0, n))
  const scanner = new FloatScanner()
  const q = queries.length / d
  let picked = 0
  const start = performance.now()
  for (let i = 0; i < q; i++) {
    const scanned = scanner.cosines(held, rows.count, d, queries.subarray(i * d, (i + 1) * d), (cosines) => {
      const best = new Float64Array(K).fill(Number.NEGATIVE_INFINITY)
      for (let r = 0; r < cosines.length; r++) {
        const s = cosines[r]!
        if (s <= best[K - 1]!) continue
        let j = K - 1
        while (j > 0 && best[j - 1]! < s) {
          best[j] = best[j - 1]!
          j--
        }
        best[j] = s
      }
      picked += best[0]!
    })
    if (!scanned) return Number.NaN
  }
  const ms = (performance.now() - start) / q
  return Number.isFinite(picked) ? ms : Number.NaN
}

/**
 * The rows cut into `parts` graphs, as an index's segments are (one graph each): every query searches all of them,
 * each stopping where it cannot beat the `ef` nearest the ones before found (`shared bound`) or not, and the lists merge.
 */
const measureSegments = (
  name: string,
  rows: GraphRows,
  queries: Float32Array,
  parts: number,
  truth: ReadonlyArray<Int32Array>,
  exactMs: number
) => {
  const d = rows.dimensions
  const q = queries.length / d
  const size = Math.ceil(rows.count / parts)
  const built = performance.now()
  const graphs = Array.from({ length: parts }, (_, s) => {
    const count = Math.min(size, rows.count - s * size)
    const part: GraphRows = { count, dimensions: d, data: rows.data.subarray(s * size * d, (s * size + count) * d) }
    // Held once in the kernel's memory, as the store holds a segment's rows, so searches take their products in SIMD.
    const held = heldRows(part)
    return { part: held, graph: buildGraph(held, PARAMS), offset: s * size }
  })
  const buildSeconds = (performance.now() - built) / 1000
  const table: Array<Array<string>> = []
  for (const bounded of [false, true]) {
    for (const ef of EFS) {
      let hits = 0
      const start = performance.now()
      for (let i = 0; i < q; i++) {
        const query = queries.subarray(i * d, (i + 1) * d)
        const all: Array<[number, number]> = []
        let bound = Number.POSITIVE_INFINITY
        for (const { graph, offset, part } of graphs) {
          const found = searchGraphWithin(graph, part, query, Math.max(ef, K), undefined, bound)
          for (let j = 0; j < found.rows.length; j++) all.push([found.dists[j]!, offset + found.rows[j]!])
          if (bounded && all.length >= ef) bound = all.map(([dist]) => dist).sort((a, b) => a - b)[ef - 1]!
        }
        all.sort((a, b) => a[0] - b[0] || a[1] - b[1])
        const expected = new Set(truth[i])
        for (const [, row] of all.slice(0, K)) if (expected.has(row)) hits++
      }
      const ms = (performance.now() - start) / q
      table.push([
        bounded ? "shared bound" : "each alone",
        String(ef),
        fixed(hits / (q * K), 3),
        fixed(ms, 3),
        `${fixed(exactMs / ms, 1)}×`
      ])
    }
  }
  const kernelMs = kernelScanMs(rows, queries)
  for (const line of table) line.push(`${fixed(kernelMs / Number(line[3]), 1)}×`)
  console.log(
    `\n### ${name} in ${parts} graphs of ${count(size)} rows, build ${fixed(buildSeconds, 1)} s; exact scan ${fixed(exactMs, 2)} ms a query, the engine's SIMD scan ${fixed(kernelMs, 2)} ms\n`
  )
  console.log(markdownTable(["search", "efSearch", "recall@10", "ms a query", "vs exact scan", "vs SIMD scan"], table))
}

const measure = (name: string, rows: GraphRows, queries: Float32Array) => {
  const d = rows.dimensions
  const q = queries.length / d
  console.error(`${name}: ${count(rows.count)} × ${d}, ${count(q)} queries, load ${loadavg()[0]!.toFixed(2)}`)
  if (flags["parts-only"] && Number(flags.segments) > 1) {
    const exact = exactTop(rows, queries)
    console.error(`  exact scan ${fixed(exact.msPerQuery, 2)} ms a query`)
    measureSegments(name, rows, queries, Number(flags.segments), exact.truth, exact.msPerQuery)
    return
  }
  const built = performance.now()
  const held = heldRows(rows)
  const graph = buildGraph(held, PARAMS)
  const buildSeconds = (performance.now() - built) / 1000
  console.error(`  built in ${fixed(buildSeconds, 1)} s`)
  const exact = exactTop(rows, queries)
  console.error(`  exact scan ${fixed(exact.msPerQuery, 2)} ms a query`)
  // One pass first, so that every setting is timed with the code compiled.
  for (let i = 0; i < q; i++) searchGraph(graph, held, queries.subarray(i * d, (i + 1) * d), 64)
  const table: Array<Array<string>> = []
  for (const ef of EFS) {
    let hits = 0
    const start = performance.now()
    for (let i = 0; i < q; i++) {
      const found = searchGraph(graph, held, queries.subarray(i * d, (i + 1) * d), Math.max(ef, K))
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
  if (Number(flags.segments) > 1)
    measureSegments(name, rows, queries, Number(flags.segments), exact.truth, exact.msPerQuery)
  console.log(
    `\n### ${name}: ${count(rows.count)} × ${d}, build ${fixed(buildSeconds, 1)} s, exact scan ${fixed(exact.msPerQuery, 2)} ms a query\n`
  )
  console.log(markdownTable(["efSearch", "recall@10", "queries/s", "ms a query", "vs exact scan"], table))
  if (flags.codes) measureCodes(name, graph, held, queries, exact.truth, table)
}

/**
 * The same graph walked over i8 scan codes of its rows (`--vector-codes i8`), its candidates then ordered by their
 * float32 products with the query (as the engine scores what a walk finds), beside the float32 rows' walk above.
 */
const measureCodes = (
  name: string,
  graph: ReturnType<typeof buildGraph>,
  rows: GraphRows,
  queries: Float32Array,
  truth: ReadonlyArray<Int32Array>,
  floats: ReadonlyArray<ReadonlyArray<string>>
) => {
  const d = rows.dimensions
  const q = queries.length / d
  const coded = holdCodes(rows.count, d)
  for (let r = 0; r < rows.count; r++) coded.scales[r] = codeRow(rows.data, r * d, d, coded.codes, r * d)
  const search = (query: Float32Array, ef: number) => {
    const found = searchGraphBy(graph, codeDistance(coded, query), Math.max(ef, K)).rows
    const scored = Array.from(found, (row): [number, number] => {
      let s = 0
      for (let k = 0; k < d; k++) s += query[k]! * rows.data[row * d + k]!
      return [s, row]
    })
    return scored.sort((a, b) => b[0] - a[0] || a[1] - b[1]).slice(0, K)
  }
  for (let i = 0; i < q; i++) search(queries.subarray(i * d, (i + 1) * d), 64)
  const table: Array<Array<string>> = []
  for (const [e, ef] of EFS.entries()) {
    let hits = 0
    const start = performance.now()
    for (let i = 0; i < q; i++) {
      const expected = new Set(truth[i])
      for (const [, row] of search(queries.subarray(i * d, (i + 1) * d), ef)) if (expected.has(row)) hits++
    }
    const msPerQuery = (performance.now() - start) / q
    const float = floats[e]!
    table.push([String(ef), `${float[1]} → ${fixed(hits / (q * K), 3)}`, `${float[3]} → ${fixed(msPerQuery, 3)}`])
  }
  console.log(
    `\n### ${name}, walked over i8 codes: ${count(d + 8)} bytes a row in memory against float32's ${count(4 * d)}\n`
  )
  console.log(markdownTable(["efSearch", "recall@10, float32 → i8", "ms a query, float32 → i8"], table))
}

// An index built with --ann hnsw (`--index PATH`): whole queries through the engine, warm, exact against approximate.
if (flags.index !== undefined) {
  const file = flags.index
  const texts = await Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* IndexStore
        const snapshot = Option.getOrThrow(yield* store.snapshot)
        const step = Math.max(1, Math.floor(snapshot.positions / 200))
        const out: Array<string> = []
        for (let p = 0; p < snapshot.positions && out.length < 200; p += step) {
          if (snapshot.deleted?.[p] === 1) continue
          out.push(snapshot.chunkAt(p).text.split(/\s+/).slice(0, 8).join(" "))
        }
        return out
      })
    ).pipe(Effect.provide(layerSqlite(file)))
  )
  const layer = Layer.mergeAll(
    layerSqlite(file),
    layerModel(flags.model).pipe(
      Layer.provide(Models.layer),
      Layer.provide(FetchHttpClient.layer),
      Layer.provide(NodeServices.layer)
    )
  ).pipe(Layer.provideMerge(NodeServices.layer))
  const rows: Array<Array<string>> = []
  await Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const snapshot = yield* openSnapshot()
        const store = yield* IndexStore
        const ask = (text: string, options: { exact?: boolean; annCandidates?: number }) =>
          querySnapshot(snapshot, store.location, text, 10, { mode: "vector", display: false, ...options }).pipe(
            Effect.map((a) => a.results.map((r) => ({ id: `${r.chunk.docId}:${r.chunk.start}`, score: r.score }))),
            Effect.orElseSucceed((): Array<{ id: string; score: number }> => [])
          )
        const truth: Array<Array<{ id: string; score: number }>> = []
        for (const text of texts) truth.push(yield* ask(text, { exact: true }))
        const started = performance.now()
        for (const text of texts) yield* ask(text, { exact: true })
        const exactMs = (performance.now() - started) / texts.length
        // The walks through a store of their own, whose caches the exact scans above did not fill: what a server
        // that only walks holds and reads.
        const walks = yield* Layer.build(layerSqlite(file))
        const walker = Context.get(walks, IndexStore)
        const walked = yield* openSnapshot().pipe(Effect.provideService(IndexStore, walker))
        const askWalk = (text: string, annCandidates: number) =>
          querySnapshot(walked, walker.location, text, 10, { mode: "vector", display: false, annCandidates }).pipe(
            Effect.map((a) => a.results.map((r) => ({ id: `${r.chunk.docId}:${r.chunk.start}`, score: r.score }))),
            Effect.orElseSucceed((): Array<{ id: string; score: number }> => [])
          )
        // One untimed round, so that the first efSearch's figure does not carry the walks' first-time costs; then
        // paged graphs held whole, as a server comes to hold them (between its requests): the walks below read no
        // graph row from the file.
        for (const text of texts) yield* askWalk(text, EFS[0]!)
        while (walked.annWarm?.(65_536) === false) yield* Effect.yieldNow
        for (const ef of EFS) {
          let hits = 0
          let asGood = 0
          let total = 0
          const start = performance.now()
          for (const [i, text] of texts.entries()) {
            const answer = yield* askWalk(text, ef)
            const found = new Set(answer.map((r) => r.id))
            const tenth = truth[i]!.at(-1)?.score ?? -Infinity
            for (const r of truth[i]!) if (found.has(r.id)) hits++
            // A result scoring as high as the exact 10th is as good an answer, whichever of equal scores it is.
            for (const r of answer) if (r.score >= tenth) asGood++
            total += truth[i]!.length
          }
          const ms = (performance.now() - start) / texts.length
          rows.push([
            String(ef),
            fixed(hits / Math.max(1, total), 3),
            fixed(Math.min(asGood, total) / Math.max(1, total), 3),
            fixed(ms, 2),
            fixed(exactMs, 2),
            `${fixed(exactMs / ms, 1)}×`
          ])
        }
        console.log(
          `\n### ${file}: ${count(snapshot.positions)} chunks, ${snapshot.dimensions} dimensions, ${texts.length} queries\n`
        )
        console.log(
          markdownTable(["efSearch", "recall@10", "scores as high", "ms a query", "exact ms", "vs exact"], rows)
        )
        // The search alone, as ann-benchmarks times it: the queries' vectors made first (untimed), then the top 10 by
        // the exact scan and through the graphs (the store's walk and exact scores), each query both ways in turn.
        const vectors = (yield* Embedder.use((e) => e.embedMany(texts))).map((e) => e.vector)
        const searchRows: Array<Array<string>> = []
        for (const ef of EFS) {
          let exactTotal = 0
          let walkTotal = 0
          let hits = 0
          for (const vector of vectors) {
            const t0 = performance.now()
            const truth = topVectors(snapshot, vector, 10)
            const t1 = performance.now()
            const found = topVectors(walked, vector, 10, undefined, ef)
            walkTotal += performance.now() - t1
            exactTotal += t1 - t0
            const truthSet = new Set(truth.map((top) => top.position))
            for (const top of found) if (truthSet.has(top.position)) hits++
          }
          searchRows.push([
            String(ef),
            fixed(hits / (10 * vectors.length), 3),
            fixed(walkTotal / vectors.length, 2),
            fixed(exactTotal / vectors.length, 2),
            `${fixed(exactTotal / walkTotal, 1)}×`
          ])
        }
        console.log(`\nThe search alone (query vectors given):\n`)
        console.log(markdownTable(["efSearch", "recall@10", "ms a query", "exact ms", "vs exact"], searchRows))
      })
    ).pipe(Effect.provide(layer))
  )
}

// The GloVe words: rows, with 1,000 of them (evenly spaced) held out as queries.
if (!flags["skip-sets"])
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
if (!flags["skip-sets"]) {
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
