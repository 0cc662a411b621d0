/**
 * The walk of a SQLite index's graphs (Graphs.ts stores them): each group's graph walked for a query's candidates,
 * each candidate scored exactly, by the float64 operations of the exact scan, from its stored vector.
 */

import type { DatabaseSync } from "node:sqlite"
import type { AnnConfig } from "@funcpipe/domain/Manifest"
import type { VectorEncoding } from "../../index/VectorCodec.ts"
import { type Graph, isGraphNode } from "../../search/Hnsw.ts"
import { decodeGraph, decodeGraphHead, graphHeadProblem } from "../../search/HnswBytes.ts"
import type { AnnFound, PositionFilter } from "../../search/IndexView.ts"
import { exactScore, heldRow, NO_WALK, walkQuery } from "../../search/Rescore.ts"
import type { Caches } from "./Caches.ts"
import { statement } from "./Connection.ts"
import { pagedCodeRows, readGraphRows } from "./GraphRows.ts"
import { type GroupRow, groupRows, hasColumn, hasTable, liveGroups } from "./Graphs.ts"
import { type Corrupt, columnsOf, keptBlockAt, keptBlocks, startAtOrBefore, storedRowInto } from "./Segments.ts"
import { BLOCKS_PER_SEGMENT, type KeptBlock, type SegmentColumns, type SegmentRow } from "./Tables.ts"
import { decodeCodes, type WalkPart, type WalkRows, walkRowsOf } from "./WalkRows.ts"

/** A group's graph with the rows it walks, kept with its first segment's decoded columns. */
interface GroupGraph {
  /** The group's segments' ids, with the graph's settings and codes: a graph kept for other ones is read again. */
  readonly key: string
  readonly graph: Graph
  readonly rows: WalkRows
}

const graphs = new WeakMap<SegmentColumns, GroupGraph>()

/** How many rows of one block a first walk reads alone before it reads the block (a row costs about a third). */
const ROWS_READ_ALONE = 2

/** What the graph reader needs of a snapshot's reading. */
export interface GraphReading {
  readonly corrupt: Corrupt
  readonly db: DatabaseSync
  readonly caches: Caches
  readonly dimensions: number
  readonly segments: ReadonlyArray<SegmentRow>
  readonly offsets: ReadonlyArray<number>
  readonly deleted: Uint8Array | undefined
  /** The rows' form for walking (`--vector-codes`): `undefined` for unit float32 rows. */
  readonly codes: AnnConfig["codes"]
}

/** One walk of a snapshot's search: a group's graph, or a segment in none (every live row a candidate). */
interface Walk {
  /** The snapshot's indexes of the walk's segments, in order, and the walk's row where each starts. */
  readonly members: ReadonlyArray<number>
  readonly starts: Int32Array
  /** Each of the walk's segments' kept vector blocks, for scoring what the walk finds: read as they are needed. */
  readonly blocks: ReadonlyArray<Array<KeptBlock | undefined>>
  readonly state: GroupGraph | undefined
  readonly count: number
}

/**
 * A group's graph and the rows its walks go through, from its `ann` row: a paged graph's head, its rows read as walks
 * reach them (over codes stored with them) or all at once (over rows made from the blocks, `parts`); or a graph stored
 * whole, with the codes stored beside it or made from the blocks.
 */
