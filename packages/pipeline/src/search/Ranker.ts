/** Top-k selection in the ranking order over scored positions, for chunks and for documents, and rank fusion. */
import type { Chunk } from "@funcpipe/domain/Chunk"
import { keyOrder, type RankKey } from "@funcpipe/domain/Ranking"

/** A selected chunk: its position in the index's chunk list and its score. */
export interface Top {
  readonly position: number
  readonly score: number
}

/**
 * The ranking key (doc id, start, end, text) of a position. Only consulted when two scores are equal, so a store can
 * look keys up lazily; the `score` field of what it returns is ignored.
 */
export type KeyOf = (position: number) => RankKey

/**
 * How two positions with equal scores are ordered: negative when `a` ranks first. It must agree with `keyOrder` on
 * the positions' keys; `keyTies` builds it from keys, and a store may supply a cheaper one that agrees.
 */
export type TieOrder = (a: number, b: number) => number

/** Caches a `KeyOf`, so a key is looked up at most once per selection. */
const cachedKeys = (keyOf: KeyOf): KeyOf => {
  const cache = new Map<number, RankKey>()
  return (position) => {
    let key = cache.get(position)
    if (key === undefined) cache.set(position, (key = keyOf(position)))
    return key
  }
}

/** The tie order of the positions' keys, each key looked up at most once. */
export const keyTies = (keyOf: KeyOf): TieOrder => {
  const cached = cachedKeys(keyOf)
  return (a, b) => keyOrder(cached(a), cached(b))
}

/**
 * The tie order of an index view's positions from its documents (see `IndexView.documents`): the documents' rank in
 * doc id order, then the position, which within one document follows (start, end). Agrees with `keyOrder` on the keys.
 */
export const documentTies =
  (documents: { readonly docOf: Int32Array; readonly order: Int32Array }): TieOrder =>
  (a, b) =>
    documents.order[documents.docOf[a]!]! - documents.order[documents.docOf[b]!]! || a - b

/** The ranking order of two scored positions: score descending, then their tie order. Negative when `a` ranks first. */
const compare = (tie: TieOrder, pa: number, sa: number, pb: number, sb: number): number => {
  if (sa !== sb) return sa > sb ? -1 : 1
  if (pa === pb) return 0
  return tie(pa, pb)
}

/**
 * Keeps the best `k` offered (position, score) pairs in the ranking order, in a bounded max-heap whose root is the
 * worst kept one. Memory is O(k); keys are looked up only for equal scores. `threshold` is the score an offer must
 * reach to have a chance, so hot loops can skip the call.
 */
export class TopK {
  private readonly positions: Int32Array
  private readonly scores: Float64Array
  private size = 0
  private readonly tie: TieOrder
  readonly k: number

  constructor(k: number, tie: TieOrder) {
    this.k = k
    this.positions = new Int32Array(Math.max(k, 0))
    this.scores = new Float64Array(Math.max(k, 0))
    this.tie = tie
  }

  /** The lowest score that can still enter: -Infinity until `k` are kept. */
  get threshold(): number {
    return this.size < this.k ? -Infinity : this.scores[0]!
  }

  /** Offers a candidate; it is kept if it ranks before the worst kept one (or fewer than `k` are kept). */
  offer(position: number, score: number): void {
    if (this.size < this.k) {
      let i = this.size++
      while (i > 0) {
        const parent = (i - 1) >> 1
        if (this.rankFirst(this.positions[parent]!, this.scores[parent]!, position, score) <= 0) break
        this.positions[i] = this.positions[parent]!
        this.scores[i] = this.scores[parent]!
        i = parent
      }
      this.positions[i] = position
      this.scores[i] = score
      return
    }
    if (this.k === 0 || score < this.scores[0]!) return
    if (compare(this.tie, position, score, this.positions[0]!, this.scores[0]!) >= 0) return
    this.siftDown(position, score)
  }

  /** Negative when (pa, sa) is worse than (pb, sb), i.e. belongs nearer the root. */
  private rankFirst(pa: number, sa: number, pb: number, sb: number): number {
    return -compare(this.tie, pa, sa, pb, sb)
  }

