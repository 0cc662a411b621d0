/** A segment's columns as one read transaction reads them: its row, chunk lengths, vector blocks and deletions, checked. */

import type { DatabaseSync } from "node:sqlite"
import {
  BYTES as BYTES_OF,
  decodeRows as decodeBlock,
  encodingFor,
  type VectorEncoding
} from "../../index/VectorCodec.ts"
import { holdFloats } from "../../search/FloatScan.ts"
import type { IndexCorrupt } from "../StoreErrors.ts"
import type { Caches } from "./Caches.ts"
import { release, statement } from "./Connection.ts"
import {
  BLOCKS_PER_SEGMENT,
  isDeleted,
  type KeptBlock,
  rowsInBlock,
  type SegmentColumns,
  type SegmentRow
} from "./Tables.ts"

/** Builds the store's error for damage a read finds. */
export type Corrupt = (detail: string) => IndexCorrupt

/** The segments of one read transaction, in position order, with their counts checked. */
export const segmentRows = (corrupt: Corrupt, db: DatabaseSync): Array<SegmentRow> =>
  statement(db, "SELECT id, base, count, live, live_length, version, block_rows FROM segments ORDER BY base")
    .all()
    .map((row) => {
      const r = row as Record<string, unknown>
      const [id, base, count, live, liveLength, version, blockRows] = [
        r["id"],
        r["base"],
        r["count"],
        r["live"],
        r["live_length"],
        r["version"],
        r["block_rows"]
      ]
      if (
        typeof id !== "number" ||
        typeof base !== "number" ||
        typeof count !== "number" ||
        typeof live !== "number" ||
        typeof liveLength !== "number" ||
        typeof version !== "number" ||
        typeof blockRows !== "number" ||
        count < 1 ||
        live < 0 ||
        live > count ||
        blockRows < 1
      )
        throw corrupt(`segment ${String(id)} has invalid counts`)
      return { id, base, count, live, liveLength, version, blockRows }
    })

/** Which of `count` ascending starts (the first of them 0 or less) the last not past `at` is, by bisection. */
export const startAtOrBefore = (starts: ArrayLike<number>, count: number, at: number): number => {
  let lo = 0
  let hi = count - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (starts[mid]! <= at) lo = mid
    else hi = mid - 1
  }
  return lo
}

/** A segment's cached columns, made empty on first use. */
export const columnsOf = (caches: Caches, segment: SegmentRow): SegmentColumns => {
  let columns = caches.columns.get(segment.id)
  if (columns === undefined) caches.columns.set(segment.id, (columns = { lengths: undefined, blocks: new Map() }))
  return columns
}

/**
 * Puts a segment's chunk lengths into `target` (its stretch of a snapshot's lengths), from the segment's cached copy
 * or else from its row; the stretch is then the cached copy. A row's blob is given back as soon as it is copied, so
 * the next segment's is read into the same memory: on a cold query, reading 442k chunks' lengths touched 3.4 MB of
 * fresh memory for 1.7 MB of lengths.
 */
export const lengthsInto = (
  corrupt: Corrupt,
  caches: Caches,
  db: DatabaseSync,
  segment: SegmentRow,
  target: Uint32Array
): void => {
  const columns = columnsOf(caches, segment)
  if (columns.lengths !== undefined) target.set(columns.lengths)
  else {
    const row = statement(db, "SELECT lengths FROM segments WHERE id = ?").get(segment.id) as
      | { lengths: unknown }
      | undefined
    const lengths = row?.lengths
    if (!(lengths instanceof Uint8Array) || lengths.byteLength !== segment.count * 4) {
      throw corrupt(`segment ${segment.id} has chunk lengths of the wrong size`)
    }
    new Uint8Array(target.buffer, target.byteOffset, target.byteLength).set(lengths)
    release(lengths)
  }
  columns.lengths = target
}

/** Block `block` of a segment as stored: its encoded vectors, with their size checked. */
export const storedBlock = (
  corrupt: Corrupt,
  db: DatabaseSync,
  segment: SegmentRow,
  dimensions: number,
  block: number
) => {
  const rows = rowsInBlock(segment.blockRows, segment.count, block)
  const data = (
    statement(db, "SELECT data FROM vectors WHERE id = ?").get(segment.id * BLOCKS_PER_SEGMENT + block) as
      | { data: unknown }
      | undefined
  )?.data
  const encoding = data instanceof Uint8Array ? encodingFor(data.byteLength, rows * dimensions) : undefined
  if (encoding === undefined) throw corrupt(`segment ${segment.id} has a vector block of the wrong size`)
  return { rows, encoding, data: data as Uint8Array }
}

