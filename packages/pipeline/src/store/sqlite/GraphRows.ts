/**
 * The rows of a SQLite index's graphs in the paged layout (HnswBytes.ts): one value a graph row in the `ann_rows` table,
 * keyed by the graph's first segment and the row, beside the graph's head in `ann`. A walk over scan codes reads a row
 * when it first reaches it, so a fresh process asking once reads the few thousand rows its walks reach (a few MB at 1M
 * rows) rather than every graph and every code (525 MB); a server keeps what it has read, and its walks come to read
 * nothing. A walk over float32 rows reads every row's links once, as the rows it walks are made from every block.
 */

import type { DatabaseSync } from "node:sqlite"
import { type CodedRows, type CodeRows, codeDistance, holdCodes } from "../../search/CodeKernel.ts"
import { type Graph, isNode, searchGraphBy } from "../../search/Hnsw.ts"
import { encodeGraphRow, graphRowInto, type PagedGraph } from "../../search/HnswBytes.ts"
import { statement } from "./Connection.ts"
import type { Corrupt } from "./Segments.ts"

export const ROWS_TABLE = "CREATE TABLE IF NOT EXISTS ann_rows (id INTEGER PRIMARY KEY, data BLOB NOT NULL)"

/**
 * A graph's rows are keyed `segment · ROWS_PER_GRAPH + row`, `segment` its first: more rows than a group ever holds
 * (`groupRowsOf` is at most 2^26), and keys within 2^53 for the first 2^26 segments.
 */
export const ROWS_PER_GRAPH = 2 ** 27

const rowId = (segment: number, row: number) => segment * ROWS_PER_GRAPH + row

/** Removes the stored rows of the graph whose first segment is `segment`. */
export const dropGraphRows = (db: DatabaseSync, segment: number): void => {
  statement(db, "DELETE FROM ann_rows WHERE id >= ? AND id < ?").run(rowId(segment, 0), rowId(segment + 1, 0))
}

/** Stores each node's row of `graph` (copies have none) for the graph of first segment `segment`, coded from `codes`. */
export const storeGraphRows = (db: DatabaseSync, segment: number, graph: Graph, codes: CodedRows | undefined): void => {
  if (graph.count > ROWS_PER_GRAPH) throw new RangeError(`a graph of ${graph.count} rows is past the paged layout's`)
  dropGraphRows(db, segment)
  const insert = statement(db, "INSERT INTO ann_rows (id, data) VALUES (?, ?)")
  for (let row = 0; row < graph.count; row++)
    if (isNode(graph.levels[row]!)) insert.run(rowId(segment, row), encodeGraphRow(graph, row, codes))
}

/**
 * Reads every stored row of the paged graph of first segment `segment` into its links (and into `codes`, when given, or
 * only checking them, "check"): a reason when one is missing, damaged, or not the graph's.
 */
export const readGraphRows = (
  db: DatabaseSync,
  segment: number,
  paged: PagedGraph,
  d: number,
  codes?: CodeRows | "check"
): string | undefined => {
  const { count } = paged.graph
  let read = 0
  const rows = statement(db, "SELECT id, data FROM ann_rows WHERE id >= ? AND id < ? ORDER BY id")
  for (const found of rows.iterate(rowId(segment, 0), rowId(segment + 1, 0)) as Iterable<{
    id: number
    data: unknown
  }>) {
    const row = found.id - rowId(segment, 0)
    if (row >= count) return `it has a row past its ${count}`
    const problem =
      found.data instanceof Uint8Array ? graphRowInto(found.data, paged, row, d, codes) : `row ${row} is not a blob`
    if (problem !== undefined) return problem
    read++
  }
  // As many as the head says are nodes (`graphHeadProblem` holds the head to its levels).
  return read === paged.nodes ? undefined : `${paged.nodes - read} of its rows are missing`
}

