/** Top-k selection in the ranking order over per-chunk scores, for chunks and for documents, and rank fusion. */
import type { Chunk } from "@funcpipe/domain/Chunk"
import { rankingOrder, type RankKey } from "@funcpipe/domain/Ranking"

/** A selected chunk: its position in the index's chunk list and its score. */
export interface Top {
  readonly position: number
  readonly score: number
}

interface Candidate extends RankKey {
  readonly position: number
}

const keyOf = (chunks: ReadonlyArray<Chunk>, position: number, score: number): Candidate => {
  const chunk = chunks[position]!
  return { score, docId: chunk.docId, start: chunk.start, end: chunk.end, text: chunk.text, position }
}

/** Max-heap on the ranking order: the root is the worst of the kept candidates. */
const siftDown = (heap: Array<Candidate>, from: number): void => {
  const n = heap.length
  let i = from
  for (;;) {
    const left = 2 * i + 1
    const right = left + 1
    let worst = i
    if (left < n && rankingOrder(heap[left]!, heap[worst]!) > 0) worst = left
    if (right < n && rankingOrder(heap[right]!, heap[worst]!) > 0) worst = right
    if (worst === i) return
    const tmp = heap[i]!
    heap[i] = heap[worst]!
    heap[worst] = tmp
    i = worst
  }
}

const siftUp = (heap: Array<Candidate>, from: number): void => {
  let i = from
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (rankingOrder(heap[i]!, heap[parent]!) <= 0) return
    const tmp = heap[i]!
    heap[i] = heap[parent]!
    heap[parent] = tmp
    i = parent
  }
}

/** Keeps the best `k` of the offered candidates in a bounded heap; `take` returns them in the ranking order. */
const boundedHeap = (k: number) => {
  const heap: Array<Candidate> = []
  return {
    /** Offers a candidate; `make` builds its key only if its score can beat or tie the worst kept one. */
    offer: (score: number, make: () => Candidate) => {
      if (heap.length < k) {
        heap.push(make())
        siftUp(heap, heap.length - 1)
      } else if (k > 0 && score >= heap[0]!.score) {
        const next = make()
        if (rankingOrder(next, heap[0]!) < 0) {
          heap[0] = next
          siftDown(heap, 0)
        }
      }
    },
    take: (): Array<Top> => heap.sort(rankingOrder).map((c) => ({ position: c.position, score: c.score }))
  }
}

/** Which scores are candidates: vector scores unless NaN (undefined cosine), lexical and fused scores above 0. */
export type IsCandidate = (score: number) => boolean
export const anyScore: IsCandidate = (score) => !Number.isNaN(score)
export const positiveScore: IsCandidate = (score) => score > 0

/**
 * The best `k` chunks by `scores[position]` in the ranking order (score descending, then doc id, start, end, text by
 * code point). Extra memory is O(k), never a sort of all chunks.
 */
export const topChunks = (
  scores: Float64Array,
  chunks: ReadonlyArray<Chunk>,
  k: number,
  isCandidate: IsCandidate
): Array<Top> => {
  const heap = boundedHeap(k)
  for (let position = 0; position < scores.length; position++) {
    const score = scores[position]!
    if (isCandidate(score)) heap.offer(score, () => keyOf(chunks, position, score))
  }
  return heap.take()
}

/**
 * The best `k` documents, each ranked by its best chunk (the first of its chunks in the ranking order), in the
 * ranking order of those best chunks. Returns the best chunk of each document.
 */
export const topDocuments = (
  scores: Float64Array,
  chunks: ReadonlyArray<Chunk>,
  k: number,
  isCandidate: IsCandidate
): Array<Top> => {
  const best = new Map<string, Candidate>()
  for (let position = 0; position < scores.length; position++) {
    const score = scores[position]!
    if (!isCandidate(score)) continue
    const docId = chunks[position]!.docId
    const current = best.get(docId)
    if (current === undefined || score >= current.score) {
      const next = keyOf(chunks, position, score)
      if (current === undefined || rankingOrder(next, current) < 0) best.set(docId, next)
    }
  }
  const heap = boundedHeap(k)
  for (const candidate of best.values()) heap.offer(candidate.score, () => candidate)
  return heap.take()
}

/** The reciprocal rank fusion constant: ranks deeper than it contribute little. */
export const RRF_K = 60

/**
 * Reciprocal rank fusion: each chunk scores `Σ 1 / (RRF_K + rank)` over the rankings it appears in (ranks from 1),
 * summed in the order the rankings are given; a chunk in no ranking scores 0.
 */
export const reciprocalRankFusion = (rankings: ReadonlyArray<ReadonlyArray<Top>>, count: number): Float64Array => {
  const fused = new Float64Array(count)
  for (const ranking of rankings) {
    ranking.forEach((top, i) => {
      fused[top.position] = fused[top.position]! + 1 / (RRF_K + i + 1)
    })
  }
  return fused
}
