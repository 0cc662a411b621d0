/** BM25 over an index view: loading a query's postings, scoring every candidate term at a time (for fusion, grouping and filters; the top k alone is `Pruned.ts`'s), and each term's share of a score. */

import type { Bm25Params } from "@funcpipe/domain/Config"
import { idf, type TermExplanation, termScore } from "./Bm25.ts"
import type { IndexView, PositionFilter, TermBlock } from "./IndexView.ts"
import type { Candidates } from "./Ranker.ts"
import type { ScoringScratch } from "./Scratch.ts"

/** One query term's postings with its live document frequency. */
export interface LoadedTerm {
  readonly term: string
  readonly blocks: ReadonlyArray<TermBlock>
  readonly df: number
}

export const loadTerms = (view: IndexView, terms: ReadonlyArray<string>): Map<string, LoadedTerm> => {
  const loaded = new Map<string, LoadedTerm>()
  const deleted = view.deleted
  for (const term of terms) {
    if (loaded.has(term)) continue
    const blocks = view.postings(term)
    let df = 0
    if (view.documentFrequency !== undefined) df = view.documentFrequency(term)
    else
      for (const block of blocks) {
        if (deleted === undefined) df += block.ordinals.length
        else for (let i = 0; i < block.ordinals.length; i++) if (deleted[block.offset + block.ordinals[i]!] !== 1) df++
      }
    loaded.set(term, { term, blocks, df })
  }
  return loaded
}

/** One chunk's `k1 · (1 − b + b · length / averageLength)`, with `termScore`'s operations in its order. */
export const lengthNormOf = (length: number, averageLength: number, k1: number, b: number): number =>
  k1 * (averageLength === 0 ? 1 : 1 - b + b * (length / averageLength))

/**
 * The length norms of `lengths`, if they are at hand or `compute` is true and an earlier query wanted them too: a
 * process that asks once (a CLI query) would spend a pass over every position and a new array on them, while one
 * that answers many (a server) keeps them from its second query on.
 */
export const lengthNormsOf = (
  scratch: ScoringScratch,
  lengths: Uint32Array,
  averageLength: number,
  { b, k1 }: Bm25Params,
  compute: boolean
): Float64Array | undefined => {
  const known = scratch.norms.get(lengths)
  if (known?.averageLength === averageLength && known.k1 === k1 && known.b === b) return known.norms
  if (!compute) return undefined
  if (!scratch.normsWanted.has(lengths)) {
    scratch.normsWanted.add(lengths)
    return undefined
  }
  const norms = new Float64Array(lengths.length)
  for (let p = 0; p < lengths.length; p++) norms[p] = lengthNormOf(lengths[p]!, averageLength, k1, b)
  scratch.norms.set(lengths, { averageLength, k1, b, norms })
  return norms
}

/** Visits the first `count` candidates of the scratch; a function of its own, as `addShares` is. */
const visitCandidates = (
  scratch: ScoringScratch,
  count: number,
  visit: (position: number, score: number) => void
): void => {
  const { positions, scores } = scratch
  for (let i = 0; i < count; i++) visit(positions[i]!, scores[i]!)
}

/**
 * Adds one term's shares over its block of postings in one segment to the slots, appending each ordinal touched for
 * the first time to the scratch's `touched` after the `count` already there; returns the new count. A function of its
 * own, called for every block of every query, so V8 optimizes it once (a closure made per query would run its loop
 * half-optimized).
 */
