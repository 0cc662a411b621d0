/** An index segment under construction: chunks appended in order, with typed-array columns and per-term postings. */
import { PostingsBuilder } from "./Postings.ts"

/** What the engine stores of one chunk for search: its length in terms and its term frequencies. */
export interface ChunkTerms {
  readonly length: number
  readonly terms: ReadonlyMap<string, number>
}

const grow = <A extends Float64Array | Uint32Array>(array: A, needed: number, make: (n: number) => A): A => {
  if (needed <= array.length) return array
  const next = make(Math.max(needed, array.length * 2))
  next.set(array)
  return next
}

/**
 * Accumulates chunks for one segment. Ordinals count from 0 in the order chunks are added; the segment's first chunk
 * id is `base`, so chunk `ordinal` has id `base + ordinal`. `byteLength` tracks memory for the writer's budget.
 */
export class SegmentBuilder {
  count = 0
  totalLength = 0
  lengths = new Uint32Array(1024)
  magnitudes = new Float64Array(1024)
  vectors: Float64Array
  readonly postings = new Map<string, PostingsBuilder>()
  private postingBytes = 0

  readonly base: number
  readonly dimensions: number

  constructor(base: number, dimensions: number) {
    this.base = base
    this.dimensions = dimensions
    this.vectors = new Float64Array(1024 * dimensions)
  }

  /** Appends one chunk: its terms and its vector (`dimensions` components of `vectors` from `at`). */
  add(chunk: ChunkTerms, vectors: Float64Array, at: number): number {
    const ordinal = this.count++
    this.lengths = grow(this.lengths, this.count, (n) => new Uint32Array(n))
    this.magnitudes = grow(this.magnitudes, this.count, (n) => new Float64Array(n))
    this.vectors = grow(this.vectors, this.count * this.dimensions, (n) => new Float64Array(n))
    this.lengths[ordinal] = chunk.length
    this.totalLength += chunk.length
    let sum = 0
    const row = ordinal * this.dimensions
    for (let j = 0; j < this.dimensions; j++) {
      const x = vectors[at + j]!
      this.vectors[row + j] = x
      sum += x * x
    }
    this.magnitudes[ordinal] = Math.sqrt(sum)
    for (const [term, tf] of chunk.terms) {
      let list = this.postings.get(term)
      if (list === undefined) {
        this.postings.set(term, list = new PostingsBuilder())
        this.postingBytes += 64 + term.length
      }
      const before = list.byteLength
      list.add(ordinal, tf)
      this.postingBytes += list.byteLength - before
    }
    return ordinal
  }

  /** Approximate memory held, in bytes. */
  get byteLength(): number {
    return this.postingBytes + this.count * (12 + 8 * this.dimensions)
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
