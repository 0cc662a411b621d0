/**
 * The exact top k by BM25 without scoring every posting: WAND (Broder et al.) with block maxima (Ding and Suel), as
 * Lucene and PISA prune. Each term's postings in a segment are cut into blocks of `BLOCK` postings, and each block is
 * summed up by the highest share any of its postings has under the query's BM25 parameters (computed on a list's
 * first query and kept with it, as Lucene keeps its impacts). The cursors leap to the first chunk whose terms' bounds
 * could reach the k-th score found, and a chunk is scored only when its blocks' bounds and then its shares' bounds
 * still can. What is scored is scored in full, with `bm25`'s operations in its order, so the answer is the exhaustive
 * one: the same scores to the bit and the same ties (decision 0082).
 */

import type { Bm25Params } from "@funcpipe/domain/Config"
import { idf } from "./Bm25.ts"
import type { IndexView, PositionFilter, TermBlock } from "./IndexView.ts"
import { type LoadedTerm, lengthNormOf, lengthNormsOf } from "./Lexical.ts"
import { type Top, TopK } from "./Ranker.ts"
import type { BlockBounds } from "./Scratch.ts"
import { tiesOf } from "./VectorScan.ts"

/** Postings per block: small enough to skip much, large enough that the bounds cost little next to the postings. */
export const BLOCK = 128

/** Cuts a term's postings in one segment into blocks: each block's last ordinal. */
export const blockBoundsOf = (block: TermBlock): BlockBounds => {
  const { ordinals } = block
  const last = new Uint32Array(Math.ceil(ordinals.length / BLOCK))
  for (let b = 0; b < last.length; b++) last[b] = ordinals[Math.min(ordinals.length, (b + 1) * BLOCK) - 1]!
  return { last }
}

/**
 * Each block's highest share per unit of idf, `tf · (k1 + 1) / (tf + norm)`, for these parameters: a pass over the list
 * the first time (as scoring it exhaustively would cost), kept with its bounds for the queries after.
 */
const sharesOf = (s: Scoring, block: TermBlock, bounds: BlockBounds): Float64Array => {
  const { averageLength } = s.view
  const { b, k1 } = s.params
  const known = bounds.shares
  if (known?.averageLength === averageLength && known.k1 === k1 && known.b === b) return known.values
  const { offset, ordinals, tfs } = block
  const values = new Float64Array(bounds.last.length)
  for (let blockAt = 0; blockAt < values.length; blockAt++) {
    const end = Math.min(ordinals.length, (blockAt + 1) * BLOCK)
    let max = 0
    for (let i = blockAt * BLOCK; i < end; i++) {
      const position = offset + ordinals[i]!
      const tf = tfs[i]!
      const share = (tf * s.k1Plus1) / (tf + normAt(s, position))
      if (share > max) max = share
    }
    values[blockAt] = max
  }
  bounds.shares = { averageLength, k1, b, values }
  return values
}

/**
 * Below this many postings a query is scored exhaustively: pruning's set-up (cursors, block shares) costs more than
 * scoring a few lists outright (a rare word at 442k chunks: 0.034 ms pruned, 0.014 ms exhaustively).
 */
export const PRUNE_FROM_POSTINGS = 2048

/**
 * Pruning pays when one list is this many times longer than another: the short one leads and the long one is only
 * looked into. Lists of about the same length are walked in step chunk by chunk, which costs more per posting than
 * scoring them outright (two words in 13 % of 442k chunks each: 0.6–0.7× the exhaustive speed; one word 15–200 times
 * rarer than another: 1.4–4.9×).
 */
export const PRUNE_FROM_SKEW = 3

/**
 * Above this many distinct terms a query is scored exhaustively: every step of the pruned search keeps its cursors in
 * order, which for a query of 50 words (a pasted paragraph) cost 7–17 times scoring every posting.
 */
export const PRUNE_TERMS_AT_MOST = 8

/** Whether pruning pays for a query's terms (see `PRUNE_FROM_POSTINGS`, `PRUNE_FROM_SKEW`, `PRUNE_TERMS_AT_MOST`). */
export const prunePays = (loaded: ReadonlyMap<string, LoadedTerm>): boolean => {
  let postings = 0
  let fewest = Number.POSITIVE_INFINITY
  let most = 0
  let terms = 0
  for (const entry of loaded.values()) {
    if (entry.df === 0) continue
    terms++
    fewest = Math.min(fewest, entry.df)
    most = Math.max(most, entry.df)
    for (const block of entry.blocks) postings += block.ordinals.length
  }
  return postings >= PRUNE_FROM_POSTINGS && most >= PRUNE_FROM_SKEW * fewest && terms <= PRUNE_TERMS_AT_MOST
}