/**
 * Row `at` of block `block` of a segment, read alone, decoded into `vector` with its magnitude into `magnitude[0]`, as
 * decoding its whole block would. SQLite still loads the block to cut the row out; what is saved is copying the block
 * into JavaScript and decoding it (measured: about a third of the time of reading the block whole). Only this row is
 * checked: a damaged row elsewhere in the block is found by whatever reads the block whole.
 */
export const storedRowInto = (
  corrupt: Corrupt,
  db: DatabaseSync,
  segment: SegmentRow,
  dimensions: number,
  block: number,
  at: number,
  vector: Float64Array,
  magnitude: Float64Array,
  encodings?: Map<number, VectorEncoding>
): void => {
  const rows = rowsInBlock(segment.blockRows, segment.count, block)
  const id = segment.id * BLOCKS_PER_SEGMENT + block
  // A block's encoding, from its length: read once per block where the caller keeps them (`encodings`).
  let encoding = encodings?.get(id)
  if (encoding === undefined) {
    const found = statement(db, "SELECT length(data) AS n, typeof(data) AS kind FROM vectors WHERE id = ?").get(id) as
      | { n: number; kind: string }
      | undefined
    encoding = found?.kind === "blob" ? encodingFor(found.n, rows * dimensions) : undefined
    if (encoding === undefined) throw corrupt(`segment ${segment.id} has a vector block of the wrong size`)
    encodings?.set(id, encoding)
  }
  const size = BYTES_OF[encoding]
  const data = (
    statement(db, "SELECT substr(data, ?, ?) AS data FROM vectors WHERE id = ?").get(
      1 + at * dimensions * size,
      dimensions * size,
      id
    ) as { data: unknown }
  ).data
  if (!(data instanceof Uint8Array) || data.byteLength !== dimensions * size)
    throw corrupt(`segment ${segment.id} has a vector block of the wrong size`)
  const decoded = decodeBlock(data, encoding, 1, dimensions, vector, magnitude)
  if (decoded === "not finite") throw corrupt(`segment ${segment.id} has a vector that is not finite`)
  if (decoded === "too long") throw corrupt(`segment ${segment.id} has a vector too long to score`)
}

/**
 * A stored block decoded into `vectors`, with each row's magnitude (`sqrt(Σ x·x)`, summed left to right, as the
 * segment was built and as the engine's reference computes it) into `magnitudes`: the same bits as storing them.
 */
export const decodeRows = (
  corrupt: Corrupt,
  segment: SegmentRow,
  stored: ReturnType<typeof storedBlock>,
  dimensions: number,
  vectors: Float64Array,
  magnitudes: Float64Array
): { readonly vectors: Float64Array; readonly magnitudes: Float64Array } => {
  const decoded = decodeBlock(stored.data, stored.encoding, stored.rows, dimensions, vectors, magnitudes)
  if (decoded === "not finite") throw corrupt(`segment ${segment.id} has a vector that is not finite`)
  // Finite components whose squares overflow: no model makes them, so the block is damaged.
  if (decoded === "too long") throw corrupt(`segment ${segment.id} has a vector too long to score`)
  return { vectors, magnitudes }
}

/** A float32 block's components where they lie, or in a copy where the blob's bytes are not 4-aligned. */
export const floatsOf = (stored: ReturnType<typeof storedBlock>, dimensions: number): Float32Array => {
  const data = stored.data.byteOffset % 4 === 0 ? stored.data : stored.data.slice()
  return new Float32Array(data.buffer, data.byteOffset, stored.rows * dimensions)
}

/**
 * Every vector block of a segment, read once, then kept: float32 blocks as stored, in one stretch of memory that the
 * scan's kernel reads in place (`holdFloats`; half the bytes of float64 copies, and no copying per scan), the others
 * decoded to float64 with their magnitudes. A float32 block's components are checked as a scan reads them.
 */
