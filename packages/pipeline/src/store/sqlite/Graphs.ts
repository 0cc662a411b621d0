/**
 * The approximate vector index of a SQLite index (`funcpipe index --ann hnsw`): HNSW graphs in the `ann` table, each
 * over a group of segments (their rows one after another, in position order). Segments never change once written
 * (deletions aside), so a group's graph is built once, in the run's own transaction, and dropped when one of its
 * segments goes (merged away). A query walks each group's graph for candidates, then scores them exactly: the same
 * float64 operations as the exact scan, so a returned score is the exact score.
 *
 * Groups are as large as `GROUP_BYTES` allows: a query walks every graph, so the fewer graphs, the less it costs
 * (decision 0088). A small segment (under an eighth of a full one, which a later run may merge away) gets a graph of
 * its own, so that merging it never rebuilds a large graph; the other new segments join the groups still under half
 * full when there are more than `MAX_OPEN_GROUPS` of those, and otherwise form groups of their own.
 */

import type { DatabaseSync } from "node:sqlite"
import { type AnnConfig, decodeManifestJson } from "@funcpipe/domain/Manifest"
import { Effect, Result } from "effect"
import type { CodedRows } from "../../search/CodeKernel.ts"
import { buildGraphBytes, type GraphJob, unitRowInto } from "../../search/GraphBuild.ts"
import { holdRows } from "../../search/GraphKernel.ts"
import type { Graph } from "../../search/Hnsw.ts"
import { decodeGraph, encodeGraphHead } from "../../search/HnswBytes.ts"
import type { GraphBuilder } from "../IndexStore.ts"
import { IndexCorrupt, type StoreError } from "../StoreErrors.ts"
import { BASE_LAYOUT, LAYOUT, statement } from "./Connection.ts"
import { dropGraphRows, ROWS_TABLE, storeGraphRows } from "./GraphRows.ts"
import { type Corrupt, decodeRows, segmentRows, storedBlock } from "./Segments.ts"
import { isSmallSegment, maxChunksOf, readMetaIn, type SegmentRow } from "./Tables.ts"
import { codeRowsOf, decodeCodes } from "./WalkRows.ts"

// `segment`: the group's first segment; `segments`: its segments' ids in position order (NULL in a graph stored before
// groups, which covers its one segment); `layout`: "rows" or "rows+i8" for a graph paged (`data` its head, its rows in
// `ann_rows`, GraphRows.ts, with their i8 scan codes in "rows+i8"), NULL for one stored whole (`data` the graph,
// `codes` its rows' i8 scan codes or NULL), as FuncPipe stored them before, and a run pages.
const ANN_TABLE =
  "CREATE TABLE IF NOT EXISTS ann (segment INTEGER PRIMARY KEY, config TEXT NOT NULL, data BLOB NOT NULL, segments TEXT, codes BLOB, layout TEXT)"

/** A graph's rows, as float32 unit vectors, are at most this many bytes: 174k rows at 384 dimensions, 671k at 100. */
export const GROUP_BYTES = 256 * 1024 * 1024

/** The most rows a group's graph holds at `dimensions` components (never fewer than one full segment's). */
export const groupRowsOf = (dimensions: number): number =>
  Math.max(maxChunksOf(dimensions), Math.floor(GROUP_BYTES / (4 * dimensions)))

/** More groups under half full than this, and the new segments are grouped with them, their graphs built again. */
export const MAX_OPEN_GROUPS = 2

/**
 * A stored graph's row (without its bytes): its first segment, its segments' ids in position order, its settings, and
 * whether it is a graph of one segment stored before groups (no `segments`).
 */
export interface GroupRow {
  readonly segment: number
  readonly members: ReadonlyArray<number>
  readonly config: string
  readonly legacy?: boolean
  /** Whether the graph is paged ("rows", or "rows+i8" with its rows' codes), or stored whole (`undefined`). */
  readonly layout?: "rows" | "rows+i8"
}

export const hasColumn = (db: DatabaseSync, name: "segments" | "codes" | "layout") =>
  (statement(db, "PRAGMA table_info(ann)").all() as Array<{ name: string }>).some((c) => c.name === name)
const hasGroups = (db: DatabaseSync) => hasColumn(db, "segments")

