/**
 * Sharding's pure parts: which shard holds a document, the whole index's BM25 statistics summed from the shards', a
 * shard's local top k scored with those statistics, and the merge of the shards' answers in the one ranking order.
 */
import { createHash } from "node:crypto"
import type { ShownChunk } from "@funcpipe/domain/Answer"
import { type Bm25Params, FusionConfig, type RetrievalMode } from "@funcpipe/domain/Config"
import type { ScoreKind } from "@funcpipe/domain/Ranking"
import { type EngineQuery, scoreQuery, topChunksOf } from "../search/Engine.ts"
import type { IndexView, PositionFilter } from "../search/IndexView.ts"
import { fuseLinear, fuseWeightedRanks, keyTies, positiveScore, type Top, TopK, topOf } from "../search/Ranker.ts"

/**
 * The shard (0 … shards - 1) of a document: the first 32 bits of the MD5 of its id's UTF-8, big-endian, modulo the
 * shard count. Stable across processes, releases and languages; PostgreSQL computes the same number as
 * `('x' || lpad(substr(md5(doc_id), 1, 8), 16, '0'))::bit(64)::bigint % shards`, so a shard reads only its rows.
 */
export const shardOf = (docId: string, shards: number): number =>
  parseInt(createHash("md5").update(docId, "utf8").digest("hex").slice(0, 8), 16) % shards

/** A shard's statistics for a query: its live chunks, their summed lengths in terms, each query term's df. */
export interface ShardStats {
  readonly chunks: number
  readonly totalLength: number
  readonly df: ReadonlyArray<number>
}

/** The statistics of the whole index: the shards' sums (integers, so exact in any order). */
export const sumStats = (parts: ReadonlyArray<ShardStats>, terms: number): ShardStats => {
  let chunks = 0
  let totalLength = 0
  const df = new Array<number>(terms).fill(0)
  for (const part of parts) {
    chunks += part.chunks
    totalLength += part.totalLength
    for (let i = 0; i < terms; i++) df[i]! += part.df[i]!
  }
  return { chunks, totalLength, df }
}

/** `view`'s own statistics for `terms` (distinct, in the given order). */
export const statsOf = (view: IndexView, terms: ReadonlyArray<string>): ShardStats => {
  let totalLength = 0
  for (let p = 0; p < view.positions; p++) if (view.deleted?.[p] !== 1) totalLength += view.lengths[p]!
  const df = terms.map((term) => {
    let n = 0
    for (const block of view.postings(term)) {
      for (let i = 0; i < block.ordinals.length; i++) if (view.deleted?.[block.offset + block.ordinals[i]!] !== 1) n++
    }
    return n
  })
  return { chunks: view.liveChunks, totalLength, df }
}

/**
 * `view` scored as part of a larger index: N, the mean length and each term's df are the whole index's, so each chunk
 * gets the bits it gets in one undivided index (the mean is the same integer sum over the same count, divided once).
 */
export const withGlobalStats = <V extends IndexView>(view: V, terms: ReadonlyArray<string>, stats: ShardStats): V => {
  const df = new Map(terms.map((term, i) => [term, stats.df[i]!] as const))
  return {
    ...view,
    liveChunks: stats.chunks,
    averageLength: stats.chunks === 0 ? 0 : stats.totalLength / stats.chunks,
    documentFrequency: (term: string) => df.get(term) ?? 0
  }
}

/** One result of a shard: its score and ranking key, with its document's title. */
export interface Hit {
  readonly score: number
  readonly docId: string
  readonly start: number
  readonly end: number
  readonly text: string
  readonly title: string
  /** What the result shows (its passage, headings and source), for the hits a shard answers with their texts. */
  readonly shown?: ShownChunk
}

/**
 * What a shard answers: its best `k` in the mode (lexical or vector), or for hybrid its best `depth` of each ranking,
 * which the entry point fuses once it has the whole index's; those carry keys only (no text or title: see `keysOf`),
 * and the entry point fetches the text of the few that make its top k.
 */
export interface ShardAnswer {
  readonly hits: ReadonlyArray<Hit>
  readonly lexical: ReadonlyArray<Hit>
  readonly vector: ReadonlyArray<Hit>
}

/** A view that can name its chunks (a loaded snapshot). */
export interface HitView extends IndexView {
  readonly chunkAt: (position: number) => { readonly docId: string; readonly title: string; readonly text: string }
}

