/** An index segment under construction: chunks appended in order, with typed-array columns and per-term postings. */

const grow = <A extends Float64Array | Uint32Array>(array: A, needed: number, make: (n: number) => A): A => {
  if (needed <= array.length) return array
  const next = make(Math.max(needed, array.length * 2))
  next.set(array)
  return next
}

const BLOCK_BITS = 16
const BLOCK = 1 << BLOCK_BITS
const BLOCK_MASK = BLOCK - 1

const growInt = (array: Int32Array, needed: number): Int32Array => {
  if (needed <= array.length) return array
  const next = new Int32Array(Math.max(needed, array.length * 2)).fill(-1)
  next.set(array)
  return next
}

/**
 * Accumulates chunks for one segment. Ordinals count from 0 in the order chunks are added; the segment's first chunk
 * id is `base`, so chunk `ordinal` has id `base + ordinal`. Postings are appended to flat typed arrays as (term number,
 * ordinal, tf) and grouped by term only when the segment is written, so adding a chunk allocates almost nothing.
 * `byteLength` tracks memory for the writer's budget. A builder made with the one written before takes over its
 * arrays: touching fresh memory is slow on some machines (~4 ms per MB on the benchmark's), and each segment of a run
 * would otherwise allocate its ~100 MB again.
 */
export class SegmentBuilder {
  count = 0
  totalLength = 0
  lengths = new Uint32Array(1024)
  magnitudes = new Float64Array(1024)
  vectors: Float64Array
  /** The segment's terms, numbered in order of first use. */
  readonly vocabulary = new Map<string, number>()
  private termBytes = 0
  private postingCount = 0
  /**
   * Postings in fixed blocks of `BLOCK` (never copied as they grow): term number and tf, in step, chunk after chunk;
   * chunk `o`'s postings start at `postingStart[o]`, so the ordinal need not be stored.
   */
  private readonly termBlocks: Array<Uint32Array> = []
  private readonly tfBlocks: Array<Uint32Array> = []
  private postingStart = new Uint32Array(1025)
  /** Per term number: the last chunk it occurred in and where that posting is, to count repeats in one chunk. */
  private lastOrdinal: Int32Array = new Int32Array(1024).fill(-1)
  private lastPosting: Int32Array = new Int32Array(1024).fill(-1)
  /** Where `termPostings` groups the postings. */
  private pairs = new Uint32Array(0)
  readonly base: number
  readonly dimensions: number

  /**
   * A builder for chunks from id `base` on; given `previous` (written, and not used again), it reuses its arrays.
   * Without one, its per-chunk arrays start with room for `capacity` chunks: a writer that knows how many a segment
   * may hold gives it, so they are never copied as they grow (their pages are touched only as chunks fill them).
   */
  constructor(base: number, dimensions: number, previous?: SegmentBuilder, capacity = 1024) {
    this.base = base
    this.dimensions = dimensions
    if (previous === undefined || previous.dimensions !== dimensions) {
      this.vectors = new Float64Array(capacity * dimensions)
      this.lengths = new Uint32Array(capacity)
      this.magnitudes = new Float64Array(capacity)
      this.postingStart = new Uint32Array(capacity + 1)
      return
    }
    this.vectors = previous.vectors
    this.lengths = previous.lengths
    this.magnitudes = previous.magnitudes
    this.postingStart = previous.postingStart
    this.termBlocks = previous.termBlocks
    this.tfBlocks = previous.tfBlocks
    this.pairs = previous.pairs
    // Only the entries of the previous vocabulary were set.
    this.lastOrdinal = previous.lastOrdinal.fill(-1, 0, previous.vocabulary.size)
    this.lastPosting = previous.lastPosting.fill(-1, 0, previous.vocabulary.size)
  }

  /** The segment's number for `term`, numbering it if it is new. */
  termId(term: string): number {
    let id = this.vocabulary.get(term)
    if (id === undefined) {
      id = this.vocabulary.size
      this.vocabulary.set(term, id)
      this.termBytes += 64 + 2 * term.length
      if (id >= this.lastOrdinal.length) {
        this.lastOrdinal = growInt(this.lastOrdinal, id + 1)
        this.lastPosting = growInt(this.lastPosting, id + 1)
      }
    }
    return id
  }

