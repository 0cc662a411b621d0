/** An index segment under construction: chunks appended in order, with typed-array columns and per-term postings. */
import { postingCode } from "./Postings.ts"

/**
 * `array` with room for `needed` elements: itself, or a copy four times as long. Four rather than two: each copy goes
 * to fresh memory, slow to touch on some machines (~4 ms per MB on the benchmark's), so a segment grows in few steps.
 */
const grow = <A extends Float64Array | Uint32Array>(array: A, needed: number, make: (n: number) => A): A => {
  if (needed <= array.length) return array
  const next = make(Math.max(needed, array.length * 4))
  next.set(array)
  return next
}

/**
 * Per term, `FIELDS` numbers of `SegmentBuilder.terms`, side by side so that a posting reads and writes one place:
 * the chunk of its pending posting (the last chunk it occurred in, -1 before the first) and that posting's frequency;
 * the last chunk written to its bytes (-1: none yet); where its next byte goes, where its current slice ends (the link
 * to the next slice is stored there) and where its first slice starts; its postings so far, and its current slice's
 * level.
 */
const FIELDS = 8
const LAST = 0
const TF = 1
const WRITTEN = 2
const AT = 3
const END = 4
const HEAD = 5
const DF = 6
const LEVEL = 7

/**
 * The sizes of a term's slices, one after another, the last repeated: most terms have few postings, a few have one in
 * most chunks. Each slice is followed by 4 bytes, where the next one's start is written once it exists.
 */
const SLICE_SIZES = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
const LINK = 4

/** Postings counted as 8 bytes each, in blocks of this many, for the writer's budget (see `byteLength`). */
const BUDGET_BLOCK = 1 << 16

