/** A snapshot's vector blocks: streamed from the file on a generation's first scan, kept (and joined) from its second. */

import type { DatabaseSync } from "node:sqlite"
import type { VectorBlock } from "../../search/IndexView.ts"
import type { Caches } from "./Caches.ts"
import { release, type sqliteReadsAt } from "./Connection.ts"
import { type Corrupt, columnsOf, decodeRows, floatsOf, keptBlocks, storedBlock } from "./Segments.ts"
import { rowsInBlock, type SegmentRow } from "./Tables.ts"

/** What the vector reader needs of a snapshot's reading: the file, its caches and the segments seen. */
export interface VectorReading {
  readonly corrupt: Corrupt
  readonly sqliteReads: ReturnType<typeof sqliteReadsAt>
  readonly db: DatabaseSync
  readonly caches: Caches
  readonly dimensions: number
  readonly segments: ReadonlyArray<SegmentRow>
  /** Each segment's first position. */
  readonly offsets: ReadonlyArray<number>
}

/**
 * Float32 blocks that lie one after the other in memory (a segment's, held together by `keptBlocks`) joined into one,
 * so a scan calls its kernel once per segment rather than once per 512 KiB block.
 */
const joined = (blocks: ReadonlyArray<VectorBlock>): Array<VectorBlock> => {
  const out: Array<VectorBlock> = []
  for (const block of blocks) {
    const last = out.at(-1)
    if (
      last?.floats !== undefined &&
      block.floats !== undefined &&
      last.floats.buffer === block.floats.buffer &&
      last.floats.byteOffset + last.floats.byteLength === block.floats.byteOffset &&
      last.offset + last.count === block.offset
    ) {
      const { buffer, byteOffset, length } = last.floats
      const floats = new Float32Array(buffer, byteOffset, length + block.floats.length)
      out[out.length - 1] = { ...last, count: last.count + block.count, floats }
    } else out.push(block)
  }
  return out
}

/** The vector blocks of every segment, streamed on a generation's first scan and kept from its second. */
export const vectorReader = (r: VectorReading) => {
  const { caches, corrupt, db, dimensions, offsets, segments, sqliteReads } = r
  let blocks: ReadonlyArray<VectorBlock> | undefined
  /**
   * The first scan in a generation reads each block and passes it on as stored (16-bit blocks, which the scan
   * decodes row by row) or decoded into one buffer, keeping nothing: a command that asks once (the CLI) would
   * otherwise keep every vector as float64, and on the benchmark machine touching fresh memory costs ~4 ms per MB
   * (56 MB at 442k chunks). Later scans are those of a long-lived reader (a server), which keeps the decoded blocks.
   */
  const vectorBlocks = (): Iterable<VectorBlock> => {
    if (blocks !== undefined) return blocks
    if (caches.vectorScans++ === 0) return streamedBlocks()
    return (blocks = segments.flatMap((segment, s) =>
      joined(
        keptBlocks(corrupt, db, segment, dimensions, columnsOf(caches, segment)).map((kept, b): VectorBlock => {
          const offset = offsets[s]! + b * segment.blockRows
          const count = rowsInBlock(segment.blockRows, segment.count, b)
          return kept.floats !== undefined
            ? { offset, count, floats: kept.floats, damaged: damagedIn(segment) }
            : { offset, count, vectors: kept.vectors, magnitudes: kept.magnitudes }
        })
      )
    ))
  }
  const damagedIn = (segment: SegmentRow) => () => corrupt(`segment ${segment.id} has a vector that is not finite`)
  const readStored = sqliteReads((at: { segment: SegmentRow; block: number }) =>
    storedBlock(corrupt, db, at.segment, dimensions, at.block)
  )
  function* streamedBlocks(): Generator<VectorBlock> {
    let buffer = new Float64Array(0)
    let norms = new Float64Array(0)
    for (let s = 0; s < segments.length; s++) {
      const segment = segments[s]!
      for (let b = 0; b * segment.blockRows < segment.count; b++) {
        const stored = readStored({ segment, block: b })
        const offset = offsets[s]! + b * segment.blockRows
        if (stored.encoding === "u16") {
          // As stored: the scan decodes each row as it scores it. A blob's bytes start at an even offset.
          const data = stored.data.byteOffset % 2 === 0 ? stored.data : stored.data.slice()
          yield {
            offset,
            count: stored.rows,
            codes: new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2)
          }
          release(stored.data)
          continue
        }
        if (stored.encoding === "f32") {
          // As stored: the scan's kernel reads them, and only rows near the top k are widened.
          yield { offset, count: stored.rows, floats: floatsOf(stored, dimensions), damaged: damagedIn(segment) }
          release(stored.data)
          continue
        }
        if (norms.length < stored.rows) {
          buffer = new Float64Array(segment.blockRows * dimensions)
          norms = new Float64Array(segment.blockRows)
        }
        const { magnitudes, vectors } = decodeRows(
          corrupt,
          segment,
          stored,
          dimensions,
          buffer.subarray(0, stored.rows * dimensions),
          norms.subarray(0, stored.rows)
        )
        release(stored.data)
        yield { offset, count: stored.rows, vectors, magnitudes }
      }
    }
  }
  return vectorBlocks
}