/** A margin on every bound: the exact sums are made in another order, so they may round a few ulps above it. */
const MARGIN = 1 + 1e-9

/** One distinct query term's cursor over its postings in the segment being scored. */
interface Cursor {
  readonly ordinals: Uint32Array
  readonly tfs: Uint32Array
  /** Each block's last ordinal. */
  readonly last: Uint32Array
  /** Each block's bound, for this query's weight and statistics. */
  readonly blockBound: Float64Array
  /** Its number among the segment's cursors. */
  slot: number
  /** The term's idf. */
  readonly idf: number
  /** Its idf times how often the term is in the query. */
  readonly weight: number
  /** The bound of its whole list in this segment. */
  readonly max: number
  /** The index of its current posting. */
  at: number
  /** The block of its current posting. */
  blockAt: number
}

/** Everything the scoring of one query needs, set up once. */
interface Scoring {
  readonly view: IndexView
  readonly k1Plus1: number
  readonly params: Bm25Params
  readonly norms: Float64Array | undefined
  readonly counts: PruningCounts
}

/** What a pruned query did: the postings its terms hold and the chunks it scored in full. */
export interface PruningCounts {
  postings: number
  /** Chunks every cursor up to the pivot stood at (each then bounded, and perhaps scored). */
  visited: number
  scored: number
}

/** A share's bound at one chunk: `weight · tf · (k1 + 1) / (tf + norm)`, with the margin. */
const boundOf = (s: Scoring, weight: number, tf: number, norm: number): number =>
  (weight * (tf * s.k1Plus1) * MARGIN) / (tf + norm)

/** A position's `k1 · (1 − b + b · length / averageLength)`, as `bm25` takes it (kept norms, or computed alike). */
const normAt = (s: Scoring, position: number): number =>
  s.norms !== undefined
    ? s.norms[position]!
    : lengthNormOf(s.view.lengths[position]!, s.view.averageLength, s.params.k1, s.params.b)

/** Moves a cursor to its first posting at or after `ordinal`; returns the tf there when it is `ordinal`, else 0. */
const advanceTo = (c: Cursor, ordinal: number): number => {
  const { last, ordinals } = c
  let b = c.blockAt
  while (b < last.length && last[b]! < ordinal) b++
  if (b !== c.blockAt) {
    c.blockAt = b
    if (b === last.length) {
      c.at = ordinals.length
      return 0
    }
    c.at = Math.max(c.at, b * BLOCK)
  }
  let i = c.at
  while (i < ordinals.length && ordinals[i]! < ordinal) i++
  c.at = i
  return ordinals[i] === ordinal ? c.tfs[i]! : 0
}

/** A cursor's current ordinal; past its last posting, more than any ordinal. */
const current = (c: Cursor): number => (c.at < c.ordinals.length ? c.ordinals[c.at]! : END)
const END = 0x100000000

/**
 * Scores one segment's candidates into the heap, by WAND with block maxima (Broder et al.; Ding and Suel): the
 * cursors are kept in order of their current chunk, and the first chunk whose cursors' bounds, with those of every
 * cursor before them, can reach the k-th score is the pivot. Cursors behind it move up to it (skipping whole blocks);
 * once all are there, the blocks' bounds decide whether it is scored. `slots[i]` is the cursor of the query's i-th
 * term (-1 when the term has no posting here or no weight), in query-term order.
 */
