/**
 * Cleaned bodies as an index stores them: the UTF-8 of consecutive documents concatenated into packs of about
 * `PACK_BYTES` and compressed together with zstd. One compression per pack rather than per document: documents are
 * often a few KB, and a compressor's set-up per call costs more than compressing (zstd per 64 KB pack is about six
 * times as fast as deflate per document: docs/decisions/0017-bodies-stored-once-in-compressed-packs.md). Each thread
 * keeps one zstd stream for its packs.
 */

import { randomFillSync } from "node:crypto"
import {
  constants,
  deflateRawSync,
  inflateRawSync,
  ZstdCompress,
  ZstdDecompress,
  zstdCompressSync,
  zstdDecompressSync
} from "node:zlib"
import { concatBytes } from "../base/Bytes.ts"

/** A pack closes once it holds this many bytes of text; a document of this size or more is a pack of its own. */
export const PACK_BYTES = 64 * 1024

/** Where a document's body is: bytes `from … to` of its pack once decompressed. Documents of one pack share it. */
export interface BodyRef {
  readonly pack: Uint8Array
  readonly from: number
  readonly to: number
}

/**
 * zstd's fastest positive level, with matches of 7 bytes or more (not 6) and a hash table of 2^12 entries (not 2^13),
 * which a 64 KB pack does not need to be larger: on packs of the benchmark's bodies, 0.80 of level 1's time for 1.08 of
 * its output. The index is about half packs, and compressing them is a good share of the preparing thread's time.
 */
const ZSTD_PARAMS = {
  [constants.ZSTD_c_compressionLevel]: 1,
  [constants.ZSTD_c_minMatch]: 7,
  [constants.ZSTD_c_hashLog]: 12,
  [constants.ZSTD_c_checksumFlag]: 1
}

const compressOnce = (bytes: Uint8Array): Uint8Array =>
  // A copy with a buffer of its own, so a worker can transfer it (a Buffer may share a pooled one).
  new Uint8Array(zstdCompressSync(bytes, { params: ZSTD_PARAMS }))

/** The parts of Node's zstd stream (the one behind `zstdCompressSync`) that `PackWriter.compress` drives directly. */
interface ZstdStream {
  readonly destroyed: boolean
  readonly _handle?: {
    writeSync(
      flush: number,
      input: Uint8Array,
      inOff: number,
      availIn: number,
      out: Uint8Array,
      outOff: number,
      availOut: number
    ): void
  } | null
  /** After a write: the room left in the output, and the input not taken yet. */
  readonly _writeState?: Uint32Array
}

/** `bytes` as one frame of the kept stream, or `undefined` when the stream is not as expected (or failed). */
const frameOf = (stream: ZstdStream, out: Uint8Array, bytes: Uint8Array): Uint8Array | undefined => {
  const handle = stream._handle
  const state = stream._writeState
  if (handle == null || !(state instanceof Uint32Array)) return undefined
  const parts: Array<Uint8Array> = []
  let inOff = 0
  let availIn = bytes.length
  for (;;) {
    handle.writeSync(constants.ZSTD_e_end, bytes, inOff, availIn, out, 0, out.length)
    if (stream.destroyed) return undefined
    const room = state[0]!
    const left = state[1]!
    parts.push(out.slice(0, out.length - room))
    inOff += availIn - left
    availIn = left
    // The frame is complete once all input is taken and zstd left room in the output.
    if (availIn === 0 && room > 0) break
  }
  return concatBytes(parts)
}

