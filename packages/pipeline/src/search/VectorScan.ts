/** Exact vector scoring over an index view: scans of decoded and coded blocks (with or without a filter), the cosine of one position, and the top k by cosine. */

import { decodeCodes, decodeRows } from "../index/VectorCodec.ts"
import type { CodedScanner } from "./CodedScan.ts"
import { type FloatScanner, marginOf } from "./FloatScan.ts"
import type { CodedBlock, DecodedBlock, FloatBlock, IndexView, PositionFilter, VectorBlock } from "./IndexView.ts"
import { keyTies, type TieOrder, type Top, TopK } from "./Ranker.ts"

/**
 * The blocks decoded, as they come: a coded or float32 block into one buffer reused from block to block (so each is
 * valid until the next is taken, as `IndexView.vectorBlocks` allows), with the same numbers and magnitudes the coded
 * and float32 scans compute.
 */
export function* decodedBlocks(blocks: Iterable<VectorBlock>, dimensions: number): Generator<DecodedBlock> {
  let vectors = new Float64Array(0)
  let magnitudes = new Float64Array(0)
  for (const block of blocks) {
    if (block.codes === undefined && block.floats === undefined) {
      yield block
      continue
    }
    const { count, offset } = block
    if (magnitudes.length < count) {
      vectors = new Float64Array(count * dimensions)
      magnitudes = new Float64Array(count)
    }
    if (block.codes !== undefined) decodeCodes(block.codes, count, dimensions, vectors, magnitudes)
    else {
      const { byteOffset, buffer } = block.floats
      const bytes = new Uint8Array(buffer, byteOffset, count * dimensions * 4)
      if (decodeRows(bytes, "f32", count, dimensions, vectors, magnitudes) !== "ok") throw block.damaged()
    }
    yield { offset, count, vectors, magnitudes }
  }
}

/** Clamps rounding overshoot of a cosine into [-1, 1]. */
// biome-ignore lint/complexity/useMathMinMax: the reference's clamp, written as its comparisons (as clampScore)
export const clamp = (raw: number): number => (raw > 1 ? 1 : raw < -1 ? -1 : raw)

/** Sums `Σ x·x` left to right, as the reference's cosine does. */
const magnitudeOf = (v: ArrayLike<number>): number => {
  let sum = 0
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!
  return Math.sqrt(sum)
}

/**
 * Visits every live row with its clamped cosine similarity to `query` (rows of magnitude 0 are passed over: their
 * cosine is undefined). Same sums in the same order as `cosineSimilarity`, so the scores are bit-identical. `floor`
 * lets a top-k caller skip rows that cannot enter; only a visit can raise it, so it is read once per block and again
 * after each visit (a call per row cost a third of a cold scan). With a `filter`, only its positions are visited.
 */
export const scanVectors = (
  view: IndexView,
  query: ArrayLike<number>,
  visit: (position: number, score: number) => void,
  floor: () => number = () => -Infinity,
  filter?: PositionFilter
): void => {
  if (filter !== undefined) {
    scanFiltered(view, query, visit, floor, filter)
    return
  }
  const d = view.dimensions
  const qLength = magnitudeOf(query)
  const q = Float64Array.from(query as ArrayLike<number>)
  const deleted = view.deleted
  let unit: Float32Array | null | undefined
  for (const block of view.vectorBlocks()) {
    if (block.codes !== undefined) {
      scanCoded(view.scratch.coded, block, d, q, qLength, deleted, visit, floor)
      continue
    }
    if (block.floats !== undefined) {
      // The query scaled to length 1 in float32, for the kernel; none for a query whose length is not finite, or
      // whose squared length is subnormal (its length is then inexact, and the scaled query not of length 1).
      if (unit === undefined) {
        unit = qLength >= 2 ** -511 && qLength < Infinity ? Float32Array.from(q, (x) => x / qLength) : null
      }
      scanFloats(view.scratch.floats, block, d, q, qLength, unit, deleted, visit, floor)
      continue
    }
    const { count, magnitudes, offset, vectors } = block
    let least = floor()
    for (let row = 0; row < count; row++) {
      const magnitude = magnitudes[row]!
      if (magnitude === 0) continue
      if (deleted !== undefined && deleted[offset + row] === 1) continue
      let dot = 0
      const base = row * d
      for (let j = 0; j < d; j++) dot += q[j]! * vectors[base + j]!
      const score = clamp(dot / (qLength * magnitude))
      if (score >= least) {
        visit(offset + row, score)
        least = floor()
      }
    }
  }
}

/**
 * `scanVectors` over a coded block: each row decoded, its magnitude summed and its dot product with the query taken in
 * one pass (the very operations, in the same order, as decoding the block first), so the block is read once. In
 * WebAssembly where it can be (`CodedScanner`, the same operations again), else by the loop below.
 */