const hitsOf = (view: HitView, tops: ReadonlyArray<Top>): Array<Hit> =>
  tops.map(({ position, score }) => {
    const key = view.keyOf(position)
    const title = view.chunkAt(position).title
    return { score, docId: key.docId, start: key.start, end: key.end, text: key.text, title }
  })

/**
 * Hits without text or title: a chunk's (doc id, start, end) already sets it apart from every other chunk (an index
 * holds no two chunks with the same span of one document), so the ranking order never reaches the text among them.
 */
const keysOf = (view: HitView, tops: ReadonlyArray<Top>): Array<Hit> =>
  tops.map(({ position, score }) => {
    const key = view.keyOf(position)
    return { score, docId: key.docId, start: key.start, end: key.end, text: "", title: "" }
  })

/**
 * A shard's answer, scored by the same engine as one undivided index (the view must carry the global statistics):
 * its local top `k` (lexical, vector), or its local top `depth` of both rankings (hybrid), of the chunks `filter`
 * allows if one is given (a filter is per document, and a document lies in one shard). Throws the store's errors.
 */
export const shardAnswer = (
  view: HitView,
  query: EngineQuery,
  mode: RetrievalMode,
  params: Bm25Params,
  k: number,
  depth: number,
  filter?: PositionFilter
): ShardAnswer => {
  if (mode !== "hybrid") {
    const scored = scoreQuery(view, query, mode, params, depth, FusionConfig.default, filter)
    return { hits: hitsOf(view, topChunksOf(view, scored, k, query)), lexical: [], vector: [] }
  }
  const lexical = scoreQuery(view, query, "lexical", params, depth, FusionConfig.default, filter)
  const vector = scoreQuery(view, query, "vector", params, depth, FusionConfig.default, filter)
  return {
    hits: [],
    lexical: keysOf(view, topChunksOf(view, lexical, depth, query)),
    vector: keysOf(view, topChunksOf(view, vector, depth, query))
  }
}

/** The best `k` of the shards' hits in the ranking order (each list holds its shard's best, so this is exact). */
export const mergeHits = (lists: ReadonlyArray<ReadonlyArray<Hit>>, k: number): Array<Hit> => {
  const all = lists.flat()
  return topOf(
    (visit) => {
      all.forEach((hit, i) => {
        visit(i, hit.score)
      })
    },
    k,
    keyTies((i) => all[i]!)
  ).map((top) => all[top.position]!)
}

/**
 * The hybrid answer from the shards' rankings: each merged to the whole index's best `depth`, then fused as one
 * undivided index fuses them (same shares, summed in the same order), and the best `k` positive scores kept.
 */
export const fuseHits = (
  lexicalLists: ReadonlyArray<ReadonlyArray<Hit>>,
  vectorLists: ReadonlyArray<ReadonlyArray<Hit>>,
  depth: number,
  k: number,
  fusion: FusionConfig
): Array<Hit> => {
  const lexical = mergeHits(lexicalLists, depth)
  const vector = mergeHits(vectorLists, depth)
  // One number per chunk, whichever ranking it came from: (doc id, start, end) tells chunks apart.
  const numbers = new Map<string, number>()
  const chunks: Array<Hit> = []
  const topsOf = (hits: ReadonlyArray<Hit>): Array<Top> =>
    hits.map((hit) => {
      const name = `${hit.docId}\u0000${hit.start}\u0000${hit.end}`
      let position = numbers.get(name)
      if (position === undefined) {
        numbers.set(name, (position = chunks.length))
        chunks.push(hit)
      }
      return { position, score: hit.score }
    })
  const lexicalTop = topsOf(lexical)
  const vectorTop = topsOf(vector)
  const fused =
    fusion.method === "linear"
      ? fuseLinear(lexicalTop, vectorTop, fusion.alpha)
      : fuseWeightedRanks(lexicalTop, vectorTop, fusion.alpha)
  const heap = new TopK(
    k,
    keyTies((p) => chunks[p]!)
  )
  for (const [position, score] of fused) if (positiveScore(score)) heap.offer(position, score)
  return heap.take().map(({ position, score }) => ({ ...chunks[position]!, score }))
}

/** The kind of score a mode's answers carry. */
export const scoreKind = (mode: RetrievalMode, fusion: FusionConfig): ScoreKind =>
  mode === "vector" ? "cosine" : mode === "lexical" ? "bm25" : fusion.method

/** The terms once each, in first-seen order (the order the statistics rounds use). */
export const distinct = (terms: ReadonlyArray<string>): Array<string> => [...new Set(terms)]