/** A kept compression stream and its output buffer, or `null` when this Node's stream is not as expected. */
const makeKeptStream = (): { readonly stream: ZstdStream; readonly out: Uint8Array } | null => {
  try {
    const stream = new ZstdCompress({ params: ZSTD_PARAMS }) as unknown as ZstdStream
    // A pack's text compresses to well under a pack: one write each, as a rule.
    const out = new Uint8Array(PACK_BYTES)
    // A sample whose frame takes more than one write (most of it does not compress), made twice: the second frame
    // must come out alike too.
    const sample = randomFillSync(new Uint8Array(PACK_BYTES + 16 * 1024))
    sample.fill(7, 0, 4096)
    const expected = compressOnce(sample)
    for (let i = 0; i < 2; i++) {
      const frame = frameOf(stream, out, sample)
      if (frame === undefined || Buffer.compare(frame, expected) !== 0) return null
    }
    return { stream, out }
  } catch {
    return null
  }
}

/**
 * Makes packs: the memory they are assembled in, and one zstd stream kept for them, each pack written as a frame of
 * its own. One per thread that packs (a preparing thread, the pool that compresses packs a thread left raw), kept as
 * long as it packs. `zstdCompressSync` makes and frees a compression context per call: about 60 µs, and fresh memory
 * to touch, which is slow on the benchmark's machine (the kept stream makes indexing 210 MB about 9 % faster:
 * docs/decisions/0018-one-zstd-stream-per-thread.md). The kept stream is driven through the steps the one-shot call
 * takes, without closing it. It is used only if, on a sample, its frames are the one-shot call's very bytes; and it is
 * dropped, for the one-shot call, if it ever fails.
 */
export class PackWriter {
  /** `undefined` until tried, `null` when not used. */
  private kept: { readonly stream: ZstdStream; readonly out: Uint8Array } | null | undefined
  /**
   * Where packs are assembled, reused from call to call (fresh memory is slow to touch on some machines); made at the
   * first pack, so a writer that never packs costs nothing.
   */
  private scratch = Buffer.allocUnsafe(0)

  private keptStream() {
    if (this.kept === undefined) this.kept = makeKeptStream()
    return this.kept
  }

  /**
   * A pack's text (UTF-8) compressed as `pack` compresses it, through the kept stream (the one-shot call if it is not
   * used): the same bytes on every thread, so a pack made with `raw` can be compressed here.
   */
  compress(bytes: Uint8Array): Uint8Array {
    const stream = this.keptStream()
    let frame: Uint8Array | undefined
    try {
      frame = stream === null ? undefined : frameOf(stream.stream, stream.out, bytes)
    } catch {
      frame = undefined
    }
    if (frame !== undefined) return frame
    // A stream that failed is not used again; the one-shot call compresses this pack and the next ones.
    this.kept = null
    return compressOnce(bytes)
  }

  /** Whether packs go through the kept zstd stream (false where this Node's stream is not as expected): for tests. */
  reusesStream(): boolean {
    return this.keptStream() !== null
  }

  /**
   * Packs `bodies` in order: the `i`-th result is where `bodies[i]` is. Each body is encoded on its own (a lone
   * surrogate ending one body never pairs with the next body's). Deterministic. With `raw`, the packs are left
   * uncompressed, for another thread to compress (`compress`); each then has a buffer of its own.
   */
  pack(bodies: ReadonlyArray<string>, raw = false): Array<BodyRef> {
    const refs: Array<BodyRef> = []
    const ranges: Array<number> = []
    let bytes = 0
    const close = () => {
      if (ranges.length === 0) return
      const packed = raw
        ? new Uint8Array(this.scratch.subarray(0, bytes))
        : this.compress(this.scratch.subarray(0, bytes))
      for (let i = 0; i < ranges.length; i += 2) refs.push({ pack: packed, from: ranges[i]!, to: ranges[i + 1]! })
      ranges.length = 0
      bytes = 0
    }
    for (const body of bodies) {
      // A body of a pack's size or more (in UTF-16 units, each at least a byte) starts a pack of its own, so reading a
      // small neighbour never decompresses it.
      if (body.length >= PACK_BYTES) close()
      // At most 3 bytes per UTF-16 unit.
      const room = bytes + 3 * body.length
      if (room > this.scratch.length) {
        const grown = Buffer.allocUnsafe(Math.max(room, 2 * this.scratch.length, 4 * PACK_BYTES))
        this.scratch.copy(grown, 0, 0, bytes)
        this.scratch = grown
      }
      const size = this.scratch.write(body, bytes, "utf8")
      ranges.push(bytes, bytes + size)
      bytes += size
      if (bytes >= PACK_BYTES) close()
    }
    close()
    // A document far larger than a pack leaves the buffer large: let it go rather than hold it for the run.
    if (this.scratch.length > 16 * PACK_BYTES) this.scratch = Buffer.allocUnsafe(4 * PACK_BYTES)
    return refs
  }
}

