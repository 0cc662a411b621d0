/**
 * The working memory and caches of scoring, owned by whoever owns an index view (a store's generation of the file, a
 * loaded snapshot) and reached through the view, so that the engine's modules hold no state of their own.
 */
import { CodedScanner } from "./CodedScan.ts"
import { FloatScanner } from "./FloatScan.ts"

/**
 * Lexical scoring's working memory. A call scores one segment at a time: a score slot per ordinal of the segment and
 * the ordinals touched, in the order first touched; the segment's candidates are then moved to `positions` and
 * `scores`, and its slots left at 0 for the next. A query then costs in proportion to its postings, not to the size
 * of the index, and allocates nothing once the memory has grown. The slots of one segment rather than of every
 * position: a fresh process touches a page of memory per 512 slots it writes, each at a cost (about 17 µs on the
 * benchmark's VM), and the postings of a query with a few thousand chunks fall on most pages of a slot per position.
 * The candidates of one call stay until the next call on the same scratch, so they are visited in place;
 * `generation` tells a call's candidates whether a later call has since taken the memory.
 *
 * Length norms (`k1 · (1 − b + b · length / averageLength)` of every position) are kept per lengths array, for the
 * last average and parameters they were computed with; `normsWanted` holds the lengths arrays a query wanted norms
 * for once, since they are computed for the second (see `lengthNormsOf`).
 */
/** A postings list's blocks for pruned scoring (see `Pruned.ts`): each one's last ordinal, and its bounds. */
export interface BlockBounds {
  readonly last: Uint32Array
  /**
   * Each block's highest `tf · (k1 + 1) / (tf + k1 · norm)` for the parameters and average length last asked for (a
   * bound from the block's highest tf and shortest chunk alone is far looser: they are often two different postings).
   */
  shares?: { readonly averageLength: number; readonly k1: number; readonly b: number; readonly values: Float64Array }
}

export class ScoringScratch {
  slots = new Float64Array(0)
  touched = new Int32Array(1024)
  positions = new Int32Array(1024)
  scores = new Float64Array(1024)
  generation = 0
  readonly norms = new WeakMap<
    Uint32Array,
    { readonly averageLength: number; readonly k1: number; readonly b: number; readonly norms: Float64Array }
  >()
  readonly normsWanted = new WeakSet<Uint32Array>()
  /** Each postings list's block bounds for pruned scoring, made on its first query (see `Pruned.ts`). */
  readonly blockBounds = new WeakMap<Uint32Array, BlockBounds>()
  /** The WebAssembly kernel of vector scans over coded blocks. */
  readonly coded = new CodedScanner()
  /** The WebAssembly kernel of vector scans over float32 blocks. */
  readonly floats = new FloatScanner()
}