const scoreSegment = (
  s: Scoring,
  heap: TopK,
  offset: number,
  cursors: ReadonlyArray<Cursor>,
  slots: Int32Array,
  deleted: Uint8Array | undefined,
  allowed: Uint8Array | undefined
): void => {
  // The cursors by current ordinal (few: one per query term).
  const order = [...cursors]
  const n = order.length
  const at = new Int32Array(n)
  for (;;) {
    for (let i = 1; i < n; i++) {
      const c = order[i]!
      const here = current(c)
      let j = i - 1
      while (j >= 0 && current(order[j]!) > here) {
        order[j + 1] = order[j]!
        j--
      }
      order[j + 1] = c
    }
    const threshold = heap.threshold
    let reach = 0
    let pivot = -1
    for (let p = 0; p < n; p++) {
      if (current(order[p]!) === END) break
      reach += order[p]!.max
      if (reach >= threshold) {
        pivot = p
        break
      }
    }
    if (pivot < 0) return
    const ordinal = current(order[pivot]!)
    // Every cursor at the pivot's chunk counts, those after the pivot too.
    let last = pivot
    while (last + 1 < n && current(order[last + 1]!) === ordinal) last++
    if (current(order[0]!) !== ordinal) {
      // Move the cursors behind the pivot up to it (no chunk before it can enter).
      for (let p = 0; p < pivot; p++) advanceTo(order[p]!, ordinal)
      continue
    }
    s.counts.visited++
    // All cursors up to the pivot are at its chunk: their blocks' bounds, then their shares' bounds, must reach.
    let blocks = 0
    for (let p = 0; p <= last; p++) blocks += order[p]!.blockBound[order[p]!.blockAt]!
    const position = offset + ordinal
    const live =
      blocks >= threshold &&
      (deleted === undefined || deleted[position] !== 1) &&
      (allowed === undefined || allowed[position] === 1)
    const norm = live ? normAt(s, position) : 0
    let bound = 0
    for (let p = 0; p <= last; p++) {
      const c = order[p]!
      at[c.slot] = c.tfs[c.at]!
      if (live) bound += boundOf(s, c.weight, at[c.slot]!, norm)
    }
    if (live && bound >= threshold) {
      // In full, as `bm25` adds it: each query term's share in query-term order, a repeated term each time.
      let score = 0
      for (let q = 0; q < slots.length; q++) {
        const slot = slots[q]!
        if (slot < 0) continue
        const c = cursors[slot]!
        if (current(c) !== ordinal) continue
        const f = at[slot]!
        score = score + (c.idf * (f * s.k1Plus1)) / (f + norm)
      }
      s.counts.scored++
      if (score > 0) heap.offer(position, score)
    }
    for (let p = 0; p <= last; p++) advanceTo(order[p]!, ordinal + 1)
  }
}

/**
 * The exact top `k` of a lexical query (see the module's note); `counts` (when given) learns what it did. Each
 * postings list's block bounds are kept in the view's scratch.
 */
export const topLexicalPruned = (
  view: IndexView,
  loaded: Map<string, LoadedTerm>,
  terms: ReadonlyArray<string>,
  params: Bm25Params,
  k: number,
  filter?: PositionFilter,
  counts: PruningCounts = { postings: 0, visited: 0, scored: 0 }
): Array<Top> => {
  const repeats = new Map<string, number>()
  for (const term of terms) repeats.set(term, (repeats.get(term) ?? 0) + 1)
  const weights = new Map<string, number>()
  let postings = 0
  for (const [term] of repeats) {
    const entry = loaded.get(term)!
    if (entry.df === 0) continue
    weights.set(term, idf(view.liveChunks, entry.df))
    for (const block of entry.blocks) postings += block.ordinals.length
  }
  const s: Scoring = {
    view,
    k1Plus1: params.k1 + 1,
    params,
    norms: lengthNormsOf(view.scratch, view.lengths, view.averageLength, params, postings * 4 >= view.positions),
    counts
  }
  counts.postings += postings
  const heap = new TopK(k, tiesOf(view))
  if (k === 0) return heap.take()
  // Each segment's cursors by term, by offset.
  const segments = new Map<number, Map<string, Cursor>>()
  const cache = view.scratch.blockBounds
  for (const [term, weight] of weights) {
    const times = repeats.get(term)!
    for (const block of loaded.get(term)!.blocks) {
      if (block.ordinals.length === 0) continue
      let bounds = cache.get(block.ordinals)
      if (bounds === undefined) cache.set(block.ordinals, (bounds = blockBoundsOf(block)))
      const shares = sharesOf(s, block, bounds)
      const blockBound = new Float64Array(shares.length)
      let max = 0
      for (let b = 0; b < blockBound.length; b++) {
        blockBound[b] = times * weight * shares[b]! * MARGIN
        if (blockBound[b]! > max) max = blockBound[b]!
      }
      const { ordinals, tfs } = block
      const cursor: Cursor = {
        ordinals,
        tfs,
        last: bounds.last,
        blockBound,
        slot: 0,
        idf: weight,
        weight: times * weight,
        max,
        at: 0,
        blockAt: 0
      }
      const here = segments.get(block.offset)
      if (here === undefined) segments.set(block.offset, new Map([[term, cursor]]))
      else here.set(term, cursor)
    }
  }
  const allowed = filter?.allowed
  const deleted = allowed === undefined ? view.deleted : undefined
  for (const offset of [...segments.keys()].sort((a, b) => a - b)) {
    const here = segments.get(offset)!
    const cursors = [...here.values()]
    cursors.forEach((cursor, i) => {
      cursor.slot = i
    })
    const slots = Int32Array.from(terms, (term) => {
      const cursor = here.get(term)
      return cursor === undefined ? -1 : cursor.slot
    })
    scoreSegment(s, heap, offset, cursors, slots, deleted, allowed)
  }
  return heap.take()
}
