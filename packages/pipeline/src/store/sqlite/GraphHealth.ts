/**
 * What `funcpipe check` asks of an index's graphs besides walking them: segments in no graph, stored scan codes that
 * cannot be walked (checked whether or not the index walks over them now, so that turning codes on later does not find
 * them damaged), and each paged graph's head and every row of it (a walk reads only the rows it reaches).
 */

import type { DatabaseSync } from "node:sqlite"
import { decodeGraphHead, graphHeadProblem } from "../../search/HnswBytes.ts"
import { statement } from "./Connection.ts"
import { readGraphRows } from "./GraphRows.ts"
import { groupRows, hasColumn, hasTable, liveGroups } from "./Graphs.ts"
import { codesProblem } from "./WalkRows.ts"

/** The segments in no graph (the index names an approximate index, so each should be in one), as `check` says it. */
export const missingGraphs = (db: DatabaseSync): string | undefined => {
  const ids = (statement(db, "SELECT id FROM segments").all() as Array<{ id: number }>).map((row) => row.id)
  const covered = hasTable(db)
    ? new Set(liveGroups(groupRows(db), new Set(ids)).kept.flatMap((group) => group.members))
    : new Set<number>()
  const missing = ids.filter((id) => !covered.has(id)).length
  if (missing === 0) return undefined
  return `${missing} segment${missing === 1 ? " has" : "s have"} no vector graph although the index names one`
}

/**
 * Each graph whose stored parts a walk may not read yet cannot be read, and why, at `dimensions` components a row: a
 * graph stored whole, its scan codes; a paged one, its head and every row.
 */
export const damagedGraphs = (db: DatabaseSync, dimensions: number): Array<string> => {
  if (!hasTable(db) || !hasColumn(db, "codes")) return []
  const rows = statement(db, "SELECT id, count FROM segments").all() as Array<{ id: number; count: number }>
  const counts = new Map(rows.map((row) => [row.id, row.count]))
  const read = statement(db, "SELECT data, codes FROM ann WHERE segment = ?")
  const found: Array<string> = []
  for (const group of liveGroups(groupRows(db), new Set(counts.keys())).kept) {
    const { codes, data } = read.get(group.segment) as { data: unknown; codes: unknown }
    const count = group.members.reduce((sum, id) => sum + counts.get(id)!, 0)
    const paged = () => {
      const head = data instanceof Uint8Array ? decodeGraphHead(data) : "the graph is not a blob"
      if (typeof head === "string") return head
      if (head.graph.count !== count) return "it has another row count"
      return graphHeadProblem(head) ?? readGraphRows(db, group.segment, head, dimensions, "check")
    }
    if (group.layout === undefined && codes === null) continue
    const problem =
      group.layout !== undefined
        ? paged()
        : codes instanceof Uint8Array
          ? codesProblem(codes, count, dimensions)
          : "its scan codes are not a blob"
    if (problem !== undefined)
      found.push(
        `the vector graph of segment${group.members.length === 1 ? "" : "s"} ${group.members.join(", ")}: ${problem}`
      )
  }
  return found
}