/**
 * The size a zstd frame's header declares for its content, or `undefined` when the bytes do not start a frame or its
 * header declares none (RFC 8878, 3.1.1.1).
 */
export const frameContentSize = (frame: Uint8Array): number | undefined => {
  if (frame.length < 6 || frame[0] !== 0x28 || frame[1] !== 0xb5 || frame[2] !== 0x2f || frame[3] !== 0xfd) {
    return undefined
  }
  const descriptor = frame[4]!
  const singleSegment = (descriptor & 0x20) !== 0
  const at = 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][descriptor & 3]!
  const field = descriptor >> 6
  const size = field === 0 ? (singleSegment ? 1 : 0) : 2 ** (field - 1) * 2
  if (size === 0 || frame.length < at + size) return undefined
  let value = 0
  for (let i = size - 1; i >= 0; i--) value = value * 256 + frame[at + i]!
  return size === 2 ? value + 256 : Number.isSafeInteger(value) ? value : undefined
}

/** `CHECK_TEXT` as a zstd frame (level 1, with its content size and checksum), made by `zstdCompressSync`. */
const CHECK_FRAME = Uint8Array.from([
  40, 181, 47, 253, 36, 74, 13, 2, 0, 148, 3, 97, 32, 102, 114, 97, 109, 101, 32, 116, 111, 32, 99, 104, 101, 99, 107,
  32, 116, 104, 101, 32, 107, 101, 112, 116, 32, 122, 115, 116, 100, 32, 115, 116, 114, 101, 97, 109, 32, 119, 105, 116,
  104, 58, 32, 105, 116, 32, 119, 105, 116, 104, 32, 116, 119, 105, 99, 101, 1, 0, 124, 179, 42, 3, 36, 197, 85, 214
])
const CHECK_TEXT = "a frame to check the kept zstd stream with: a frame to check it with twice"

/**
 * One frame decompressed through `stream` into a buffer of the size its header declares (and one byte more, so that
 * zstd finishes the frame, its checksum included, before the output is full); `undefined` unless the frame came out
 * whole at exactly that size with all its bytes taken, in which case the stream may be mid-frame and is not used again.
 */
