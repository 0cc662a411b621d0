/** Compact postings: the chunks holding one term and how often, as varint-encoded gaps, built and read without allocation per posting. */

/**
 * Appends the postings of one term, chunk by chunk in increasing ordinal order, into a growable byte buffer: each
 * posting is the gap to the previous ordinal (the first one: the ordinal itself) and the term frequency, both as
 * unsigned LEB128 varints. A term in a few chunks costs a few bytes.
 */
export class PostingsBuilder {
  private bytes = new Uint8Array(8)
  private size = 0
  private last = -1
  /** How many chunks hold the term. */
  count = 0

  /** Adds `ordinal` (greater than every ordinal added before) with term frequency `tf` (at least 1). */
  add(ordinal: number, tf: number): void {
    if (this.size + 10 > this.bytes.length) {
      const grown = new Uint8Array(this.bytes.length * 2)
      grown.set(this.bytes)
      this.bytes = grown
    }
    this.size = writeVarint(this.bytes, this.size, this.last < 0 ? ordinal : ordinal - this.last)
    this.size = writeVarint(this.bytes, this.size, tf)
    this.last = ordinal
    this.count++
  }

  /** Bytes held, for the writer's memory budget. */
  get byteLength(): number {
    return this.size
  }

  /** The encoded postings (a view, valid until the next `add`). */
  encoded(): Uint8Array {
    return this.bytes.subarray(0, this.size)
  }
}

const writeVarint = (bytes: Uint8Array, at: number, value: number): number => {
  let v = value
  let i = at
  while (v >= 0x80) {
    bytes[i++] = (v & 0x7f) | 0x80
    v = Math.floor(v / 128)
  }
  bytes[i++] = v
  return i
}

/** Decoded postings of one term in one segment: ordinals ascending and their term frequencies, in step. */
export interface DecodedPostings {
  readonly ordinals: Uint32Array
  readonly tfs: Uint32Array
}

/**
 * Decodes `count` postings written by `PostingsBuilder`. Returns `undefined` when the bytes do not hold exactly that
 * many well-formed postings with ordinals below `limit` and frequencies of at least 1 (a damaged index).
 */
export const decodePostings = (bytes: Uint8Array, count: number, limit: number): DecodedPostings | undefined => {
  const ordinals = new Uint32Array(count)
  const tfs = new Uint32Array(count)
  let at = 0
  let ordinal = -1
  for (let n = 0; n < count; n++) {
    let gap = 0
    let scale = 1
    let byte = 0
    do {
      if (at >= bytes.length || scale > 2 ** 35) return undefined
      byte = bytes[at++]!
      gap += (byte & 0x7f) * scale
      scale *= 128
    } while (byte & 0x80)
    let tf = 0
    scale = 1
    do {
      if (at >= bytes.length || scale > 2 ** 35) return undefined
      byte = bytes[at++]!
      tf += (byte & 0x7f) * scale
      scale *= 128
    } while (byte & 0x80)
    ordinal = ordinal < 0 ? gap : ordinal + gap
    if ((n > 0 && gap === 0) || ordinal >= limit || tf < 1) return undefined
    ordinals[n] = ordinal
    tfs[n] = tf
  }
  return at === bytes.length ? { ordinals, tfs } : undefined
}
