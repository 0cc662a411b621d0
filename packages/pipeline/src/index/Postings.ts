/** Compact postings: the chunks holding one term and how often, as varint-encoded gaps. */

/**
 * Encodes the postings of one term, given as `[ordinal, tf, ordinal, tf, …]` with ordinals increasing. Each posting
 * is `2 · gap + (tf > 1 ? 1 : 0)` as an unsigned LEB128 varint, where the gap is to the previous ordinal (the first
 * one: the ordinal itself), followed by the term frequency as a varint only when it is more than 1. Most terms occur
 * once in a chunk, so a posting is often one byte (as Lucene folds the frequency into the document delta).
 *
 * An encoder keeps its memory from call to call (fresh memory is slow to touch on some machines, and a segment's
 * postings are encoded term after term), so the bytes it returns are a view the next call reuses: copy them to keep
 * them; a SQLite binding copies.
 */
export class PostingsEncoder {
  private bytes = new Uint8Array(1 << 16)

  encode(pairs: ArrayLike<number>): Uint8Array {
    // At most 5 bytes for the code (below 2^35) and 5 for the frequency, per pair of numbers.
    if (this.bytes.length < pairs.length * 5) {
      this.bytes = new Uint8Array(Math.max(pairs.length * 5, 2 * this.bytes.length))
    }
    const bytes = this.bytes
    let size = 0
    let last = -1
    for (let i = 0; i < pairs.length; i += 2) {
      const ordinal = pairs[i]!
      const tf = pairs[i + 1]!
      size = writeVarint(bytes, size, postingCode(last < 0 ? ordinal : ordinal - last, tf))
      if (tf > 1) size = writeVarint(bytes, size, tf)
      last = ordinal
    }
    return bytes.subarray(0, size)
  }
}

/** One term's postings encoded in memory of their own (see `PostingsEncoder`). */
export const encodePostings = (pairs: ArrayLike<number>): Uint8Array => new PostingsEncoder().encode(pairs)

/** A posting's code: its gap, with the low bit saying that its frequency (above 1) follows as a varint of its own. */
export const postingCode = (gap: number, tf: number): number => 2 * gap + (tf > 1 ? 1 : 0)

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
 * Decodes `count` postings written by `PostingsEncoder` (or the segment builder, which writes the same bytes). Returns
 * `undefined` when the bytes do not hold exactly that many well-formed postings with ordinals below `limit` and
 * frequencies of at least 1 (a damaged index).
 */
export const decodePostings = (bytes: Uint8Array, count: number, limit: number): DecodedPostings | undefined => {
  const ordinals = new Uint32Array(count)
  const tfs = new Uint32Array(count)
  let at = 0
  /** The next varint, or -1 where the bytes end inside one or it is too long to be an ordinal. */
  const varint = (): number => {
    let value = 0
    let scale = 1
    let byte = 0
    do {
      if (at >= bytes.length || scale > 2 ** 42) return -1
      byte = bytes[at++]!
      value += (byte & 0x7f) * scale
      scale *= 128
    } while (byte & 0x80)
    return value
  }
  const end = bytes.length
  let ordinal = -1
  for (let n = 0; n < count; n++) {
    // Most codes and frequencies are one byte: read those in place (a call per posting is most of a cold decode).
    const first = at < end ? bytes[at]! : 0x80
    let flagged: boolean
    let gap: number
    if (first < 0x80) {
      at++
      flagged = (first & 1) === 1
      gap = first >> 1
    } else {
      const code = varint()
      if (code < 0) return undefined
      flagged = code % 2 === 1
      gap = (code - (flagged ? 1 : 0)) / 2
    }
    // A frequency follows the flag only, and then it is more than 1: one encoding per postings list.
    let tf = 1
    if (flagged) {
      const byte = at < end ? bytes[at]! : 0x80
      if (byte < 0x80) {
        at++
        tf = byte
      } else tf = varint()
    }
    if (tf < 1 || (flagged && tf < 2) || (n > 0 && gap === 0)) return undefined
    ordinal = ordinal < 0 ? gap : ordinal + gap
    if (ordinal >= limit) return undefined
    ordinals[n] = ordinal
    tfs[n] = tf
  }
  return at === bytes.length ? { ordinals, tfs } : undefined
}