export const scanCoded = (
  scanner: CodedScanner,
  block: CodedBlock,
  d: number,
  q: Float64Array,
  qLength: number,
  deleted: Uint8Array | undefined,
  visit: (position: number, score: number) => void,
  floor: () => number
): void => {
  const { codes, count, offset } = block
  const inKernel = scanner.cosines(codes, count, d, q, qLength, (cosines) => {
    let least = floor()
    for (let row = 0; row < count; row++) {
      const score = cosines[row]!
      // A row of magnitude 0 has a NaN cosine, which passes no floor: it is passed over, as below.
      if (score >= least && (deleted === undefined || deleted[offset + row] !== 1)) {
        visit(offset + row, score)
        least = floor()
      }
    }
  })
  if (inKernel) return
  let least = floor()
  for (let row = 0; row < count; row++) {
    const base = row * d
    let dot = 0
    let sum = 0
    for (let j = 0; j < d; j++) {
      const x = codes[base + j]! / 65535
      sum += x * x
      dot += q[j]! * x
    }
    const magnitude = Math.sqrt(sum)
    if (magnitude === 0) continue
    if (deleted !== undefined && deleted[offset + row] === 1) continue
    const score = clamp(dot / (qLength * magnitude))
    if (score >= least) {
      visit(offset + row, score)
      least = floor()
    }
  }
}

/**
 * A float32 row's cosine with the query by the float64 scan's operations, in its order (its components widen
 * exactly): NaN for a row of magnitude 0; throws the block's `damaged()` for a component that is not finite (a
 * float32's square cannot overflow a float64 sum, so the sum is finite exactly when every component is).
 */
const exactRow = (block: FloatBlock, row: number, d: number, q: Float64Array, qLength: number): number => {
  const floats = block.floats
  const base = row * d
  let dot = 0
  let sum = 0
  for (let j = 0; j < d; j++) {
    const x = floats[base + j]!
    sum += x * x
    dot += q[j]! * x
  }
  if (!(sum < Infinity)) throw block.damaged()
  return sum === 0 ? Number.NaN : clamp(dot / (qLength * Math.sqrt(sum)))
}

/**
 * `scanVectors` over a float32 block: the kernel's float32 cosines (`FloatScanner`) rule out every row that is more
 * than their error bound below the floor, and the rest are scored exactly (`exactRow`), so the rows visited and their
 * scores are those of the float64 scan. Without the kernel (or a `unit` query), every row is scored exactly.
 */
export const scanFloats = (
  scanner: FloatScanner,
  block: FloatBlock,
  d: number,
  q: Float64Array,
  qLength: number,
  unit: Float32Array | null,
  deleted: Uint8Array | undefined,
  visit: (position: number, score: number) => void,
  floor: () => number
): void => {
  const { count, floats, offset } = block
  const margin = marginOf(d)
  const inKernel =
    unit !== null &&
    scanner.cosines(floats, count, d, unit, (cosines) => {
      let least = floor()
      for (let row = 0; row < count; row++) {
        const approximate = cosines[row]!
        // A NaN cosine, or the kernel's +Infinity mark, is never ruled out; nor is any row while the floor is -1 or
        // lower, since a score below -1 is clamped up to it.
        if (least > -1 && approximate + margin < least) continue
        if (deleted !== undefined && deleted[offset + row] === 1) {
          // A deleted row is not scored, but a damaged one (marked) is still reported, as a decoded block reports it.
          if (!(approximate < Infinity)) exactRow(block, row, d, q, qLength)
          continue
        }
        const score = exactRow(block, row, d, q, qLength)
        if (score >= least) {
          visit(offset + row, score)
          least = floor()
        }
      }
    })
  if (inKernel) return
  let least = floor()
  for (let row = 0; row < count; row++) {
    const score = exactRow(block, row, d, q, qLength)
    if (deleted !== undefined && deleted[offset + row] === 1) continue
    if (score >= least) {
      visit(offset + row, score)
      least = floor()
    }
  }
}

/**
 * `scanVectors` restricted to a filter's positions: the listed ones alone (walking the blocks alongside, as both
 * ascend), or every row whose `allowed` byte is set. The filter holds live positions only.
 */