const decodeFrame = (stream: ZstdStream, frame: Uint8Array, size: number): Uint8Array | undefined => {
  const handle = stream._handle
  const state = stream._writeState
  if (handle == null || !(state instanceof Uint32Array)) return undefined
  const out = new Uint8Array(size + 1)
  handle.writeSync(constants.ZSTD_e_end, frame, 0, frame.length, out, 0, out.length)
  if (stream.destroyed || state[1] !== 0 || state[0] !== 1) return undefined
  return out.subarray(0, size)
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

/** Bytes `from … to` of an unpacked pack as text, or `undefined` when they are out of range or not UTF-8. */
export const bodyIn = (unpacked: Uint8Array, from: number, to: number): string | undefined => {
  if (!(Number.isInteger(from) && Number.isInteger(to) && 0 <= from && from <= to && to <= unpacked.length)) {
    return undefined
  }
  try {
    return utf8.decode(unpacked.subarray(from, to))
  } catch {
    return undefined
  }
}

/** A kept decompression stream, or `null` when this Node's stream is not as expected. */
const makeDecoder = (): ZstdStream | null => {
  try {
    const decompress = new ZstdDecompress()
    // A damaged frame destroys the stream, which `decodeFrame` sees; the error event it also emits is not news.
    decompress.on("error", () => {})
    const stream = decompress as unknown as ZstdStream
    // Two frames in a row must come out whole: a small frame made once (compressing a sample here, as the
    // compressing side checks itself, cost a query process more than the stream saves it).
    const size = frameContentSize(CHECK_FRAME)
    for (let i = 0; i < 2; i++) {
      const text = size === undefined ? undefined : decodeFrame(stream, CHECK_FRAME, size)
      if (text === undefined || Buffer.from(text).toString("latin1") !== CHECK_TEXT) return null
    }
    return stream
  } catch {
    return null
  }
}

/**
 * Reads packs: a zstd decompression stream kept for them (made at first use), and the last pack unpacked. One per
 * reader that reads many (a store's generation of the file, a writer copying bodies out of packs).
 */
export class PackReader {
  /** `undefined` until tried, `null` when not used. */
  private keptDecoder: ZstdStream | null | undefined
  private lastPack: Uint8Array | undefined
  private lastUnpacked: Uint8Array | undefined

  private decoder(): ZstdStream | null {
    if (this.keptDecoder === undefined) this.keptDecoder = makeDecoder()
    return this.keptDecoder
  }

  /**
   * The text of a pack, decompressed; `undefined` when the bytes are not a pack (damaged), which the caller reports
   * as its own error. Through the kept zstd stream where it can: the one-shot call makes a decompression context and
   * gathers its output in pieces each time, 1–2 ms a pack on the benchmark's VM against 0.05 ms (a cold query shows
   * ten results, from as many packs). Anything unexpected goes to the one-shot call, whose answer is final.
   */
  unpack(pack: Uint8Array): Uint8Array | undefined {
    const size = frameContentSize(pack)
    const stream = size === undefined ? null : this.decoder()
    if (stream !== null) {
      let text: Uint8Array | undefined
      try {
        text = decodeFrame(stream, pack, size!)
      } catch {
        text = undefined
      }
      if (text !== undefined) return text
      // The stream may hold part of a frame: the next pack gets a new one.
      this.keptDecoder = undefined
    }
    try {
      return zstdDecompressSync(pack)
    } catch {
      return undefined
    }
  }

  /** Whether packs are decompressed through the kept zstd stream (false where this Node's stream is not as expected). */
  reusesDecoder(): boolean {
    return this.decoder() !== null
  }

  /** The body a reference points at, or `undefined` when its pack is damaged. */
  bodyOf(ref: BodyRef): string | undefined {
    const unpacked = this.unpack(ref.pack)
    return unpacked === undefined ? undefined : bodyIn(unpacked, ref.from, ref.to)
  }

  /**
   * The UTF-8 bytes of a body made in this process (by `PackWriter.pack`), for a store that keeps each body on its
   * own. Documents come in pack order, so the last pack unpacked is kept.
   */
  bodyBytes(ref: BodyRef): Uint8Array {
    if (ref.pack !== this.lastPack) {
      const unpacked = this.unpack(ref.pack)
      if (unpacked === undefined) throw new Error("a body pack made in this process does not decompress")
      this.lastPack = ref.pack
      this.lastUnpacked = unpacked
    }
    return this.lastUnpacked!.subarray(ref.from, ref.to)
  }
}

/**
 * A body on its own, for a store that keeps one body per row (PostgreSQL's, a row per document): raw deflate at
 * level 1, cheap to make and to read back one body at a time.
 */
export const deflateBody = (reader: PackReader, ref: BodyRef): Uint8Array =>
  new Uint8Array(deflateRawSync(reader.bodyBytes(ref), { level: 1 }))

/** A body kept on its own (`deflateBody`) as text, or `undefined` when its bytes are damaged. */
export const inflateBody = (bytes: Uint8Array): string | undefined => {
  try {
    return utf8.decode(inflateRawSync(bytes))
  } catch {
    return undefined
  }
}
