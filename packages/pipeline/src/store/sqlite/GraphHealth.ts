/**
 * What `funcpipe check` asks of an index's graphs besides walking them: segments in no graph, and stored scan codes
 * that cannot be walked (checked whether or not the index walks over them now, so that turning codes on later does
 * not find them damaged).
 */

import type { DatabaseSync } from "node:sqlite"
import { statement } from "./Connection.ts"
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

/** Each graph whose stored scan codes cannot be walked, and why, at `dimensions` components a row. */
export const damagedCodes = (db: DatabaseSync, dimensions: number): Array<string> => {
  if (!hasTable(db) || !hasColumn(db, "codes")) return []
  const rows = statement(db, "SELECT id, count FROM segments").all() as Array<{ id: number; count: number }>
  const counts = new Map(rows.map((row) => [row.id, row.count]))
  const read = statement(db, "SELECT codes FROM ann WHERE segment = ?")
  const found: Array<string> = []
  for (const group of liveGroups(groupRows(db), new Set(counts.keys())).kept) {
    const codes = (read.get(group.segment) as { codes: unknown }).codes
    if (codes === null) continue
    const count = group.members.reduce((sum, id) => sum + counts.get(id)!, 0)
    const problem =
      codes instanceof Uint8Array ? codesProblem(codes, count, dimensions) : "its scan codes are not a blob"
    if (problem !== undefined)
      found.push(
        `the vector graph of segment${group.members.length === 1 ? "" : "s"} ${group.members.join(", ")}: ${problem}`
      )
  }
  return found
}