  /**
   * Appends one chunk: its terms in order (`ids[from … to)`, mapped to segment term numbers by `numberOf`) and its
   * vector (`dimensions` components of `vectors` from `at`). Returns the chunk's ordinal.
   */
  add(
    ids: ArrayLike<number>,
    from: number,
    to: number,
    numberOf: (id: number) => number,
    vectors: Float64Array,
    at: number
  ): number {
    const ordinal = this.count++
    if (this.count > this.lengths.length) {
      this.postingStart = grow(this.postingStart, 2 * this.count + 1, (n) => new Uint32Array(n))
      this.lengths = grow(this.lengths, this.count, (n) => new Uint32Array(n))
      this.magnitudes = grow(this.magnitudes, this.count, (n) => new Float64Array(n))
      this.vectors = grow(this.vectors, this.count * this.dimensions, (n) => new Float64Array(n))
    }
    const length = to - from
    this.lengths[ordinal] = length
    this.totalLength += length
    let sum = 0
    const row = ordinal * this.dimensions
    for (let j = 0; j < this.dimensions; j++) {
      const x = vectors[at + j]!
      this.vectors[row + j] = x
      sum += x * x
    }
    this.magnitudes[ordinal] = Math.sqrt(sum)
    for (let i = from; i < to; i++) {
      const id = numberOf(ids[i]!)
      if (this.lastOrdinal[id] === ordinal) {
        const at = this.lastPosting[id]!
        this.tfBlocks[at >>> BLOCK_BITS]![at & BLOCK_MASK]!++
        continue
      }
      const n = this.postingCount++
      const block = n >>> BLOCK_BITS
      // Blocks taken over from a previous builder are written over.
      if (block === this.termBlocks.length) {
        this.termBlocks.push(new Uint32Array(BLOCK))
        this.tfBlocks.push(new Uint32Array(BLOCK))
      }
      const slot = n & BLOCK_MASK
      this.termBlocks[block]![slot] = id
      this.tfBlocks[block]![slot] = 1
      this.lastOrdinal[id] = ordinal
      this.lastPosting[id] = n
    }
    this.postingStart[ordinal + 1] = this.postingCount
    return ordinal
  }

  /** Approximate memory used by this segment's chunks, in bytes (arrays taken over may hold more). */
  get byteLength(): number {
    const blocks = Math.ceil(this.postingCount / BLOCK)
    return this.termBytes + blocks * BLOCK * 8 + this.count * (16 + 8 * this.dimensions)
  }

  /**
   * Each term with its postings as `[ordinal, tf, …]` pairs in increasing ordinal order, in code-unit order of the
   * terms (the order a B-tree takes them fastest). Groups the flat postings with one counting sort and hands out views
   * of one array, so the memory it adds is about that of the postings once.
   */
  *termPostings(): Generator<readonly [term: string, pairs: Uint32Array]> {
    const terms = [...this.vocabulary.keys()]
    const starts = new Uint32Array(terms.length + 1)
    const total = this.postingCount
    // Block by block, with each block's arrays in locals: the postings are read twice, in order.
    for (let from = 0; from < total; from += BLOCK) {
      const termBlock = this.termBlocks[from >>> BLOCK_BITS]!
      const end = Math.min(BLOCK, total - from)
      for (let i = 0; i < end; i++) starts[termBlock[i]! + 1]!++
    }
    for (let t = 0; t < terms.length; t++) starts[t + 1] = starts[t + 1]! + starts[t]!
    // With room to spare: segments cut at the budget hold almost the same number of postings, and an array grown by a
    // few entries each time was fresh memory for each (slow to touch on some machines: about 200 ms for this one).
    if (this.pairs.length < total * 2) this.pairs = new Uint32Array(total * 2 + (total >> 2))
    const pairs = this.pairs
    const next = starts.slice(0, terms.length)
    const postingStart = this.postingStart
    let ordinal = 0
    for (let from = 0; from < total; from += BLOCK) {
      const termBlock = this.termBlocks[from >>> BLOCK_BITS]!
      const tfBlock = this.tfBlocks[from >>> BLOCK_BITS]!
      const end = Math.min(BLOCK, total - from)
      for (let i = 0; i < end; i++) {
        // The chunk this posting is in: chunk `ordinal`'s postings end where the next chunk's start.
        while (from + i >= postingStart[ordinal + 1]!) ordinal++
        const to = next[termBlock[i]!]!++
        pairs[2 * to] = ordinal
        pairs[2 * to + 1] = tfBlock[i]!
      }
    }
    // The default sort compares strings by code unit without calling back into JavaScript.
    terms.sort()
    for (const term of terms) {
      const id = this.vocabulary.get(term)!
      yield [term, pairs.subarray(2 * starts[id]!, 2 * starts[id + 1]!)] as const
    }
  }

  /** The finished columns, trimmed to `count` (views of the builder's arrays). */
  columns(): { readonly lengths: Uint32Array; readonly magnitudes: Float64Array; readonly vectors: Float64Array } {
    return {
      lengths: this.lengths.subarray(0, this.count),
      magnitudes: this.magnitudes.subarray(0, this.count),
      vectors: this.vectors.subarray(0, this.count * this.dimensions)
    }
  }
}