export const groupRows = (db: DatabaseSync): Array<GroupRow> =>
  (
    statement(
      db,
      `SELECT segment, config, ${hasGroups(db) ? "segments" : "NULL AS segments"}, ${
        hasColumn(db, "layout") ? "layout" : "NULL AS layout"
      } FROM ann ORDER BY segment`
    ).all() as Array<{ segment: number; config: string; segments: unknown; layout: unknown }>
  ).map((row) => {
    const layout: { layout?: "rows" | "rows+i8" } =
      row.layout === "rows" || row.layout === "rows+i8" ? { layout: row.layout } : {}
    return typeof row.segments === "string"
      ? { segment: row.segment, config: row.config, members: row.segments.split(" ").map(Number), ...layout }
      : { segment: row.segment, config: row.config, members: [row.segment], legacy: true, ...layout }
  })

/** Removes the graph whose first segment is `segment`, with its rows. */
const dropGroup = (db: DatabaseSync, segment: number) => {
  statement(db, "DELETE FROM ann WHERE segment = ?").run(segment)
  dropGraphRows(db, segment)
}

/**
 * Stores `graph` for the group of first segment `segment` in the paged layout: its head in `ann`, its rows in
 * `ann_rows`, coded from `codes` when given.
 */
const storePaged = (db: DatabaseSync, segment: number, graph: Graph, codes: CodedRows | undefined) => {
  statement(db, "UPDATE ann SET data = ?, codes = NULL, layout = ? WHERE segment = ?").run(
    encodeGraphHead(graph, codes !== undefined),
    codes === undefined ? "rows" : "rows+i8",
    segment
  )
  storeGraphRows(db, segment, graph, codes)
}

/**
 * A graph stored whole (by an older FuncPipe) stored again paged, as it is: `false` when it cannot be read, for the
 * caller to drop and build again. `count` is how many rows its segments hold.
 */
const pageGroup = (db: DatabaseSync, group: GroupRow, count: number, dimensions: number): boolean => {
  const row = statement(db, "SELECT data, codes FROM ann WHERE segment = ?").get(group.segment) as {
    data: unknown
    codes: unknown
  }
  const graph = row.data instanceof Uint8Array ? decodeGraph(row.data) : "not a blob"
  if (typeof graph === "string" || graph.count !== count) return false
  const codes = row.codes instanceof Uint8Array ? decodeCodes(row.codes, count, dimensions) : undefined
  if (typeof codes === "string") return false
  storePaged(db, group.segment, graph, codes)
  return true
}

/**
 * The stored graphs that stand for segments of `present`: each listing only segments there, none of them in a graph
 * before it (graphs in first-segment order). Those that do not (a segment merged away, a list that does not read, or a
 * graph an older FuncPipe wrote over segments a group holds) are `dropped`, their segments left to the groups kept or
 * to none.
 */
export const liveGroups = (
  rows: ReadonlyArray<GroupRow>,
  present: ReadonlySet<number>
): { readonly kept: Array<GroupRow>; readonly dropped: Array<GroupRow> } => {
  const kept: Array<GroupRow> = []
  const dropped: Array<GroupRow> = []
  const covered = new Set<number>()
  for (const group of rows) {
    const sound =
      group.members.length > 0 &&
      group.members[0] === group.segment &&
      group.members.every((id) => present.has(id) && !covered.has(id)) &&
      new Set(group.members).size === group.members.length
    if (!sound) dropped.push(group)
    else {
      kept.push(group)
      for (const id of group.members) covered.add(id)
    }
  }
  return { kept, dropped }
}

/** What a graph was built with, as its row records it: a graph built otherwise is built again. */
export const configOf = (ann: AnnConfig) => `hnsw m=${ann.m} efConstruction=${ann.efConstruction}`

export const hasTable = (db: DatabaseSync) =>
  (
    statement(db, "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'ann'").get() as {
      n: number
    }
  ).n > 0

/**
 * A segment's rows as unit float32 vectors, from its stored blocks decoded as a scan decodes them, into `data` from
 * row `at` on.
 */
const storedUnitRows = (
  corrupt: Corrupt,
  db: DatabaseSync,
  segment: SegmentRow,
  d: number,
  data: Float32Array,
  at: number
) => {
  const vectors = new Float64Array(segment.blockRows * d)
  const magnitudes = new Float64Array(segment.blockRows)
  for (let b = 0; b * segment.blockRows < segment.count; b++) {
    const stored = storedBlock(corrupt, db, segment, d, b)
    decodeRows(corrupt, segment, stored, d, vectors.subarray(0, stored.rows * d), magnitudes.subarray(0, stored.rows))
    for (let r = 0; r < stored.rows; r++)
      unitRowInto(vectors, r * d, d, data, (at + b * segment.blockRows + r) * d, magnitudes[r]!)
  }
}

