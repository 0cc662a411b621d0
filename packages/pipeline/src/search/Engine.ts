/**
 * The query engine: scores a query against an index view (segments of typed arrays and lazily read postings) in
 * every retrieval mode, touching only what the mode needs, and selects the top k in the ranking order.
 */
import { type Bm25Params, FusionConfig, type RetrievalMode } from "@funcpipe/domain/Config"
import type { ScoreKind } from "@funcpipe/domain/Ranking"
import { LOCAL_SHA256 } from "../analysis/Embed.ts"
import { decodeCodes } from "../index/VectorCodec.ts"
import { idf, type TermExplanation, termScore } from "./Bm25.ts"
import { codedCosines } from "./CodedScan.ts"
import {
  type Candidates,
  documentTies,
  fuseLinear,
  fuseWeightedRanks,
  fusionShares,
  type KeyOf,
  keyTies,
  positiveScore,
  type TieOrder,
  type Top,
  TopK,
  topDocumentsOf,
  topOf
} from "./Ranker.ts"

/** How deep each ranking goes before hybrid fusion: enough for document-level evaluation at depth 1000. */
export const FUSION_DEPTH = 1000

/**
 * A block of vectors: `count` rows of `dimensions` components starting at position `offset`, either decoded (float64
 * components and each row's magnitude `sqrt(Σ x·x)`, summed left to right; 0 for an all-zero row) or as stored in
 * 16-bit numerators `k` (each component being `k / 65535`, see `VectorCodec`), which a scan decodes as it goes.
 */
export type VectorBlock = DecodedBlock | CodedBlock

export interface DecodedBlock {
  readonly offset: number
  readonly count: number
  readonly vectors: Float64Array
  readonly magnitudes: Float64Array
  readonly codes?: undefined
}

export interface CodedBlock {
  readonly offset: number
  readonly count: number
  readonly codes: Uint16Array
  readonly vectors?: undefined
  readonly magnitudes?: undefined
}

/**
 * The blocks decoded, as they come: a coded block into one buffer reused from block to block (so each is valid until
 * the next is taken, as `IndexView.vectorBlocks` allows), with the same numbers and magnitudes the coded scan computes.
 */
function* decodedBlocks(blocks: Iterable<VectorBlock>, dimensions: number): Generator<DecodedBlock> {
  let vectors = new Float64Array(0)
  let magnitudes = new Float64Array(0)
  for (const block of blocks) {
    if (block.codes === undefined) {
      yield block
      continue
    }
    const { codes, count, offset } = block
    if (magnitudes.length < count) {
      vectors = new Float64Array(count * dimensions)
      magnitudes = new Float64Array(count)
    }
    decodeCodes(codes, count, dimensions, vectors, magnitudes)
    yield { offset, count, vectors, magnitudes }
  }
}

/** The postings of one term in one segment: positions are `offset + ordinals[i]`, ascending. */
export interface TermBlock {
  readonly offset: number
  readonly ordinals: Uint32Array
  readonly tfs: Uint32Array
}

/**
 * What the engine reads from an index. Positions number every stored chunk, deleted ones included (`deleted[p]` is
 * 1 for those); BM25 statistics count live chunks only, so an index updated in place scores exactly like one built
 * from scratch. The functions may read from storage; they throw the store's typed errors, never anything else.
 */
export interface IndexView {
  readonly dimensions: number
  /** Stored positions, deleted ones included. */
  readonly positions: number
  /** Live chunks: the N of BM25's idf. */
  readonly liveChunks: number
  /** Mean length in terms of the live chunks (0 without chunks). */
  readonly averageLength: number
  /** Each position's length in terms. */
  readonly lengths: Uint32Array
  /** 1 for a deleted position, or `undefined` when none is. */
  readonly deleted: Uint8Array | undefined
  /** The postings of a term, one block per segment that holds it (deleted positions included). */
  readonly postings: (term: string) => ReadonlyArray<TermBlock>
  /**
   * Every segment's vectors, in position order. A block may be valid only until the next one is taken (a store may
   * decode each block into one buffer), so a scan uses each block as it comes.
   */
  readonly vectorBlocks: () => Iterable<VectorBlock>
  /** The ranking key of a position. */
  readonly keyOf: KeyOf
  /**
   * Numbers each position's document (0 … documents - 1), for document-level ranking, with each document's rank in
   * doc id order (`order`). Within one document, positions must be in (start, end) order, so `order` and the position
   * decide ties without reading keys.
   */
  readonly documents: () => { readonly docOf: Int32Array; readonly count: number; readonly order: Int32Array }
  /**
   * The tie order of `documents` (`documentTies`) when the view has it at hand; `undefined` (or absent) when it would
   * first have to read every document, so equal scores are told apart by reading their keys instead. Where many
   * chunks tie (common words in equally long chunks), comparing two numbers beats reading two keys by far.
   */
  readonly tieOrder?: (() => TieOrder | undefined) | undefined
  /**
   * A term's live document frequency when it is not that of `postings` (a shard scores its part of an index with the
   * whole index's statistics, as `liveChunks` and `averageLength` are then too); absent, it is counted from `postings`.
   */
  readonly documentFrequency?: ((term: string) => number) | undefined
}

