/** The in-memory vector scan comparison: a plain Float32Array top-k scan against FuncPipe's engine on an IndexView. */

import { Bm25Params, type RankKey, rankingOrder } from "@funcpipe/domain"
import {
  cosineSimilarity,
  holdFloats,
  type IndexView,
  ScoringScratch,
  scoreQuery,
  type Top,
  topChunksOf,
  type VectorBlock
} from "@funcpipe/pipeline"
import { Result } from "effect"
import { prng } from "./Corpus.ts"

/** `rows` random vectors of `dimensions` components in [-1, 1), the same numbers as float32 and as float64. */
export interface RandomVectors {
  readonly rows: number
  readonly dimensions: number
  readonly f32: Float32Array
  /** The same values widened, made on first use (at 1M × 384 it is 3 GB). */
  readonly f64: Float64Array
}

/** Seeded random vectors; the float64 copy holds the float32 values exactly, so both scans see the same data. */
export const randomVectors = (rows: number, dimensions: number, seed: number): RandomVectors => {
  const random = prng(seed)
  const f32 = new Float32Array(rows * dimensions)
  for (let i = 0; i < f32.length; i++) f32[i] = random() * 2 - 1
  let f64: Float64Array | undefined
  return {
    rows,
    dimensions,
    f32,
    get f64() {
      f64 ??= Float64Array.from(f32)
      return f64
    }
  }
}

/** A random query vector of `dimensions` components in [-1, 1). */
export const randomQuery = (random: () => number, dimensions: number): Array<number> =>
  Array.from({ length: dimensions }, () => Math.fround(random() * 2 - 1))

/** A plain scan: one contiguous Float32Array, norms computed once, a bounded min-heap of `k` on typed arrays. */
export interface PlainScan {
  readonly top: (query: Float32Array, k: number) => Array<Top>
}

export const plainScan = ({ dimensions: d, f32, rows }: RandomVectors): PlainScan => {
  const norms = new Float32Array(rows)
  for (let row = 0; row < rows; row++) {
    let sum = 0
    for (let j = 0; j < d; j++) sum += f32[row * d + j]! * f32[row * d + j]!
    norms[row] = Math.sqrt(sum)
  }
  return {
    top: (query, k) => {
      let qq = 0
      for (let j = 0; j < d; j++) qq += query[j]! * query[j]!
      const qNorm = Math.sqrt(qq)
      const ids = new Int32Array(k)
      const scores = new Float64Array(k)
      let size = 0
      for (let row = 0, base = 0; row < rows; row++, base += d) {
        let dot = 0
        for (let j = 0; j < d; j++) dot += query[j]! * f32[base + j]!
        const norm = norms[row]!
        if (norm === 0) continue
        const score = dot / (qNorm * norm)
        if (size < k) {
          // Sift up: the root is the lowest score kept.
          let i = size++
          while (i > 0) {
            const parent = (i - 1) >> 1
            if (scores[parent]! <= score) break
            scores[i] = scores[parent]!
            ids[i] = ids[parent]!
            i = parent
          }
          scores[i] = score
          ids[i] = row
        } else if (score > scores[0]!) {
          let i = 0
          for (;;) {
            const left = 2 * i + 1
            if (left >= size) break
            const right = left + 1
            const low = right < size && scores[right]! < scores[left]! ? right : left
            if (scores[low]! >= score) break
            scores[i] = scores[low]!
            ids[i] = ids[low]!
            i = low
          }
          scores[i] = score
          ids[i] = row
        }
      }
      const out: Array<Top> = []
      for (let i = 0; i < size; i++) out.push({ position: ids[i]!, score: scores[i]! })
      return out.sort((a, b) => b.score - a.score || a.position - b.position)
    }
  }
}

/** The ranking key of a synthetic position: doc id `d<position>`, an empty span and text. */
export const syntheticKey = (position: number): RankKey => ({
  score: 0,
  docId: `d${position}`,
  start: 0,
  end: 0,
  text: ""
})

/**
 * The vectors as FuncPipe's engine reads an index, nothing deleted, keys from `syntheticKey`, lexical parts empty (the
 * view is only scanned for vectors). `float32`: as the SQLite store keeps a float32 model's vectors for a server (one
 * block per segment, held in the scan kernel's memory); `float64`: one decoded block of float64 rows with magnitudes,
 * as every vector was kept before (and as blocks of other encodings still are).
 */
export const engineView = (
  { dimensions, f32, f64, rows }: RandomVectors,
  form: "float32" | "float64" = "float32"
): IndexView => {
  let block: VectorBlock
  if (form === "float32") {
    const floats = holdFloats(f32.length, dimensions, rows) ?? new Float32Array(f32.length)
    floats.set(f32)
    block = { offset: 0, count: rows, floats, damaged: () => new Error("a vector is not finite") }
  } else {
    const magnitudes = new Float64Array(rows)
    for (let row = 0; row < rows; row++) {
      let sum = 0
      for (let j = 0; j < dimensions; j++) sum += f64[row * dimensions + j]! * f64[row * dimensions + j]!
      magnitudes[row] = Math.sqrt(sum)
    }
    block = { offset: 0, count: rows, vectors: f64, magnitudes }
  }
  return {
    scratch: new ScoringScratch(),
    dimensions,
    positions: rows,
    liveChunks: rows,
    averageLength: 0,
    lengths: new Uint32Array(rows),
    deleted: undefined,
    postings: () => [],
    vectorBlocks: () => [block],
    keyOf: syntheticKey,
    documents: () => ({ docOf: new Int32Array(rows), count: rows === 0 ? 0 : 1, order: new Int32Array(1) })
  }
}

/** FuncPipe's top `k` by cosine, as `queryIndex` selects them in vector mode. */
export const engineTop = (view: IndexView, vector: ReadonlyArray<number>, k: number): Array<Top> => {
  const query = { terms: [], vector }
  return topChunksOf(view, scoreQuery(view, query, "vector", Bm25Params.default), k, query)
}

/** The top `k` by a full sort of every row's `cosineSimilarity` with `rankingOrder`: slow and obviously right. */
export const fullSortTop = (
  { dimensions, f64, rows }: RandomVectors,
  vector: ReadonlyArray<number>,
  k: number
): Array<RankKey> => {
  const keys: Array<RankKey> = []
  for (let row = 0; row < rows; row++) {
    const cosine = cosineSimilarity(vector, f64.subarray(row * dimensions, (row + 1) * dimensions))
    if (Result.isSuccess(cosine)) keys.push({ ...syntheticKey(row), score: cosine.success })
  }
  return keys.sort(rankingOrder).slice(0, k)
}
