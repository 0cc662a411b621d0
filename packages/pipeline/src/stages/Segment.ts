/** An index segment under construction: chunks appended in order, with typed-array columns and per-term postings. */

const grow = <A extends Float64Array | Uint32Array>(array: A, needed: number, make: (n: number) => A): A => {
  if (needed <= array.length) return array
  const next = make(Math.max(needed, array.length * 2))
  next.set(array)
  return next
}

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
 * `byteLength` tracks memory for the writer's budget.
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
  private postingTerms = new Uint32Array(1 << 16)
  private postingOrdinals = new Uint32Array(1 << 16)
  private postingTfs = new Uint32Array(1 << 16)
  /** Per term number: the last chunk it occurred in and where that posting is, to count repeats in one chunk. */
  private lastOrdinal: Int32Array = new Int32Array(1024).fill(-1)
  private lastPosting: Int32Array = new Int32Array(1024).fill(-1)
  readonly base: number
  readonly dimensions: number

  constructor(base: number, dimensions: number) {
    this.base = base
    this.dimensions = dimensions
    this.vectors = new Float64Array(1024 * dimensions)
  }

  /** The segment's number for `term`, numbering it if it is new. */
  termId(term: string): number {
    let id = this.vocabulary.get(term)
    if (id === undefined) {
      id = this.vocabulary.size
      this.vocabulary.set(term, id)
      this.termBytes += 64 + 2 * term.length
      this.lastOrdinal = growInt(this.lastOrdinal, id + 1)
      this.lastPosting = growInt(this.lastPosting, id + 1)
    }
    return id
  }

  /**
   * Appends one chunk: its terms in order (`ids[from … to)`, mapped to segment term numbers by `numberOf`) and its
   * vector (`dimensions` components of `vectors` from `at`). Returns the chunk's ordinal.
   */
  add(ids: ArrayLike<number>, from: number, to: number, numberOf: (id: number) => number, vectors: Float64Array, at: number): number {
    const ordinal = this.count++
    this.lengths = grow(this.lengths, this.count, (n) => new Uint32Array(n))
    this.magnitudes = grow(this.magnitudes, this.count, (n) => new Float64Array(n))
    this.vectors = grow(this.vectors, this.count * this.dimensions, (n) => new Float64Array(n))
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
    if (this.postingCount + length > this.postingTerms.length) {
      const size = Math.max(this.postingCount + length, this.postingTerms.length * 2)
      this.postingTerms = grow(this.postingTerms, size, (n) => new Uint32Array(n))
      this.postingOrdinals = grow(this.postingOrdinals, size, (n) => new Uint32Array(n))
      this.postingTfs = grow(this.postingTfs, size, (n) => new Uint32Array(n))
    }
    for (let i = from; i < to; i++) {
      const id = numberOf(ids[i]!)
      if (this.lastOrdinal[id] === ordinal) {
        this.postingTfs[this.lastPosting[id]!]!++
        continue
      }
      const n = this.postingCount++
      this.postingTerms[n] = id
      this.postingOrdinals[n] = ordinal
      this.postingTfs[n] = 1
      this.lastOrdinal[id] = ordinal
      this.lastPosting[id] = n
    }
    return ordinal
  }

  /** Approximate memory held, in bytes. */
  get byteLength(): number {
    return this.termBytes + this.postingTerms.length * 12 + this.count * (12 + 8 * this.dimensions)
  }

  /**
   * Each term with its postings as `[ordinal, tf, …]` pairs in increasing ordinal order, terms in the order they were
   * first used. Groups the flat postings with one counting sort.
   */
  *termPostings(): Generator<readonly [term: string, pairs: Uint32Array]> {
    const terms = this.vocabulary.size
    const starts = new Uint32Array(terms + 1)
    for (let i = 0; i < this.postingCount; i++) starts[this.postingTerms[i]! + 1]!++
    for (let t = 0; t < terms; t++) starts[t + 1] = starts[t + 1]! + starts[t]!
    const pairs = new Uint32Array(this.postingCount * 2)
    const next = starts.slice(0, terms)
    for (let i = 0; i < this.postingCount; i++) {
      const at = next[this.postingTerms[i]!]!++
      pairs[2 * at] = this.postingOrdinals[i]!
      pairs[2 * at + 1] = this.postingTfs[i]!
    }
    for (const [term, id] of this.vocabulary) yield [term, pairs.subarray(2 * starts[id]!, 2 * starts[id + 1]!)] as const
  }

  /** The finished columns, trimmed to `count`, as bytes for storage. */
  columns(): { readonly lengths: Uint8Array; readonly magnitudes: Uint8Array; readonly vectors: Uint8Array } {
    const bytes = (a: Float64Array | Uint32Array, n: number) => new Uint8Array(a.buffer, 0, n * a.BYTES_PER_ELEMENT)
    return {
      lengths: bytes(this.lengths, this.count),
      magnitudes: bytes(this.magnitudes, this.count),
      vectors: bytes(this.vectors, this.count * this.dimensions)
    }
  }
}