/**
 * The positions a filtered query may return (a `--where` rule, evaluated per document by the store): `allowed[p]` is 1
 * for a live position whose document passes. `listed` holds those positions in ascending order when they are few
 * enough that visiting them alone beats a pass over every position; `count` is how many there are.
 */
export interface PositionFilter {
  readonly allowed: Uint8Array
  readonly count: number
  readonly listed: Int32Array | undefined
}

/** A query as the engine takes it: its analyzed terms and, for the vector and hybrid modes, its vector. */
export interface EngineQuery {
  readonly terms: ReadonlyArray<string>
  readonly vector: ReadonlyArray<number> | undefined
}

/** Why a result scored what it did, as far as the mode used each part. */
export interface Explanation {
  readonly cosine: number | null
  readonly bm25: { readonly score: number; readonly terms: ReadonlyArray<TermExplanation> } | null
  readonly vectorRank: number | null
  readonly lexicalRank: number | null
  /** In hybrid mode: how the fused score was made and what each ranking added to it. */
  readonly fusion: {
    readonly method: "linear" | "rrf"
    readonly alpha: number
    readonly lexical: number
    readonly vector: number
  } | null
}

/** A query scored in one mode: its candidates, what kind of score they carry, and explanations on demand. */
export interface Scored {
  readonly mode: RetrievalMode
  readonly kind: ScoreKind
  readonly candidates: Candidates
  readonly explain: (position: number) => Explanation
  /** The exact top `k` found without visiting every candidate, or `undefined` where no shortcut applies. */
  readonly shortcut?: (k: number) => Array<Top> | undefined
  /** The filter the candidates were restricted to, if any. */
  readonly filter?: PositionFilter | undefined
}