const groupGraph = (
  r: GraphReading,
  group: GroupRow,
  row: { readonly data: unknown; readonly codes: unknown },
  count: number,
  named: string,
  parts: () => ReadonlyArray<WalkPart>
): { readonly graph: Graph; readonly rows: WalkRows } => {
  const { codes, corrupt, db, dimensions: d } = r
  const damaged = (problem: string) => corrupt(`${named} is damaged: ${problem}`)
  if (!(row.data instanceof Uint8Array)) throw damaged("the graph is not a blob")
  if (group.layout !== undefined) {
    const paged = decodeGraphHead(row.data)
    if (typeof paged === "string") throw damaged(paged)
    if (paged.graph.count !== count) throw corrupt(`${named} has another row count`)
    if (codes !== undefined && paged.coded)
      return { graph: paged.graph, rows: pagedCodeRows(paged, group.segment, d, named) }
    const problem = graphHeadProblem(paged) ?? readGraphRows(db, group.segment, paged, d)
    if (problem !== undefined) throw damaged(problem)
    return { graph: paged.graph, rows: walkRowsOf(parts, count, d, codes, undefined) }
  }
  const graph = decodeGraph(row.data)
  if (typeof graph === "string") throw damaged(graph)
  if (graph.count !== count) throw corrupt(`${named} has another row count`)
  // Codes stored with the graph are walked as they are; otherwise the rows are made from every block.
  const stored = row.codes instanceof Uint8Array ? decodeCodes(row.codes, count, d) : undefined
  if (typeof stored === "string") throw damaged(stored)
  return { graph, rows: walkRowsOf(parts, count, d, codes, stored) }
}

/**
 * Whether a walk of the index's graphs reads only the rows it reaches (every graph paged with its codes, walked over
 * them): then one query in a fresh process walks sooner than it scans.
 */
export const walksPaged = (db: DatabaseSync, codes: AnnConfig["codes"], segments: ReadonlyArray<SegmentRow>) => {
  if (codes === undefined || !hasTable(db)) return false
  const { kept } = liveGroups(groupRows(db), new Set(segments.map((segment) => segment.id)))
  return kept.length > 0 && kept.every((group) => group.layout === "rows+i8")
}

/**
 * A snapshot's approximate search over the groups' graphs, or `undefined` when the index has none: the `ef` rows
 * each graph finds nearest the query among live rows the filter allows, scored exactly. A segment in no graph (while
 * a run that would build it has not committed, or one that an older FuncPipe left) has every live row scored.
 */
