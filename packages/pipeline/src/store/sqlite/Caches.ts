/** What a store's readers keep of one generation of the file between snapshots: decoded columns, postings, bodies, rows and filters, each bounded. */

import type { PackReader } from "../../index/BodyPack.ts"
import type { DecodedPostings } from "../../index/Postings.ts"
import type { TableFilter } from "../../search/Filter.ts"
import type { PositionFilter } from "../../search/IndexView.ts"
import type { ScoringScratch } from "../../search/Scratch.ts"
import type { BodyCache } from "../BodyCache.ts"
import { POSTINGS_CACHE_BYTES, type SegmentColumns } from "./Tables.ts"

/** A reader's caches for one generation of the file (see `makeSqliteStore`). */
export interface Caches {
  readonly generation: string
  readonly columns: Map<number, SegmentColumns>
  readonly deleted: Map<number, { readonly version: number; readonly bits: Uint8Array | undefined }>
  /** The concatenated deletions, and lengths once a query has read them, for one set of segment versions. */
  layout:
    | { readonly signature: string; lengths: Uint32Array | undefined; readonly deleted: Uint8Array | undefined }
    | undefined
  /**
   * Decoded postings by segment and term (`null`: the segment lacks the term), least recently used first, up to
   * `POSTINGS_CACHE_BYTES`: a warm query for frequent terms skips reading and decoding them.
   */
  readonly postings: Map<string, DecodedPostings | null>
  postingBytes: number
  /**
   * The documents as query filters read them, for one layout (the same segments and deletions mean the same documents
   * at the same positions), with the positions of recently used rules by their JSON form, least recently used first.
   */
  filters:
    | { readonly signature: string; readonly table: TableFilter; readonly results: Map<string, PositionFilter> }
    | undefined
  /**
   * Chunk rows as results and ties read them, by segment id and ordinal (segment ids are never reused within a
   * generation, and a segment's chunks never change), up to `ROW_CACHE_ENTRIES`: a server answering similar queries
   * reads each row once instead of once per query.
   */
  readonly rows: Map<number, ChunkRow>
  /**
   * Bodies by segment id and document row, up to `BODY_CACHE_CHARS`. A document's chunks live in one segment and a
   * new version of it goes to a new segment, so within a segment a document row always names the same text.
   */
  readonly bodies: BodyCache<string>
  /** Bytes of vectors kept with `rows`. */
  rowVectorBytes: number
  /** The engine's working memory for this generation's snapshots. */
  readonly scratch: ScoringScratch
  /** Decompresses this generation's packs. */
  readonly unpacker: PackReader
  /** Vector scans made in this generation (see `vectorBlocks`). */
  vectorScans: number
  /** Decompressed packs by id (never reused: AUTOINCREMENT), oldest first, up to `PACK_CACHE_BYTES`. */
  readonly packs: Map<number, Uint8Array>
  /** Bytes of the packs kept. */
  packBytes: number
}

/** A chunk's row: its document's id, title and row number, and its span. */
export interface ChunkRow {
  readonly docId: string
  readonly title: string
  readonly doc: number
  readonly start: number
  readonly end: number
  /** The chunk's vector, once a result has read it. */
  vector?: Float64Array
}

/** How many chunk rows a generation's cache keeps (about 100 bytes each); it starts over when full. */
export const ROW_CACHE_ENTRIES = 100_000
/** How many bytes of results' vectors those rows keep at most (vectors of 384 dimensions are 3 KB each). */
export const ROW_VECTOR_BYTES = 8 * 1024 * 1024

/** Keeps a term's decoded postings, dropping the least recently used past `POSTINGS_CACHE_BYTES`. */
export const cachePostings = (caches: Caches, key: string, decoded: DecodedPostings | null) => {
  caches.postings.set(key, decoded)
  caches.postingBytes += 64 + (decoded === null ? 0 : decoded.ordinals.byteLength * 2)
  for (const [old, value] of caches.postings) {
    if (caches.postingBytes <= POSTINGS_CACHE_BYTES) break
    caches.postings.delete(old)
    caches.postingBytes -= 64 + (value === null ? 0 : value.ordinals.byteLength * 2)
  }
}