/** The graphs a write transaction must build before it commits: for which groups of segments, and with what. */
export interface GraphPlan {
  /** Each graph's segments, in position order. */
  readonly groups: ReadonlyArray<ReadonlyArray<SegmentRow>>
  readonly ann: AnnConfig
  readonly dimensions: number
}

const rowsIn = (group: ReadonlyArray<SegmentRow>) => group.reduce((sum, segment) => sum + segment.count, 0)

/**
 * Segments in groups of at most `limit` rows, in order, each group as full as the next segment allows (a segment
 * larger than `limit` alone).
 */
export const packGroups = (segments: ReadonlyArray<SegmentRow>, limit: number): Array<Array<SegmentRow>> => {
  const groups: Array<Array<SegmentRow>> = []
  let rows = 0
  for (const segment of segments) {
    const last = groups.at(-1)
    if (last === undefined || rows + segment.count > limit) {
      groups.push([segment])
      rows = segment.count
    } else {
      last.push(segment)
      rows += segment.count
    }
  }
  return groups
}

/**
 * Which graphs to build, given the segments (in position order), those already in a group's graph (`grouped`, each
 * group's segments by id) and the dimensions: a small segment alone; the other new segments packed together, with the
 * segments of the groups under half full when, counting the new groups, there would be more than `MAX_OPEN_GROUPS` of
 * those. `regrouped`: the groups (by first segment) whose graphs the new ones replace.
 */
export const groupsToBuild = (
  segments: ReadonlyArray<SegmentRow>,
  grouped: ReadonlyArray<GroupRow>,
  dimensions: number
): { readonly groups: Array<Array<SegmentRow>>; readonly regrouped: Array<number> } => {
  const limit = groupRowsOf(dimensions)
  const byId = new Map(segments.map((segment) => [segment.id, segment]))
  const covered = new Set(grouped.flatMap((group) => group.members))
  const fresh = segments.filter((segment) => !covered.has(segment.id))
  const small = (segment: SegmentRow) => isSmallSegment(segment.count, dimensions)
  const groups: Array<Array<SegmentRow>> = fresh.filter(small).map((segment) => [segment])
  const rest = fresh.filter((segment) => !small(segment))
  if (rest.length === 0) return { groups, regrouped: [] }
  // A graph stored before groups is not gathered: an index that had one graph per segment would otherwise have them
  // all built again by its next run that writes a segment of any size.
  const open = grouped.filter((group) => {
    const members = group.members.map((id) => byId.get(id)!)
    return group.legacy !== true && !(members.length === 1 && small(members[0]!)) && rowsIn(members) * 2 < limit
  })
  const packed = packGroups(rest, limit)
  const opened = packed.filter((group) => rowsIn(group) * 2 < limit).length
  if (open.length + opened <= MAX_OPEN_GROUPS) return { groups: [...groups, ...packed], regrouped: [] }
  const pooled = new Set([...rest.map((segment) => segment.id), ...open.flatMap((group) => group.members)])
  const pool = segments.filter((segment) => pooled.has(segment.id))
  return { groups: [...groups, ...packGroups(pool, limit)], regrouped: open.map((group) => group.segment) }
}

/**
 * Brings the graphs in line with the manifest inside a write transaction, but for the building: none when it names no
 * approximate index; otherwise the graphs of groups with a segment that is gone, or built with other settings, are
 * dropped, and the plan names the groups to build (`groupsToBuild`; the graphs they replace are dropped too), each to
 * be built with `buildGroupGraph`. `undefined`: nothing to build.
 */