/** What a walk reads rows through: the snapshot's connection, and how it reports damage. */
export interface RowSource {
  readonly db: DatabaseSync
  readonly corrupt: Corrupt
}

/**
 * The rows of a coded paged graph held for its walks as they are read: each row's links and codes read from the
 * snapshot's connection when a walk reaches it (the links of a row it expands, read in one statement), kept for the
 * walks after. A walk reads a row's links only after its distance, so every row it expands has been read. `named`
 * names the graph in a damage report.
 */
export const pagedCodeRows = (paged: PagedGraph, segment: number, d: number, named: string) => {
  const { count } = paged.graph
  const m0 = 2 * paged.graph.params.m
  const codes = holdCodes(count, d)
  const loaded = new Uint8Array(count)
  const wanted: Array<number> = new Array(m0).fill(-1)
  const readSome = `SELECT id, data FROM ann_rows WHERE id IN (${Array.from({ length: m0 }, () => "?").join(", ")})`
  // The first row `fill` has not passed yet, and how many rows are held.
  let filled = 0
  let held = 0
  const hold = (row: number) => {
    loaded[row] = 1
    held++
  }
  return {
    /** How many of the graph's rows are held (read once, kept). */
    held: () => held,
    /**
     * Reads up to `budget` more rows a walk has not reached, in order, from the snapshot's connection (a long-running
     * process's graphs come to be held whole, a slice between queries); how many it read, 0 once every row is held.
     */
    fill: (source: RowSource, budget: number): number => {
      if (filled >= count) return 0
      const rows = statement(source.db, "SELECT id, data FROM ann_rows WHERE id >= ? AND id < ? ORDER BY id LIMIT ?")
      const found = rows.all(rowId(segment, filled), rowId(segment + 1, 0), budget) as Array<{
        id: number
        data: unknown
      }>
      // A row that does not read is left for the walk that reaches it to report (as `IndexCorrupt`).
      for (const { data, id } of found) {
        const row = id - rowId(segment, 0)
        if (row >= count || loaded[row] === 1 || !(data instanceof Uint8Array)) continue
        if (graphRowInto(data, paged, row, d, codes) === undefined) hold(row)
      }
      filled = found.length < budget ? count : found.at(-1)!.id - rowId(segment, 0) + 1
      return found.length
    },
    search: (
      graph: Graph,
      query: Float32Array,
      ef: number,
      keep: ((row: number) => boolean) | undefined,
      source: RowSource
    ) => {
      const damaged = (problem: string) => source.corrupt(`${named} is damaged: ${problem}`)
      const into = (row: number, data: unknown) => {
        const problem =
          data instanceof Uint8Array ? graphRowInto(data, paged, row, d, codes) : `row ${row} is not a blob`
        if (problem !== undefined) throw damaged(problem)
        hold(row)
      }
      const one = statement(source.db, "SELECT data FROM ann_rows WHERE id = ?")
      const some = statement(source.db, readSome)
      const coded = codeDistance(codes, query)
      const distance = (row: number) => {
        if (loaded[row] === 0) {
          const found = one.get(rowId(segment, row)) as { data: unknown } | undefined
          if (found === undefined) throw damaged(`row ${row} is missing`)
          into(row, found.data)
        }
        return coded(row)
      }
      // The rows a walk is about to reach, read together (a row missing is found missing when its distance is asked).
      const reach = (links: Int32Array, start: number, n: number) => {
        let k = 0
        for (let j = start; j < start + n; j++) {
          const row = links[j]!
          if (row < 0) break
          if (loaded[row] === 0) wanted[k++] = rowId(segment, row)
        }
        if (k < 2) return
        wanted.fill(-1, k)
        for (const found of some.all(...wanted) as Array<{ id: number; data: unknown }>)
          into(found.id - rowId(segment, 0), found.data)
      }
      return searchGraphBy(graph, distance, ef, keep, Number.POSITIVE_INFINITY, reach)
    }
  }
}
