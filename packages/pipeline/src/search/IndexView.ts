/** What the engine reads from an index: the view a store's snapshot implements (segments of typed arrays, postings read on demand, vector blocks, chunk keys). */

import type { KeyOf, TieOrder } from "./Ranker.ts"
import type { ScoringScratch } from "./Scratch.ts"

/**
 * A block of vectors: `count` rows of `dimensions` components starting at position `offset`, either decoded (float64
 * components and each row's magnitude `sqrt(Σ x·x)`, summed left to right; 0 for an all-zero row), as stored in
 * 16-bit numerators `k` (each component being `k / 65535`, see `VectorCodec`), which a scan decodes as it goes, or as
 * stored in float32, which a scan widens where it needs the exact score (see `FloatScan`).
 */
export type VectorBlock = DecodedBlock | CodedBlock | FloatBlock

export interface DecodedBlock {
  readonly offset: number
  readonly count: number
  readonly vectors: Float64Array
  readonly magnitudes: Float64Array
  readonly codes?: undefined
  readonly floats?: undefined
}

export interface CodedBlock {
  readonly offset: number
  readonly count: number
  readonly codes: Uint16Array
  readonly vectors?: undefined
  readonly magnitudes?: undefined
  readonly floats?: undefined
}

export interface FloatBlock {
  readonly offset: number
  readonly count: number
  /** The components as stored, unchecked: a scan throws `damaged()` where one it reads is not finite. */
  readonly floats: Float32Array
  /** The store's typed error for a block with a component that is not finite. */
  readonly damaged: () => unknown
  readonly vectors?: undefined
  readonly magnitudes?: undefined
  readonly codes?: undefined
}

/** The postings of one term in one segment: positions are `offset + ordinals[i]`, ascending. */
export interface TermBlock {
  readonly offset: number
  readonly ordinals: Uint32Array
  readonly tfs: Uint32Array
}

/**
 * What the engine reads from an index. Positions number every stored chunk, deleted ones included (`deleted[p]` is
 * 1 for those); BM25 statistics count live chunks only, so an index updated in place scores exactly like one built
 * from scratch. The functions may read from storage; they throw the store's typed errors, never anything else.
 */
export interface IndexView {
  /** The engine's working memory and caches for this view, owned by whoever made the view (see `ScoringScratch`). */
  readonly scratch: ScoringScratch
  readonly dimensions: number
  /** Stored positions, deleted ones included. */
  readonly positions: number
  /** Live chunks: the N of BM25's idf. */
  readonly liveChunks: number
  /** Mean length in terms of the live chunks (0 without chunks). */
  readonly averageLength: number
  /** Each position's length in terms. */
  readonly lengths: Uint32Array
  /** 1 for a deleted position, or `undefined` when none is. */
  readonly deleted: Uint8Array | undefined
  /** The postings of a term, one block per segment that holds it (deleted positions included). */
  readonly postings: (term: string) => ReadonlyArray<TermBlock>
  /**
   * Every segment's vectors, in position order. A block may be valid only until the next one is taken (a store may
   * decode each block into one buffer), so a scan uses each block as it comes.
   */
  readonly vectorBlocks: () => Iterable<VectorBlock>
  /** The ranking key of a position. */
  readonly keyOf: KeyOf
  /**
   * Numbers each position's document (0 … documents - 1), for document-level ranking, with each document's rank in
   * doc id order (`order`). Within one document, positions must be in (start, end) order, so `order` and the position
   * decide ties without reading keys.
   */
  readonly documents: () => { readonly docOf: Int32Array; readonly count: number; readonly order: Int32Array }
  /**
   * The tie order of `documents` (`documentTies`) when the view has it at hand; `undefined` (or absent) when it would
   * first have to read every document, so equal scores are told apart by reading their keys instead. Where many
   * chunks tie (common words in equally long chunks), comparing two numbers beats reading two keys by far.
   */
  readonly tieOrder?: (() => TieOrder | undefined) | undefined
  /**
   * A term's live document frequency when it is not that of `postings` (a shard scores its part of an index with the
   * whole index's statistics, as `liveChunks` and `averageLength` are then too); absent, it is counted from `postings`.
   */
  readonly documentFrequency?: ((term: string) => number) | undefined
  /**
   * The approximate vector index's candidates for a query (`ef` a graph, live and allowed by the filter), each with
   * its exact score (NaN where the cosine is undefined); absent when the index has no approximate index. A caller that
   * keeps the best `keep` lets a store that reads what it scores score only the candidates nearest by its walk.
   */
  readonly annSearch?:
    | ((query: ArrayLike<number>, ef: number, filter?: PositionFilter, keep?: number) => AnnFound)
    | undefined
  /**
   * What of the index is in no graph although it names an approximate index (damage: those chunks are scanned), as
   * `check` says it; `undefined` when every chunk is in one.
   */
  readonly annMissing?: (() => string | undefined) | undefined
  /** What is damaged in the approximate index's stored parts that a walk may not read yet (its scan codes). */
  readonly annDamage?: (() => ReadonlyArray<string>) | undefined
  /**
   * Whether a walk reads only the graph rows it reaches (paged graphs walked over their stored codes), so that one
   * query in a process of its own walks sooner than it scans; absent or false: a walk first reads every graph.
   */
  readonly annPaged?: (() => boolean) | undefined
  /**
   * Reads up to `rows` more of the graph rows that walks read as they reach them (paged graphs): a long-running process
   * calls it between queries until it says true, when every graph is held whole and walks read nothing more (or the
   * graphs are read whole by the first walk). `undefined`: no walk yet, so nothing to hold; ask again later. Absent
   * where a store's graphs are read whole at the first walk.
   */
  readonly annWarm?: ((rows: number) => boolean | undefined) | undefined
}

/** Candidates of a vector query with their exact scores (NaN for a row whose cosine is undefined). */
export interface AnnFound {
  readonly positions: Int32Array
  readonly scores: Float64Array
  /**
   * The highest score at which some segment's list was cut (its last candidate's, among segments that gave as many
   * as were asked for), or -Infinity. A top k whose k-th score is not above it may have left out rows of equal score
   * that the graph did not reach, so the caller scans exactly.
   */
  readonly cutAt: number
}

/**
 * The positions a filtered query may return (a `--where` rule, evaluated per document by the store): `allowed[p]` is 1
 * for a live position whose document passes. `listed` holds those positions in ascending order when they are few
 * enough that visiting them alone beats a pass over every position; `count` is how many there are.
 */
export interface PositionFilter {
  readonly allowed: Uint8Array
  readonly count: number
  readonly listed: Int32Array | undefined
}