const addShares = (
  scratch: ScoringScratch,
  block: TermBlock,
  weight: number,
  count: number,
  deleted: Uint8Array | undefined,
  allowed: Uint8Array | undefined,
  lengths: Uint32Array,
  averageLength: number,
  norms: Float64Array | undefined,
  { b, k1 }: Bm25Params
): number => {
  // `termScore` inlined with the same operations in the same order, so the sums keep their bits.
  const k1Plus1 = k1 + 1
  const { offset, ordinals, tfs } = block
  const slots = scratch.slots
  let touched = scratch.touched
  if (touched.length < count + ordinals.length) {
    const grown = new Int32Array(Math.max(touched.length * 2, count + ordinals.length))
    grown.set(touched.subarray(0, count))
    touched = scratch.touched = grown
  }
  for (let i = 0; i < ordinals.length; i++) {
    const ordinal = ordinals[i]!
    const position = offset + ordinal
    if (deleted !== undefined && deleted[position] === 1) continue
    if (allowed !== undefined && allowed[position] !== 1) continue
    const before = slots[ordinal]!
    if (before === 0) touched[count++] = ordinal
    const tf = tfs[i]!
    const lengthNorm = norms !== undefined ? norms[position]! : lengthNormOf(lengths[position]!, averageLength, k1, b)
    slots[ordinal] = before + (weight * (tf * k1Plus1)) / (tf + lengthNorm)
  }
  return count
}

/**
 * Moves the `touched` slots of the segment at `offset` to the candidates after the `count` already there (those
 * above 0, in the order first touched) and sets the slots back to 0; returns the new count. `bm25` has made room for
 * every candidate of the query.
 */
const takeSegment = (scratch: ScoringScratch, offset: number, touchedCount: number, count: number): number => {
  const { positions, scores, slots, touched } = scratch
  for (let i = 0; i < touchedCount; i++) {
    const ordinal = touched[i]!
    const score = slots[ordinal]!
    slots[ordinal] = 0
    if (score > 0) {
      positions[count] = offset + ordinal
      scores[count++] = score
    }
  }
  return count
}

/**
 * BM25 over the postings of the query terms only: a repeated term counts each time (as in Lucene), shares are summed
 * in query-term order (so every store and layout gets the same bits), deleted positions are skipped. Returns the
 * touched positions with their scores (all above 0): segment after segment, each in the order first touched.
 */
export const bm25 = (
  view: IndexView,
  loaded: Map<string, LoadedTerm>,
  terms: ReadonlyArray<string>,
  params: Bm25Params,
  filter?: PositionFilter
) => {
  const memory = view.scratch
  const generation = ++memory.generation
  // A filter holds live positions only, so it stands in for the deletions.
  const allowed = filter?.allowed
  const deleted = allowed === undefined ? view.deleted : undefined
  const { averageLength, lengths, liveChunks } = view
  // Each term's blocks by segment (its offset), in query-term order, and how many slots a segment needs.
  const segments = new Map<number, Array<{ readonly block: TermBlock; readonly weight: number }>>()
  let postings = 0
  let slots = 0
  for (const term of terms) {
    const entry = loaded.get(term)!
    const weight = entry.df === 0 ? 0 : idf(liveChunks, entry.df)
    for (const block of entry.blocks) {
      const n = block.ordinals.length
      postings += n
      if (entry.df === 0 || n === 0) continue
      slots = Math.max(slots, block.ordinals[n - 1]! + 1)
      const shares = segments.get(block.offset)
      if (shares === undefined) segments.set(block.offset, [{ block, weight }])
      else shares.push({ block, weight })
    }
  }
  // Each share divides twice; with the chunk's part precomputed it divides once. Computing those costs a pass over
  // every position, so a query with few postings divides twice, unless they are at hand.
  const norms = lengthNormsOf(memory, lengths, averageLength, params, postings * 4 >= view.positions)
  if (memory.slots.length < slots) memory.slots = new Float64Array(slots)
  // Room for every candidate at once (one per posting at most): grown as they come, the arrays would be copied at
  // each doubling, into memory touched afresh.
  const room = Math.min(postings, view.positions)
  if (memory.positions.length < room) {
    memory.positions = new Int32Array(room)
    memory.scores = new Float64Array(room)
  }
  let count = 0
  try {
    for (const offset of [...segments.keys()].sort((a, b) => a - b)) {
      let touched = 0
      for (const { block, weight } of segments.get(offset)!) {
        touched = addShares(memory, block, weight, touched, deleted, allowed, lengths, averageLength, norms, params)
      }
      count = takeSegment(memory, offset, touched, count)
    }
  } catch (error) {
    memory.slots.fill(0) // the next call must start from zeros, whatever this one had touched
    throw error
  }
  const candidates: Candidates = (visit) => {
    // A later call has taken the memory: score again (into it).
    if (memory.generation !== generation) return bm25(view, loaded, terms, params, filter).candidates(visit)
    visitCandidates(memory, count, visit)
  }
  return { candidates }
}