const scanFiltered = (
  view: IndexView,
  query: ArrayLike<number>,
  visit: (position: number, score: number) => void,
  floor: () => number,
  filter: PositionFilter
): void => {
  const d = view.dimensions
  const qLength = magnitudeOf(query)
  const q = Float64Array.from(query as ArrayLike<number>)
  const blocks = decodedBlocks(view.vectorBlocks(), d)
  const { allowed, listed } = filter
  // The loops are those of `scanVectors`, written out again so the hot path stays one tight loop.
  let least = floor()
  if (listed !== undefined) {
    const taken = blocks[Symbol.iterator]()
    let next = taken.next()
    for (let i = 0; i < listed.length; i++) {
      const position = listed[i]!
      while (!next.done && position >= next.value.offset + next.value.count) next = taken.next()
      if (next.done) return
      const { magnitudes, offset, vectors } = next.value
      const row = position - offset
      const magnitude = magnitudes[row]!
      if (row < 0 || magnitude === 0) continue
      let dot = 0
      const base = row * d
      for (let j = 0; j < d; j++) dot += q[j]! * vectors[base + j]!
      const score = clamp(dot / (qLength * magnitude))
      if (score >= least) {
        visit(position, score)
        least = floor()
      }
    }
    return
  }
  for (const block of blocks) {
    const { count, magnitudes, offset, vectors } = block
    for (let row = 0; row < count; row++) {
      if (allowed[offset + row] !== 1) continue
      const magnitude = magnitudes[row]!
      if (magnitude === 0) continue
      let dot = 0
      const base = row * d
      for (let j = 0; j < d; j++) dot += q[j]! * vectors[base + j]!
      const score = clamp(dot / (qLength * magnitude))
      if (score >= least) {
        visit(offset + row, score)
        least = floor()
      }
    }
  }
}

/** The cosine of one position with the query, or null where undefined (zero vector). */
export const cosineAt = (view: IndexView, query: ArrayLike<number>, position: number): number | null => {
  for (const stored of view.vectorBlocks()) {
    // Only the block holding the position is decoded (a coded one), not every block before it.
    if (position < stored.offset || position >= stored.offset + stored.count) continue
    for (const block of decodedBlocks([stored], view.dimensions)) {
      const row = position - block.offset
      const magnitude = block.magnitudes[row]!
      if (magnitude === 0) return null
      let dot = 0
      for (let j = 0; j < view.dimensions; j++) dot += query[j]! * block.vectors[row * view.dimensions + j]!
      return clamp(dot / (magnitudeOf(query) * magnitude))
    }
  }
  return null
}

/** How a view's equal scores are ordered: by its documents' order when it has that at hand, else by reading keys. */
export const tiesOf = (view: IndexView): TieOrder => view.tieOrder?.() ?? keyTies(view.keyOf)

/**
 * Whether a filtered query scans its few allowed rows exactly rather than walking the graph: a walk through rows the
 * filter refuses costs about `ef / share` visits, a scan `share · rows`; they are even near `share = √(ef / rows)`,
 * and the scan, being exact, is taken up to twice that.
 */
export const scansFiltered = (filter: PositionFilter, ef: number, rows: number): boolean =>
  filter.count <= 2 * Math.sqrt(ef * Math.max(rows, 1))

/**
 * The best `k` chunks by cosine, scanning with the heap's threshold so most rows cost one comparison. With `ef` and
 * a view that has an approximate index, the index proposes the candidates (at least `k` a graph) and only they are
 * scored, exactly, by the same operations as the scan, and ranked in the same order.
 */
export const topVectors = (
  view: IndexView,
  vector: ArrayLike<number>,
  k: number,
  filter?: PositionFilter,
  ef?: number
): Array<Top> => {
  const exact = () => {
    const heap = new TopK(k, tiesOf(view))
    scanVectors(
      view,
      vector,
      (position, score) => heap.offer(position, score),
      () => heap.threshold,
      filter
    )
    return heap.take()
  }
  if (ef === undefined || view.annSearch === undefined) return exact()
  // At least k candidates past the k asked for where k reaches ef (a hybrid query's depth of 1,000): with no more
  // than k, the k-th would be the list's last, at its cut, and the answer always the exact scan's.
  const wide = Math.max(ef, k + Math.min(k, ef))
  if (filter !== undefined && scansFiltered(filter, wide, view.liveChunks)) return exact()
  const found = view.annSearch(vector, wide, filter, k)
  const heap = new TopK(k, tiesOf(view))
  for (let i = 0; i < found.positions.length; i++) {
    const score = found.scores[i]!
    if (!Number.isNaN(score) && score >= heap.threshold) heap.offer(found.positions[i]!, score)
  }
  const top = heap.take()
  // Many rows of one score (a template's chunks, say) may fill a graph's list: the rows of that score it cut off
  // could rank before those it kept (ties go by doc id, not by what the graph reached), so that top k is made by the
  // exact scan. The graph ordered rows by float32 distances, so "at the cut" allows for their error.
  if (k === 0 || found.cutAt === Number.NEGATIVE_INFINITY) return top
  if (top.length === k && top[k - 1]!.score > found.cutAt + marginOf(view.dimensions)) return top
  return exact()
}