export const planGraphs = (db: DatabaseSync, corrupt: Corrupt): GraphPlan | IndexCorrupt | undefined => {
  const json = readMetaIn(db, "manifest")
  if (json === undefined) return undefined
  const manifest = decodeManifestJson(json)
  // A manifest that does not decode is reported by whatever reads it; its graphs are left as they are.
  if (Result.isFailure(manifest)) return undefined
  const { ann, dimensions } = manifest.success
  if (ann === undefined) {
    // Without paged graphs, the file is one an older FuncPipe reads (Connection.ts, LAYOUT).
    if (hasTable(db)) db.exec(`DROP TABLE ann; DROP TABLE IF EXISTS ann_rows; PRAGMA user_version = ${BASE_LAYOUT}`)
    return undefined
  }
  db.exec(ANN_TABLE)
  db.exec(ROWS_TABLE)
  db.exec(`PRAGMA user_version = ${LAYOUT}`)
  // A table from before groups gains their column; its graphs are groups of one segment.
  if (!hasGroups(db)) db.exec("ALTER TABLE ann ADD COLUMN segments TEXT")
  if (!hasColumn(db, "codes")) db.exec("ALTER TABLE ann ADD COLUMN codes BLOB")
  if (!hasColumn(db, "layout")) db.exec("ALTER TABLE ann ADD COLUMN layout TEXT")
  const config = configOf(ann)
  for (const group of groupRows(db)) if (group.config !== config) dropGroup(db, group.segment)
  try {
    const segments = segmentRows(corrupt, db)
    const counts = new Map(segments.map((segment) => [segment.id, segment.count]))
    const live = liveGroups(groupRows(db), new Set(counts.keys()))
    for (const group of live.dropped) dropGroup(db, group.segment)
    const rowsOf = (group: GroupRow) => group.members.reduce((sum, id) => sum + counts.get(id)!, 0)
    let plan = groupsToBuild(segments, live.kept, dimensions)
    // Graphs stored whole that stay are paged as they are; one that does not read is dropped, and built again.
    const unread = live.kept.filter(
      (group) =>
        group.layout === undefined &&
        !plan.regrouped.includes(group.segment) &&
        !pageGroup(db, group, rowsOf(group), dimensions)
    )
    if (unread.length > 0) {
      for (const group of unread) dropGroup(db, group.segment)
      plan = groupsToBuild(
        segments,
        live.kept.filter((group) => !unread.includes(group)),
        dimensions
      )
    }
    const { groups, regrouped } = plan
    for (const first of regrouped) dropGroup(db, first)
    return groups.length === 0 ? undefined : { groups, ann, dimensions }
  } catch (error) {
    if (error instanceof IndexCorrupt) return error
    throw error
  }
}

/** The build of one group's graph as a job, its rows read into `data`; `IndexCorrupt` for a block it cannot read. */
const jobIn = (
  db: DatabaseSync,
  corrupt: Corrupt,
  plan: GraphPlan,
  group: ReadonlyArray<SegmentRow>,
  data: Float32Array
): GraphJob | IndexCorrupt => {
  try {
    let at = 0
    for (const segment of group) {
      storedUnitRows(corrupt, db, segment, plan.dimensions, data, at)
      at += segment.count
    }
    const { efConstruction, m } = plan.ann
    return { rows: data, count: at, dimensions: plan.dimensions, m, efConstruction }
  } catch (error) {
    if (error instanceof IndexCorrupt) return error
    throw error
  }
}

/** The build of one group's graph as a job for another thread: its rows in an array of their own. */
export const groupGraphJob = (db: DatabaseSync, corrupt: Corrupt, plan: GraphPlan, group: ReadonlyArray<SegmentRow>) =>
  jobIn(db, corrupt, plan, group, new Float32Array((rowsIn(group) + 1) * plan.dimensions))

/**
 * Stores a group's built graph (its bytes, as `buildGraphBytes` gives them) in the paged layout, with its rows' scan
 * codes when the index walks over them (from `rows`, the unit rows it was built from, or else the stored vectors a segment at a time);
 * `IndexCorrupt` for a block it cannot read.
 */