  private siftDown(position: number, score: number): void {
    const n = this.size
    let i = 0
    for (;;) {
      const left = 2 * i + 1
      if (left >= n) break
      const right = left + 1
      let worst = left
      if (
        right < n &&
        this.rankFirst(this.positions[right]!, this.scores[right]!, this.positions[left]!, this.scores[left]!) < 0
      ) {
        worst = right
      }
      if (this.rankFirst(this.positions[worst]!, this.scores[worst]!, position, score) >= 0) break
      this.positions[i] = this.positions[worst]!
      this.scores[i] = this.scores[worst]!
      i = worst
    }
    this.positions[i] = position
    this.scores[i] = score
  }

  /** The kept candidates, best first. */
  take(): Array<Top> {
    const out: Array<Top> = []
    for (let i = 0; i < this.size; i++) out.push({ position: this.positions[i]!, score: this.scores[i]! })
    return out.sort((a, b) => compare(this.tie, a.position, a.score, b.position, b.score))
  }
}

/** Which scores are candidates: vector scores unless NaN (undefined cosine), lexical and fused scores above 0. */
export type IsCandidate = (score: number) => boolean
export const anyScore: IsCandidate = (score) => !Number.isNaN(score)
export const positiveScore: IsCandidate = (score) => score > 0

/** Visits scored candidates: calls `visit(position, score)` once per candidate position. */
export type Candidates = (visit: (position: number, score: number) => void) => void

/** The best `k` candidates in the ranking order. */
export const topOf = (candidates: Candidates, k: number, tie: TieOrder): Array<Top> => {
  const heap = new TopK(k, tie)
  candidates((position, score) => heap.offer(position, score))
  return heap.take()
}

/**
 * The best `k` documents, each ranked by its best chunk (the first of its chunks in the ranking order), in the ranking
 * order of those best chunks; `docOf` numbers each position's document from 0 to `documents - 1`. Returns the best
 * chunk of each document. With `counts` (one slot per document), each document's slot counts its candidates.
 */
export const topDocumentsOf = (
  candidates: Candidates,
  k: number,
  tie: TieOrder,
  docOf: (position: number) => number,
  documents: number,
  counts?: Int32Array
): Array<Top> => {
  const bestPosition = new Int32Array(documents).fill(-1)
  const bestScore = new Float64Array(documents)
  candidates((position, score) => {
    const doc = docOf(position)
    if (counts !== undefined) counts[doc]!++
    const current = bestPosition[doc]!
    if (current < 0 || compare(tie, position, score, current, bestScore[doc]!) < 0) {
      bestPosition[doc] = position
      bestScore[doc] = score
    }
  })
  const heap = new TopK(k, tie)
  for (let doc = 0; doc < documents; doc++) {
    const position = bestPosition[doc]!
    if (position >= 0) heap.offer(position, bestScore[doc]!)
  }
  return heap.take()
}

/** The candidates of a dense score array: every position whose score `isCandidate` accepts. */
export const denseCandidates =
  (scores: Float64Array, isCandidate: IsCandidate): Candidates =>
  (visit) => {
    for (let position = 0; position < scores.length; position++) {
      const score = scores[position]!
      if (isCandidate(score)) visit(position, score)
    }
  }

const chunkKeys =
  (chunks: ReadonlyArray<Chunk>): KeyOf =>
  (position) => {
    const chunk = chunks[position]!
    return { score: 0, docId: chunk.docId, start: chunk.start, end: chunk.end, text: chunk.text }
  }

/**
 * The best `k` chunks by `scores[position]` in the ranking order (score descending, then doc id, start, end, text by
 * code point). Extra memory is O(k), never a sort of all chunks.
 */
export const topChunks = (
  scores: Float64Array,
  chunks: ReadonlyArray<Chunk>,
  k: number,
  isCandidate: IsCandidate
): Array<Top> => topOf(denseCandidates(scores, isCandidate), k, keyTies(chunkKeys(chunks)))

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
  const numbers = new Map<string, number>()
  const docOf = new Int32Array(chunks.length)
  chunks.forEach((chunk, position) => {
    let n = numbers.get(chunk.docId)
    if (n === undefined) numbers.set(chunk.docId, (n = numbers.size))
    docOf[position] = n
  })
  return topDocumentsOf(
    denseCandidates(scores, isCandidate),
    k,
    keyTies(chunkKeys(chunks)),
    (p) => docOf[p]!,
    numbers.size
  )
}