export const graphSearch = (r: GraphReading) => {
  if (!hasTable(r.db)) return undefined
  const { caches, codes, corrupt, db, deleted, dimensions: d, offsets, segments } = r
  const indexOf = new Map(segments.map((segment, s) => [segment.id, s]))
  let walks: Array<Walk> | undefined
  let walked = false
  // The encoding of each block a row was read from alone, so that the next row read from it is one statement.
  const encodings = new Map<number, VectorEncoding>()
  const blocksOf = (s: number) => keptBlocks(corrupt, db, segments[s]!, d, columnsOf(caches, segments[s]!))
  // The snapshot's groups, read on its first query: each group's graph, and a walk of its own for each other segment.
  const walksOf = (): Array<Walk> => {
    if (walks !== undefined) return walks
    const found: Array<Walk> = []
    const covered = new Set<number>()
    const read = statement(
      db,
      `SELECT data, ${codes !== undefined && hasColumn(db, "codes") ? "codes" : "NULL AS codes"} FROM ann WHERE segment = ?`
    )
    for (const group of liveGroups(groupRows(db), new Set(indexOf.keys())).kept) {
      const indexes = group.members.map((id) => indexOf.get(id)!)
      const blocks = indexes.map((): Array<KeptBlock | undefined> => [])
      const starts = new Int32Array(indexes.length)
      let count = 0
      indexes.forEach((s, k) => {
        starts[k] = count
        count += segments[s]!.count
      })
      const first = segments[indexes[0]!]!
      const firstColumns = columnsOf(caches, first)
      const key = `${group.members.join(" ")} ${group.config} ${codes ?? "float32"} ${group.layout ?? "whole"}`
      let state = graphs.get(firstColumns)
      if (state?.key !== key) {
        const row = read.get(group.segment) as { data: unknown; codes: unknown }
        const named = `the vector graph of segment${indexes.length === 1 ? "" : "s"} ${group.members.join(", ")}`
        const parts = () =>
          indexes.map((s, k) => {
            const all = blocksOf(s)
            blocks[k]!.splice(0, all.length, ...all)
            return { segment: segments[s]!, blocks: all, at: starts[k]! }
          })
        state = { key, ...groupGraph(r, group, row, count, named, parts) }
        graphs.set(firstColumns, state)
        // A graph its other segments were first in (before they were grouped with this one) is not used again.
        for (const s of indexes.slice(1)) graphs.delete(columnsOf(caches, segments[s]!))
      }
      for (const s of indexes) covered.add(s)
      found.push({ members: indexes, starts, blocks, state, count })
    }
    segments.forEach((segment, s) => {
      if (!covered.has(s))
        found.push({
          members: [s],
          starts: new Int32Array(1),
          blocks: [blocksOf(s)],
          state: undefined,
          count: segment.count
        })
    })
    walks = found
    return found
  }
  /**
   * Reads up to `budget` more graph rows that walks would read as they reach them (those of graphs paged over codes;
   * other graphs are read whole by the first walk): a long-running process's graphs come to be held whole, a slice
   * between queries (see `IndexView.annWarm`). True once every graph is held whole; `undefined` before this snapshot's
   * first walk (a process that never walks holds no graph).
   */
  const warm = (budget: number): boolean | undefined => {
    if (!walked) return undefined
    let left = budget
    for (const { state } of walksOf()) {
      const fill = state?.rows.fill
      if (fill === undefined) continue
      while (left > 0) {
        const read = fill({ db, corrupt }, left)
        if (read === 0) break
        left -= read
      }
      if (left <= 0) return false
    }
    return true
  }
  const search = (query: ArrayLike<number>, ef: number, filter?: PositionFilter, keep?: number): AnnFound => {
    const prepared = walkQuery(query, d)
    if (prepared === undefined) return NO_WALK
    const { unit } = prepared
    const first = !walked
    walked = true
    // Over codes, a walk keeps no vector block: a server's memory for vectors stays the codes (and the graphs), and
    // each query reads what it scores, rows alone or a block it then lets go.
    const compact = codes !== undefined
    // Each walk's candidates: its rows, by their walking distance, nearest first.
    const found = walksOf().map((walk) => {
      const { members, starts, state } = walk
      const positionOf = (row: number) => {
        const k = startAtOrBefore(starts, members.length, row)
        return offsets[members[k]!]! + row - starts[k]!
      }
      // Every row allowed where nothing is deleted or filtered: no position to find on every step of the walk.
      const allowed =
        deleted === undefined && filter === undefined
          ? undefined
          : (row: number) => {
              const position = positionOf(row)
              return deleted?.[position] !== 1 && (filter === undefined || filter.allowed[position] === 1)
            }
      // Each graph is walked on its own: a walk told to stop where it cannot beat the graphs before stops before it
      // has left its entry's region, and finds half as much (bench:ann --segments).
      if (state === undefined) {
        const rows = Int32Array.from({ length: walk.count }, (_, row) => row).filter((row) => allowed?.(row) ?? true)
        return { walk, rows, dists: new Float64Array(rows.length), full: false }
      }
      const { dists, rows } = state.rows.search(state.graph, unit, ef, allowed, { db, corrupt })
      let nodes = 0
      for (const row of rows) if (isGraphNode(state.graph, row)) nodes++
      // Full: the walk kept as many nodes as asked for (copies found with them not counted).
      return { walk, rows, dists, full: nodes >= ef }
    })
    const within = rescoredWithin(found, compact ? keep : undefined)
    const positions: Array<number> = []
    const scores: Array<number> = []
    let cutAt = Number.NEGATIVE_INFINITY
    const row64 = new Float64Array(d)
    const magnitude = new Float64Array(1)
    const rowsRead = new Map<number, number>()
    // Whether some candidate was left unscored, and the lowest score of those scored.
    let skipped = false
    let lowestScored = Number.POSITIVE_INFINITY
    for (const { dists, full, rows, walk } of found) {
      const { blocks, members, starts } = walk
      let lowest = Number.POSITIVE_INFINITY
      let all = true
      for (let i = 0; i < rows.length; i++) {
        // Past the walks' best (`keep` given, over codes): left unscored, and so the walk's list not known whole.
        if (walk.state !== undefined && dists[i]! > within) {
          all = false
          skipped = true
          continue
        }
        const row = rows[i]!
        const k = startAtOrBefore(starts, members.length, row)
        const segment = segments[members[k]!]!
        const local = row - starts[k]!
        const b = Math.floor(local / segment.blockRows)
        const at = local % segment.blockRows
        const columns = columnsOf(caches, segment)
        // Every walk over codes reads its candidates' rows alone and keeps nothing (reading a block whole for its
        // several candidates was slower, and left more garbage, on a server's hybrid queries). A snapshot's first walk
        // over float32 rows does too (a command that asks once keeps nothing), unless the block had rows read already
        // (many rows of one vector, say): then the block, once. Later walks keep the blocks they read.
        const id = segment.id * BLOCKS_PER_SEGMENT + b
        const alone = compact || (first && (rowsRead.get(id) ?? 0) < ROWS_READ_ALONE)
        if (alone) rowsRead.set(id, (rowsRead.get(id) ?? 0) + 1)
        const block = alone
          ? (blocks[k]![b] ?? columns.blocks.get(b))
          : (blocks[k]![b] ??= keptBlockAt(corrupt, db, segment, d, columns, b, !first))
        // The row in float64 with its magnitude, by the very operations the exact scan uses.
        let vector: Float64Array | undefined = row64
        if (block === undefined) storedRowInto(corrupt, db, segment, d, b, at, row64, magnitude, encodings)
        else vector = heldRow(block, at, d, row64, magnitude)
        if (vector === undefined) throw corrupt(`segment ${segment.id} has a vector that is not finite`)
        const score = exactScore(prepared, vector, magnitude[0]!, d)
        positions.push(offsets[members[k]!]! + local)
        scores.push(score)
        if (score < lowest) lowest = score
        if (score < lowestScored) lowestScored = score
      }
      // A full list may have cut rows of its lowest score off: the caller then scans, where that score reaches its
      // top k. A list not scored whole ranks below the rows scored, as far as walking distances tell.
      if (full && all && lowest > cutAt) cutAt = lowest
    }
    // Rows left unscored are farther by the walk than every row scored, yet one may score as high as one scored (codes
    // round): where the top k reaches the lowest score scored, rows of its score may be among them, and the caller
    // scans.
    if (skipped && lowestScored > cutAt) cutAt = lowestScored
    return { positions: Int32Array.from(positions), scores: Float64Array.from(scores), cutAt }
  }
  return { search, warm }
}

/** How many of the walks' candidates are scored for a caller that keeps `keep`: the rest rank below, by codes. */
export const rescoreCount = (keep: number) => Math.max(2 * keep, keep + 10)

/**
 * The walking distance within which candidates are scored: all of them (+Infinity) unless `keep` is given and the
 * graphs found more than `rescoreCount(keep)`; then the distance of the `rescoreCount(keep)`-th nearest, so that rows
 * at one distance (copies of one vector) are scored all or none.
 */
const rescoredWithin = (
  found: ReadonlyArray<{ readonly walk: Walk; readonly dists: Float64Array }>,
  keep: number | undefined
): number => {
  if (keep === undefined) return Number.POSITIVE_INFINITY
  const walked = found.filter((f) => f.walk.state !== undefined)
  const wanted = rescoreCount(keep)
  // Fewer found than would be scored (a hybrid query's deep list, say): every one is scored, nothing to sort.
  if (walked.reduce((n, f) => n + f.dists.length, 0) <= wanted) return Number.POSITIVE_INFINITY
  const dists = Float64Array.from(walked.flatMap((f) => Array.from(f.dists))).sort()
  return dists[wanted - 1]!
}