/** Clamps rounding overshoot of a cosine into [-1, 1]. */
// biome-ignore lint/complexity/useMathMinMax: the reference's clamp, written as its comparisons (as clampScore)
const clamp = (raw: number): number => (raw > 1 ? 1 : raw < -1 ? -1 : raw)

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
  for (const block of view.vectorBlocks()) {
    if (block.codes !== undefined) {
      scanCoded(block, d, q, qLength, deleted, visit, floor)
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
 * WebAssembly where it can be (`codedCosines`, the same operations again), else by the loop below.
 */
const scanCoded = (
  block: CodedBlock,
  d: number,
  q: Float64Array,
  qLength: number,
  deleted: Uint8Array | undefined,
  visit: (position: number, score: number) => void,
  floor: () => number
): void => {
  const { codes, count, offset } = block
  const inKernel = codedCosines(codes, count, d, q, qLength, (cosines) => {
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
const cosineAt = (view: IndexView, query: ArrayLike<number>, position: number): number | null => {
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

/** One query term's postings with its live document frequency. */
interface LoadedTerm {
  readonly term: string
  readonly blocks: ReadonlyArray<TermBlock>
  readonly df: number
}

const loadTerms = (view: IndexView, terms: ReadonlyArray<string>): Map<string, LoadedTerm> => {
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

/**
 * The working memory of lexical scoring, shared by every `bm25` call. A call scores one segment at a time: a score
 * slot per ordinal of the segment and the ordinals touched, in the order first touched; the segment's candidates are
 * then moved to `positions` and `scores`, and its slots left at 0 for the next. A query then costs in proportion to its
 * postings, not to the size of the index, and allocates nothing once the memory has grown. The slots of one segment
 * rather than of every position: a fresh process touches a page of memory per 512 slots it writes, each at a cost
 * (about 17 µs on the benchmark's VM), and the postings of a query with a few thousand chunks fall on most pages of
 * a slot per position. The candidates of one call stay until the next call, so they are visited in place;
 * `generation` tells a call's candidates whether a later call has since taken the memory.
 */
const lexicalScratch = {
  slots: new Float64Array(0),
  touched: new Int32Array(1024),
  positions: new Int32Array(1024),
  scores: new Float64Array(1024),
  generation: 0
}

/**
 * `k1 · (1 − b + b · length / averageLength)` of every position: the part of a BM25 share that depends on the chunk
 * alone, computed with `termScore`'s operations in its order, so a share computed from it has the same bits. Kept per
 * lengths array (one index state answers many queries) for the last average and parameters it was used with.
 */
const lengthNorms = new WeakMap<
  Uint32Array,
  { readonly averageLength: number; readonly k1: number; readonly b: number; readonly norms: Float64Array }
>()

/** One chunk's `k1 · (1 − b + b · length / averageLength)`, with `termScore`'s operations in its order. */
const lengthNormOf = (length: number, averageLength: number, k1: number, b: number): number =>
  k1 * (averageLength === 0 ? 1 : 1 - b + b * (length / averageLength))

/** Lengths arrays a query wanted norms for once: the norms are computed for the second (see `lengthNormsOf`). */
const normsWanted = new WeakSet<Uint32Array>()

/**
 * The length norms of `lengths`, if they are at hand or `compute` is true and an earlier query wanted them too: a
 * process that asks once (a CLI query) would spend a pass over every position and a new array on them, while one
 * that answers many (a server) keeps them from its second query on.
 */
const lengthNormsOf = (
  lengths: Uint32Array,
  averageLength: number,
  { b, k1 }: Bm25Params,
  compute: boolean
): Float64Array | undefined => {
  const known = lengthNorms.get(lengths)
  if (known?.averageLength === averageLength && known.k1 === k1 && known.b === b) return known.norms
  if (!compute) return undefined
  if (!normsWanted.has(lengths)) {
    normsWanted.add(lengths)
    return undefined
  }
  const norms = new Float64Array(lengths.length)
  for (let p = 0; p < lengths.length; p++) norms[p] = lengthNormOf(lengths[p]!, averageLength, k1, b)
  lengthNorms.set(lengths, { averageLength, k1, b, norms })
  return norms
}

/** Visits the first `count` candidates of the scratch; a function of its own, as `addShares` is. */
const visitCandidates = (count: number, visit: (position: number, score: number) => void): void => {
  const { positions, scores } = lexicalScratch
  for (let i = 0; i < count; i++) visit(positions[i]!, scores[i]!)
}

/**
 * Adds one term's shares over its block of postings in one segment to the slots, appending each ordinal touched for
 * the first time to the scratch's `touched` after the `count` already there; returns the new count. A function of its
 * own, called for every block of every query, so V8 optimizes it once (a closure made per query ran its loop
 * half-optimized).
 */
const addShares = (
  slots: Float64Array,
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
  let touched = lexicalScratch.touched
  if (touched.length < count + ordinals.length) {
    const grown = new Int32Array(Math.max(touched.length * 2, count + ordinals.length))
    grown.set(touched.subarray(0, count))
    touched = lexicalScratch.touched = grown
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
const takeSegment = (offset: number, touchedCount: number, count: number): number => {
  const { positions, scores, slots, touched } = lexicalScratch
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
const bm25 = (
  view: IndexView,
  loaded: Map<string, LoadedTerm>,
  terms: ReadonlyArray<string>,
  params: Bm25Params,
  filter?: PositionFilter
) => {
  const memory = lexicalScratch
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
  // every position, so a query with few postings divides as before, unless they are at hand.
  const norms = lengthNormsOf(lengths, averageLength, params, postings * 4 >= view.positions)
  if (memory.slots.length < slots) memory.slots = new Float64Array(slots)
  // Room for every candidate at once (one per posting at most): grown as they came, the arrays were copied at each
  // doubling, into memory touched afresh.
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
        touched = addShares(
          memory.slots,
          block,
          weight,
          touched,
          deleted,
          allowed,
          lengths,
          averageLength,
          norms,
          params
        )
      }
      count = takeSegment(offset, touched, count)
    }
  } catch (error) {
    memory.slots.fill(0) // the next call must start from zeros, whatever this one had touched
    throw error
  }
  const candidates: Candidates = (visit) => {
    // A later call has taken the memory: score again (into it).
    if (memory.generation !== generation) return bm25(view, loaded, terms, params, filter).candidates(visit)
    visitCandidates(count, visit)
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
const tfOf = (entry: LoadedTerm, position: number): number => {
  let tf = 0
  for (const block of entry.blocks) if (position >= block.offset) tf = tf || tfAt(block, position - block.offset)
  return tf
}

/**
 * The BM25 score of one position, with the same operations in the same order as `bm25` (shares added to 0 in
 * query-term order), so the two agree to the bit.
 */
const bm25At = (
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
const bm25Listed = (
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
const listPays = (
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

/** A term is rare when at most this share of the chunks hold it: its postings are short enough to score directly. */
const RARE_SHARE = 0.05

/**
 * The exact top `k` by BM25 without scoring every posting of the frequent terms (the idea of MaxScore): every chunk
 * that holds one of the query's rarer terms (those in at most `RARE_SHARE` of the chunks, or else all but the most
 * frequent term) is scored in full; a chunk holding none of them scores at most the sum of the other terms' upper
 * bounds (`idf · (k1 + 1)` per occurrence in the query, with a margin for rounding). If that bound is below the k-th
 * score found, no other chunk can enter and the answer is exact; otherwise `undefined`, and the caller scores every
 * posting.
 */
const topLexicalShortcut = (
  view: IndexView,
  loaded: Map<string, LoadedTerm>,
  terms: ReadonlyArray<string>,
  params: Bm25Params,
  k: number,
  filter?: PositionFilter
): Array<Top> | undefined => {
  // With a filter only its positions compete; the bound below holds for them as for all.
  if (listPays(loaded, filter)) return undefined
  const allowed = filter?.allowed
  const counts = new Map<string, number>()
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1)
  const present = [...counts.keys()]
    .map((term) => loaded.get(term)!)
    .filter((e) => e.df > 0)
    .sort((a, b) => a.df - b.df)
  if (present.length < 2) return undefined
  let essential = present.filter((e) => e.df <= RARE_SHARE * view.liveChunks).length
  if (essential === 0) essential = present.length - 1
  const rare = present.slice(0, essential)
  let otherBound = 0
  for (const entry of present.slice(essential)) {
    otherBound += counts.get(entry.term)! * idf(view.liveChunks, entry.df) * (params.k1 + 1) * (1 + 1e-9)
  }
  // Worth it only when the chunks to score are far fewer than the postings a full pass reads: scoring one chunk
  // looks every query term up (a binary search each), which costs about ten postings read in order.
  const toScore = rare.reduce((n, e) => n + e.df, 0)
  if (toScore * present.length * 10 > present.reduce((n, e) => n + e.df, 0)) return undefined
  const heap = new TopK(k, tiesOf(view))
  const seen = new Set<number>()
  const deleted = view.deleted
  for (const entry of rare) {
    for (const block of entry.blocks) {
      for (let i = 0; i < block.ordinals.length; i++) {
        const position = block.offset + block.ordinals[i]!
        if ((deleted !== undefined && deleted[position] === 1) || seen.has(position)) continue
        if (allowed !== undefined && allowed[position] !== 1) continue
        seen.add(position)
        const score = bm25At(view, loaded, terms, position, params)
        if (score > 0) heap.offer(position, score)
      }
    }
  }
  return otherBound < heap.threshold ? heap.take() : undefined
}

/** Each query term's share of one position's BM25 score, in query order. */
const explainTerms = (
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

const ranksOf = (ranking: ReadonlyArray<Top>) => new Map(ranking.map((top, i) => [top.position, i + 1] as const))

/**
 * Scores `query` in `mode`: `vector` visits every live chunk with a defined cosine, `lexical` only the chunks holding
 * a query term, `hybrid` fuses the best `depth` of each as `fusion` says. The query's vector is needed by the vector
 * and hybrid modes only. With a `filter`, only its positions are candidates, in every mode and before any top k is
 * taken (the hybrid's `depth` of each ranking included), so a filtered top k is exact; BM25's statistics (N, df, the
 * mean length) stay those of the whole index, so a chunk scores the same with or without a filter.
 */
export const scoreQuery = (
  view: IndexView,
  query: EngineQuery,
  mode: RetrievalMode,
  params: Bm25Params,
  depth = FUSION_DEPTH,
  fusion: FusionConfig = FusionConfig.default,
  filter?: PositionFilter
): Scored => {
  const { terms, vector } = query
  let loaded: Map<string, LoadedTerm> | undefined
  const terms$ = () => (loaded ??= loadTerms(view, terms))
  let lexical: Candidates | undefined
  const lexical$ = (): Candidates => {
    if (lexical !== undefined) return lexical
    const entries = terms$()
    return (lexical = listPays(entries, filter)
      ? bm25Listed(view, entries, terms, params, filter.listed)
      : bm25(view, entries, terms, params, filter).candidates)
  }
  const explainWith =
    (
      vectorRanks: ReadonlyMap<number, number>,
      lexicalRanks: ReadonlyMap<number, number>,
      shares?: { readonly lexical: ReadonlyMap<number, number>; readonly vector: ReadonlyMap<number, number> }
    ) =>
    (position: number): Explanation => ({
      cosine: vector === undefined || mode === "lexical" ? null : cosineAt(view, vector, position),
      bm25:
        mode === "vector"
          ? null
          : {
              score: bm25At(view, terms$(), terms, position, params),
              terms: explainTerms(view, terms$(), terms, position, params)
            },
      vectorRank: vectorRanks.get(position) ?? null,
      lexicalRank: lexicalRanks.get(position) ?? null,
      fusion:
        shares === undefined
          ? null
          : {
              method: fusion.method,
              alpha: fusion.alpha,
              lexical: shares.lexical.get(position) ?? 0,
              vector: shares.vector.get(position) ?? 0
            }
    })
  const none = new Map<number, number>()
  switch (mode) {
    case "vector":
      return {
        mode,
        kind: "cosine",
        candidates: (visit) => scanVectors(view, vector!, visit, undefined, filter),
        explain: explainWith(none, none),
        filter
      }
    case "lexical":
      return {
        mode,
        kind: "bm25",
        candidates: (visit) => lexical$()(visit),
        explain: explainWith(none, none),
        shortcut: (k) => topLexicalShortcut(view, terms$(), terms, params, k, filter),
        filter
      }
    case "hybrid": {
      const vectorTop = topVectors(view, vector!, depth, filter)
      const lexicalTop =
        topLexicalShortcut(view, terms$(), terms, params, depth, filter) ?? topOf(lexical$(), depth, tiesOf(view))
      const fused =
        fusion.method === "linear"
          ? fuseLinear(lexicalTop, vectorTop, fusion.alpha)
          : fuseWeightedRanks(lexicalTop, vectorTop, fusion.alpha)
      return {
        mode,
        kind: fusion.method,
        candidates: (visit) => {
          for (const [position, score] of fused) if (positiveScore(score)) visit(position, score)
        },
        explain: explainWith(ranksOf(vectorTop), ranksOf(lexicalTop), {
          lexical: fusionShares(fusion.method, fusion.alpha, lexicalTop),
          vector: fusionShares(fusion.method, 1 - fusion.alpha, vectorTop)
        }),
        filter
      }
    }
  }
}

/** How a view's equal scores are ordered: by its documents' order when it has that at hand, else by reading keys. */
const tiesOf = (view: IndexView): TieOrder => view.tieOrder?.() ?? keyTies(view.keyOf)

/** The best `k` chunks by cosine, scanning with the heap's threshold so most rows cost one comparison. */
const topVectors = (view: IndexView, vector: ArrayLike<number>, k: number, filter?: PositionFilter): Array<Top> => {
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

/** The best `k` chunks of a scored query, in the ranking order. */
export const topChunksOf = (view: IndexView, scored: Scored, k: number, query?: EngineQuery): Array<Top> =>
  scored.mode === "vector" && query?.vector !== undefined
    ? topVectors(view, query.vector, k, scored.filter)
    : (scored.shortcut?.(k) ?? topOf(scored.candidates, k, tiesOf(view)))

/** The best `k` documents of a scored query, each represented by its best chunk, in the ranking order. */
export const topDocumentsOfView = (view: IndexView, scored: Scored, k: number): Array<Top> => {
  const documents = view.documents()
  const { count, docOf } = documents
  return topDocumentsOf(scored.candidates, k, documentTies(documents), (p) => docOf[p]!, count)
}

/**
 * The best mode for an index's model: `local-sha256` vectors only match identical text, so its indexes answer
 * lexically (BM25); a real embedding model's indexes fuse both rankings.
 */
export const defaultMode = (model: string): RetrievalMode => (model === LOCAL_SHA256 ? "lexical" : "hybrid")