export const keptBlocks = (
  corrupt: Corrupt,
  db: DatabaseSync,
  segment: SegmentRow,
  dimensions: number,
  columns: SegmentColumns
): Array<KeptBlock> => {
  const kept: Array<KeptBlock> = []
  for (let b = 0; b * segment.blockRows < segment.count; b++) {
    let block: KeptBlock | undefined = columns.blocks.get(b)
    if (block === undefined) {
      block = readKept(corrupt, db, segment, dimensions, b, roomIn(columns, segment, dimensions, b))
      columns.blocks.set(b, block)
    }
    kept.push(block)
  }
  return kept
}

/**
 * Where block `b`'s float32 rows are kept: their stretch of the segment's room in a scan kernel's memory (made by the
 * first float32 block: a segment's blocks come from one model, so they share an encoding), or a new array.
 */
const roomIn =
  (columns: SegmentColumns, segment: SegmentRow, dimensions: number, b: number) =>
  (stored: ReturnType<typeof storedBlock>): Float32Array | undefined => {
    if (columns.held === undefined)
      columns.held = holdFloats(segment.count * dimensions, dimensions, segment.count) ?? null
    const from = b * segment.blockRows * dimensions
    return columns.held?.subarray(from, from + stored.rows * dimensions)
  }

/**
 * Block `b` of a segment as kept (see `keptBlocks`), read alone when no scan has kept it yet: a walk of the graphs
 * scores its candidates from the blocks that hold them, and reads no other. `inRoom`: kept in the segment's room in a
 * scan kernel's memory (made if need be), where a later scan reads it in place; otherwise in an array of its own, for
 * a process that may ask once and need not reserve a kernel's memory.
 */
export const keptBlockAt = (
  corrupt: Corrupt,
  db: DatabaseSync,
  segment: SegmentRow,
  dimensions: number,
  columns: SegmentColumns,
  b: number,
  inRoom: boolean
): KeptBlock => {
  let block = columns.blocks.get(b)
  if (block === undefined) {
    const room = inRoom ? roomIn(columns, segment, dimensions, b) : () => undefined
    block = readKept(corrupt, db, segment, dimensions, b, room)
    columns.blocks.set(b, block)
  }
  return block
}

/** Block `b` read and decoded to be kept; its float32 components (if so stored) copied into `room`'s array or anew. */
const readKept = (
  corrupt: Corrupt,
  db: DatabaseSync,
  segment: SegmentRow,
  dimensions: number,
  b: number,
  room: (stored: ReturnType<typeof storedBlock>) => Float32Array | undefined
): KeptBlock => {
  const stored = storedBlock(corrupt, db, segment, dimensions, b)
  let block: KeptBlock
  if (stored.encoding === "f32") {
    const floats = room(stored) ?? new Float32Array(stored.rows * dimensions)
    floats.set(floatsOf(stored, dimensions))
    block = { floats }
  } else {
    const rows = stored.rows * dimensions
    block = decodeRows(corrupt, segment, stored, dimensions, new Float64Array(rows), new Float64Array(stored.rows))
  }
  release(stored.data)
  return block
}

/** A segment's bitmap of deleted chunks (checked against its live count), or `undefined` when none is deleted. */
export const deletedOf = (
  corrupt: Corrupt,
  caches: Caches,
  db: DatabaseSync,
  segment: SegmentRow
): Uint8Array | undefined => {
  if (segment.live === segment.count) return undefined
  const cached = caches.deleted.get(segment.id)
  if (cached !== undefined && cached.version === segment.version) return cached.bits
  const row = statement(db, "SELECT deleted FROM segments WHERE id = ?").get(segment.id) as
    | { deleted: unknown }
    | undefined
  const bits = row?.deleted
  if (!(bits instanceof Uint8Array) || bits.byteLength !== Math.ceil(segment.count / 8)) {
    throw corrupt(`segment ${segment.id} has a damaged list of deleted chunks`)
  }
  let live = 0
  for (let i = 0; i < segment.count; i++) if (!isDeleted(bits, i)) live++
  if (live !== segment.live) throw corrupt(`segment ${segment.id} counts ${segment.live} live chunks but has ${live}`)
  caches.deleted.set(segment.id, { version: segment.version, bits })
  return bits
}