/** The reciprocal rank fusion constant: ranks deeper than it contribute little. */
export const RRF_K = 60

/**
 * Reciprocal rank fusion: each position scores `Σ 1 / (RRF_K + rank)` over the rankings it appears in (ranks from 1),
 * summed in the order the rankings are given. Only positions in some ranking appear in the result.
 */
export const fuseRankings = (rankings: ReadonlyArray<ReadonlyArray<Top>>): Map<number, number> => {
  const fused = new Map<number, number>()
  for (const ranking of rankings) {
    ranking.forEach((top, i) => {
      fused.set(top.position, (fused.get(top.position) ?? 0) + 1 / (RRF_K + i + 1))
    })
  }
  return fused
}

/**
 * The least a ranking's last entry counts in linear fusion: scaling to [0, 1] would give it nothing, and a chunk last
 * in both rankings would drop out of the fused one although it was found.
 */
export const LINEAR_FLOOR = 1e-6

/** A score scaled into [LINEAR_FLOOR, 1] by its ranking's minimum and span (all 1 when the span is 0). */
const scaled = (score: number, min: number, span: number): number =>
  span > 0 ? LINEAR_FLOOR + (1 - LINEAR_FLOOR) * ((score - min) / span) : 1

/**
 * What one ranking adds to each of its positions' fused score under `method` with `weight` (α for the lexical
 * ranking, 1 − α for the vector one): `linear`, the weight times the score scaled by the ranking's minimum and maximum
 * (see `scaled`); `rrf`, `2 · weight / (RRF_K + rank)`. The fusions below add these up; explanations show them.
 */
export const fusionShares = (
  method: "linear" | "rrf",
  weight: number,
  ranking: ReadonlyArray<Top>
): Map<number, number> => {
  const shares = new Map<number, number>()
  if (method === "rrf") {
    ranking.forEach((top, i) => {
      shares.set(top.position, (2 * weight) / (RRF_K + i + 1))
    })
    return shares
  }
  let min = Infinity
  let max = -Infinity
  for (const top of ranking) {
    if (top.score < min) min = top.score
    if (top.score > max) max = top.score
  }
  for (const top of ranking) shares.set(top.position, weight * scaled(top.score, min, max - min))
  return shares
}

/** The shares added up per position, in the order the parts are given (a position in no part is absent). */
const sumShares = (...parts: ReadonlyArray<ReadonlyMap<number, number>>): Map<number, number> => {
  const fused = new Map<number, number>()
  for (const part of parts)
    for (const [position, share] of part) fused.set(position, (fused.get(position) ?? 0) + share)
  return fused
}

/**
 * Weighted reciprocal rank fusion of a lexical and a vector ranking: `2α / (RRF_K + lexical rank) + 2(1 − α) /
 * (RRF_K + vector rank)`, so α = 0.5 is `fuseRankings`'s classic sum, bit for bit.
 */
export const fuseWeightedRanks = (
  lexical: ReadonlyArray<Top>,
  vector: ReadonlyArray<Top>,
  alpha: number
): Map<number, number> => sumShares(fusionShares("rrf", 1 - alpha, vector), fusionShares("rrf", alpha, lexical))

/**
 * Linear fusion of a lexical and a vector ranking: each ranking's scores are scaled into [LINEAR_FLOOR, 1] by its own
 * minimum and maximum (all 1 when they are equal), and a position scores `α · lexical + (1 − α) · vector`, 0 for a
 * ranking it is not in. Scores of different kinds (BM25 is unbounded, cosine is not) so become comparable.
 */
export const fuseLinear = (
  lexical: ReadonlyArray<Top>,
  vector: ReadonlyArray<Top>,
  alpha: number
): Map<number, number> => {
  const fused = sumShares(fusionShares("linear", alpha, lexical), fusionShares("linear", 1 - alpha, vector))
  // α + (1 − α) can round to a hair above 1; a fused score stays in [0, 1].
  for (const [position, score] of fused) if (score > 1) fused.set(position, 1)
  return fused
}

/** `fuseRankings` as a dense array over `count` positions (0 where a position is in no ranking). */
export const reciprocalRankFusion = (rankings: ReadonlyArray<ReadonlyArray<Top>>, count: number): Float64Array => {
  const dense = new Float64Array(count)
  for (const [position, score] of fuseRankings(rankings)) dense[position] = score
  return dense
}