const tfAt = (block: TermBlock, ordinal: number): number => {
  let lo = 0
  let hi = block.ordinals.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const at = block.ordinals[mid]!
    if (at === ordinal) return block.tfs[mid]!
    if (at < ordinal) lo = mid + 1
    else hi = mid - 1
  }
  return 0
}

/** A term's frequency at a position (0 where the term does not occur there). */
export const tfOf = (entry: LoadedTerm, position: number): number => {
  let tf = 0
  for (const block of entry.blocks) if (position >= block.offset) tf = tf || tfAt(block, position - block.offset)
  return tf
}

/**
 * The BM25 score of one position, with the same operations in the same order as `bm25` (shares added to 0 in
 * query-term order), so the two agree to the bit.
 */
export const bm25At = (
  view: IndexView,
  loaded: Map<string, LoadedTerm>,
  terms: ReadonlyArray<string>,
  position: number,
  params: Bm25Params
): number => {
  let score = 0
  for (const term of terms) {
    const entry = loaded.get(term)!
    if (entry.df === 0) continue
    const tf = tfOf(entry, position)
    if (tf === 0) continue
    score = score + termScore(idf(view.liveChunks, entry.df), tf, view.lengths[position]!, view.averageLength, params)
  }
  return score
}

/**
 * BM25 of a filter's listed positions only, each scored in full by `bm25At` (the same bits as `bm25`): for a selective
 * filter, far fewer lookups than the query terms' postings. Scores are computed once, on the first visit.
 */
export const bm25Listed = (
  view: IndexView,
  loaded: Map<string, LoadedTerm>,
  terms: ReadonlyArray<string>,
  params: Bm25Params,
  listed: Int32Array
): Candidates => {
  let found: { readonly positions: Int32Array; readonly scores: Float64Array; readonly count: number } | undefined
  const score = () => {
    const positions = new Int32Array(listed.length)
    const scores = new Float64Array(listed.length)
    let count = 0
    for (let i = 0; i < listed.length; i++) {
      const value = bm25At(view, loaded, terms, listed[i]!, params)
      if (value > 0) {
        positions[count] = listed[i]!
        scores[count++] = value
      }
    }
    return { positions, scores, count }
  }
  return (visit) => {
    const { count, positions, scores } = (found ??= score())
    for (let i = 0; i < count; i++) visit(positions[i]!, scores[i]!)
  }
}

/**
 * Whether scoring a filter's listed positions one by one costs less than reading the query terms' postings: each
 * position looks every term up in every block that holds it (a binary search, about ten postings read in order).
 */
export const listPays = (
  loaded: Map<string, LoadedTerm>,
  filter: PositionFilter | undefined
): filter is PositionFilter & { readonly listed: Int32Array } => {
  if (filter?.listed === undefined) return false
  let lookups = 0
  let postings = 0
  for (const entry of loaded.values()) {
    if (entry.df === 0) continue
    lookups += entry.blocks.length
    for (const block of entry.blocks) postings += block.ordinals.length
  }
  return filter.listed.length * lookups * 10 < postings
}

/** Each query term's share of one position's BM25 score, in query order. */
export const explainTerms = (
  view: IndexView,
  loaded: Map<string, LoadedTerm>,
  terms: ReadonlyArray<string>,
  position: number,
  params: Bm25Params
): ReadonlyArray<TermExplanation> =>
  terms.map((term) => {
    const entry = loaded.get(term)!
    let tf = 0
    tf = tfOf(entry, position)
    const weight = entry.df === 0 ? 0 : idf(view.liveChunks, entry.df)
    const score = tf === 0 ? 0 : termScore(weight, tf, view.lengths[position]!, view.averageLength, params)
    return { term, tf, df: entry.df, idf: weight, score }
  })