export const storeGroupGraph = (
  db: DatabaseSync,
  corrupt: Corrupt,
  plan: GraphPlan,
  group: ReadonlyArray<SegmentRow>,
  bytes: Uint8Array,
  rows?: Float32Array
): IndexCorrupt | undefined => {
  const d = plan.dimensions
  // The unit rows the graph was built from, when this thread still has them; else read again a segment at a time.
  function* units(): Generator<Float32Array> {
    if (rows !== undefined) {
      yield rows.subarray(0, rowsIn(group) * d)
      return
    }
    for (const segment of group) {
      const unit = new Float32Array(segment.count * d)
      storedUnitRows(corrupt, db, segment, d, unit, 0)
      yield unit
    }
  }
  // The builder's bytes are the graph stored whole: read back (and so checked), then stored paged.
  const graph = decodeGraph(bytes)
  if (typeof graph === "string") throw new Error(`a vector graph just built does not read back: ${graph}`)
  try {
    const codes = plan.ann.codes === "i8" ? codeRowsOf(rowsIn(group), d, units()) : undefined
    statement(db, "INSERT INTO ann (segment, config, data, segments) VALUES (?, ?, X'', ?)").run(
      group[0]!.id,
      configOf(plan.ann),
      group.map((g) => g.id).join(" ")
    )
    storePaged(db, group[0]!.id, graph, codes)
    return undefined
  } catch (error) {
    if (error instanceof IndexCorrupt) return error
    throw error
  }
}

/**
 * Builds and stores the graph of one group of a plan on this thread (its rows read straight into a kernel's memory);
 * a stored vector block it cannot read is `IndexCorrupt`.
 */
export const buildGroupGraph = (
  db: DatabaseSync,
  corrupt: Corrupt,
  plan: GraphPlan,
  group: ReadonlyArray<SegmentRow>
): IndexCorrupt | undefined => {
  const job = jobIn(db, corrupt, plan, group, holdRows((rowsIn(group) + 1) * plan.dimensions, plan.dimensions))
  if (job instanceof IndexCorrupt) return job
  return storeGroupGraph(db, corrupt, plan, group, buildGraphBytes(job), job.rows)
}

/**
 * Builds and stores the graphs a plan names: on this thread and, where there are others (`builder`), on them at the
 * same time, each taking the next group when it is free (a graph is the same whichever thread builds it). Each is
 * stored as it comes, in the order they are finished: what a graph says does not depend on it. `run` runs a step
 * against the file (turning its failures into the store's errors); `progress` is told how many are built, before the
 * first and after each, and never fails the build (it is only a line on a terminal).
 */
export const buildPlannedGraphs = (
  db: DatabaseSync,
  corrupt: Corrupt,
  plan: GraphPlan,
  run: <A>(what: string, f: () => A) => Effect.Effect<A, StoreError>,
  progress: (done: number, total: number) => Effect.Effect<void>,
  builder: GraphBuilder | undefined
): Effect.Effect<void, StoreError> => {
  let done = 0
  const tell = Effect.suspend(() => Effect.ignoreCause(progress(done, plan.groups.length)))
  // The largest first, so that the last to finish is a small one.
  const queue = [...plan.groups].sort((a, b) => rowsIn(b) - rowsIn(a))
  const here = Effect.gen(function* () {
    // The other threads are sent their first graphs before this one starts on its own.
    yield* Effect.yieldNow
    for (let group = queue.shift(); group !== undefined; group = queue.shift()) {
      const taken = group
      const damaged = yield* run("building a vector graph", () => buildGroupGraph(db, corrupt, plan, taken))
      if (damaged !== undefined) return yield* damaged
      done++
      yield* tell
      // Lets the other threads' finished graphs in before the next build holds this thread.
      yield* Effect.yieldNow
    }
  })
  const elsewhere = (threads: GraphBuilder) =>
    Effect.gen(function* () {
      for (let group = queue.shift(); group !== undefined; group = queue.shift()) {
        const taken = group
        const job = yield* run("reading the vectors of a graph's segments", () =>
          groupGraphJob(db, corrupt, plan, taken)
        )
        if (job instanceof IndexCorrupt) return yield* job
        const bytes = yield* threads.build(job)
        // A thread that failed leaves its graph, and the rest, to this one.
        const damaged = yield* run("building a vector graph", () =>
          bytes === undefined
            ? buildGroupGraph(db, corrupt, plan, taken)
            : storeGroupGraph(db, corrupt, plan, taken, bytes)
        )
        if (damaged !== undefined) return yield* damaged
        done++
        yield* tell
        if (bytes === undefined) return
      }
    })
  // Never more threads than groups past the one this thread takes: a run that builds one graph builds it
  // here, without copying its rows to another thread (or starting one).
  const others = Math.min(builder?.threads ?? 0, plan.groups.length - 1)
  return Effect.andThen(
    tell,
    Effect.all([...Array.from({ length: others }, () => elsewhere(builder!)), here], {
      concurrency: "unbounded",
      discard: true
    })
  )
}