/**
 * Accumulates chunks for one segment. Ordinals count from 0 in the order chunks are added; the segment's first chunk
 * id is `base`, so chunk `ordinal` has id `base + ordinal`. Each term's postings are encoded as they come (the format
 * of `encodePostings`) into slices of one byte pool, as Lucene's in-memory postings are: a posting is written when the
 * term next occurs in another chunk (its frequency is known by then), so adding a chunk allocates almost nothing and a
 * segment holds its postings in about the bytes they are stored in. A builder made with the one written before takes
 * over its arrays: touching fresh memory is slow on some machines (~4 ms per MB on the benchmark's), and each segment
 * of a run would otherwise allocate its own again.
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
  /** Per term number, its `FIELDS` numbers. */
  private terms = new Int32Array(FIELDS * 1024)
  /** The terms' slices, `poolSize` bytes of it used. */
  private pool = new Uint8Array(1 << 16)
  private poolSize = 0
  /** Where `encodedPostings` gathers a term's slices. */
  private gathered = new Uint8Array(1 << 12)
  readonly base: number
  readonly dimensions: number

  /**
   * A builder for chunks from id `base` on; given `previous` (written, and not used again), it reuses its arrays.
   * Without one, its per-chunk arrays start with room for `capacity` chunks, and grow from there as `grow` says.
   */
  constructor(base: number, dimensions: number, previous?: SegmentBuilder, capacity = 1024) {
    this.base = base
    this.dimensions = dimensions
    if (previous === undefined || previous.dimensions !== dimensions) {
      this.vectors = new Float64Array(capacity * dimensions)
      this.lengths = new Uint32Array(capacity)
      this.magnitudes = new Float64Array(capacity)
      return
    }
    this.vectors = previous.vectors
    this.lengths = previous.lengths
    this.magnitudes = previous.magnitudes
    // A term's numbers are all set when it is numbered, so the previous ones need no clearing.
    this.terms = previous.terms
    this.pool = previous.pool
    this.gathered = previous.gathered
  }

  /** The segment's number for `term`, numbering it if it is new. */
  termId(term: string): number {
    let id = this.vocabulary.get(term)
    if (id === undefined) {
      id = this.vocabulary.size
      this.vocabulary.set(term, id)
      this.termBytes += 64 + 2 * term.length
      if (FIELDS * (id + 1) > this.terms.length) {
        const grown = new Int32Array(2 * this.terms.length)
        grown.set(this.terms)
        this.terms = grown
      }
      const head = this.slice(SLICE_SIZES[0]!)
      const r = FIELDS * id
      const t = this.terms
      t[r + LAST] = -1
      t[r + TF] = 0
      t[r + WRITTEN] = -1
      t[r + AT] = head
      t[r + END] = head + SLICE_SIZES[0]!
      t[r + HEAD] = head
      t[r + DF] = 0
      t[r + LEVEL] = 0
    }
    return id
  }

  /** Takes `size` bytes of the pool, and the link after them; returns where they start. */
  private slice(size: number): number {
    const start = this.poolSize
    if (start + size + LINK > this.pool.length) {
      const grown = new Uint8Array(Math.max(2 * this.pool.length, start + size + LINK))
      grown.set(this.pool.subarray(0, start))
      this.pool = grown
    }
    this.poolSize = start + size + LINK
    return start
  }

  /** Appends `byte` to the bytes of the term whose numbers start at `r`, going on to a new slice when one is full. */
  private writeByte(r: number, byte: number): void {
    const t = this.terms
    let at = t[r + AT]!
    if (at === t[r + END]) {
      const level = Math.min(t[r + LEVEL]! + 1, SLICE_SIZES.length - 1)
      const size = SLICE_SIZES[level]!
      const next = this.slice(size)
      const pool = this.pool
      pool[at] = next & 0xff
      pool[at + 1] = (next >>> 8) & 0xff
      pool[at + 2] = (next >>> 16) & 0xff
      pool[at + 3] = next >>> 24
      t[r + LEVEL] = level
      t[r + END] = next + size
      at = next
    }
    this.pool[at] = byte
    t[r + AT] = at + 1
  }

  private writeVarint(r: number, value: number): void {
    let v = value
    while (v >= 0x80) {
      this.writeByte(r, (v & 0x7f) | 0x80)
      v = Math.floor(v / 128)
    }
    this.writeByte(r, v)
  }

  /** Writes the pending posting of the term whose numbers start at `r`, as `encodePostings` would. */
  private writePending(r: number): void {
    const t = this.terms
    const ordinal = t[r + LAST]!
    const tf = t[r + TF]!
    const written = t[r + WRITTEN]!
    t[r + WRITTEN] = ordinal
    this.writeVarint(r, postingCode(written < 0 ? ordinal : ordinal - written, tf))
    if (tf > 1) this.writeVarint(r, tf)
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
      // `numberOf` may number a new term, which can grow `terms`.
      const r = FIELDS * numberOf(ids[i]!)
      const t = this.terms
      const last = t[r + LAST]!
      if (last === ordinal) {
        t[r + TF]!++
        continue
      }
      if (last >= 0) this.writePending(r)
      t[r + LAST] = ordinal
      t[r + TF] = 1
      t[r + DF]!++
      this.postingCount++
    }
    return ordinal
  }

  /**
   * A measure of the memory this segment's chunks take, in bytes, for the writer's budget: the terms, the vectors, and
   * 8 bytes per posting in blocks of 65,536. The pool holds about a fifth of that, but the segment sizes a run cuts by
   * this measure are tuned to it (docs/decisions/0027-postings-encoded-as-they-come.md).
   */
  get byteLength(): number {
    const blocks = Math.ceil(this.postingCount / BUDGET_BLOCK)
    return this.termBytes + blocks * BUDGET_BLOCK * 8 + this.count * (16 + 8 * this.dimensions)
  }

  /**
   * Each term with its postings in code-unit order of the terms (the order a B-tree takes them fastest): how many, and
   * their bytes as `encodePostings` makes them. The bytes are a view of an array the next term reuses: copy them to
   * keep them (a SQLite binding copies).
   */
  *encodedPostings(): Generator<readonly [term: string, count: number, bytes: Uint8Array]> {
    // The default sort compares strings by code unit without calling back into JavaScript.
    const terms = [...this.vocabulary.keys()].sort()
    for (const term of terms) {
      const r = FIELDS * this.vocabulary.get(term)!
      if (this.terms[r + LAST]! !== this.terms[r + WRITTEN]!) this.writePending(r)
      yield [term, this.terms[r + DF]!, this.gather(r)] as const
    }
  }

  /** The bytes of the term whose numbers start at `r`, its slices followed link by link. */
  private gather(r: number): Uint8Array {
    const t = this.terms
    const pool = this.pool
    const at = t[r + AT]!
    const end = t[r + END]!
    let size = 0
    let start = t[r + HEAD]!
    for (let level = 0; ; level = Math.min(level + 1, SLICE_SIZES.length - 1)) {
      const sliceEnd = start + SLICE_SIZES[level]!
      const last = sliceEnd === end
      const to = last ? at : sliceEnd
      if (size + (to - start) > this.gathered.length) {
        const grown = new Uint8Array(Math.max(2 * this.gathered.length, size + (to - start)))
        grown.set(this.gathered.subarray(0, size))
        this.gathered = grown
      }
      this.gathered.set(pool.subarray(start, to), size)
      size += to - start
      if (last) return this.gathered.subarray(0, size)
      start = pool[sliceEnd]! | (pool[sliceEnd + 1]! << 8) | (pool[sliceEnd + 2]! << 16) | (pool[sliceEnd + 3]! << 24)
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
