/**
 * The approximate vector index of a SQLite index (`funcpipe index --ann hnsw`): one HNSW graph per segment, in the
 * `ann` table. Segments never change once written (deletions aside), so a graph is built once, when its segment is
 * new (written by a run, or made by a merge), in the run's own transaction, and dropped with its segment. A query
 * walks each segment's graph for candidates, then scores them exactly: the same float64 operations as the exact scan,
 * so a returned score is the exact score.
 */

import type { DatabaseSync } from "node:sqlite"
import { type AnnConfig, decodeManifestJson } from "@funcpipe/domain/Manifest"
import { Effect, Result } from "effect"
import { decodeRows as decodeBlock } from "../../index/VectorCodec.ts"
import { buildGraphBytes, type GraphJob } from "../../search/GraphBuild.ts"
import { holdRows } from "../../search/GraphKernel.ts"
import { type Graph, type GraphRows, isGraphNode, searchGraph } from "../../search/Hnsw.ts"
import { decodeGraph } from "../../search/HnswBytes.ts"
import type { AnnFound, PositionFilter } from "../../search/IndexView.ts"
import { clamp } from "../../search/VectorScan.ts"
import type { GraphBuilder } from "../IndexStore.ts"
import { IndexCorrupt, type StoreError } from "../StoreErrors.ts"
import type { Caches } from "./Caches.ts"
import { statement } from "./Connection.ts"
import { type Corrupt, columnsOf, decodeRows, keptBlocks, segmentRows, storedBlock } from "./Segments.ts"
import { readMetaIn, type SegmentColumns, type SegmentRow } from "./Tables.ts"

const ANN_TABLE =
  "CREATE TABLE IF NOT EXISTS ann (segment INTEGER PRIMARY KEY, config TEXT NOT NULL, data BLOB NOT NULL)"

/** What a graph was built with, as its row records it: a graph built otherwise is built again. */
const configOf = (ann: AnnConfig) => `hnsw m=${ann.m} efConstruction=${ann.efConstruction}`

const hasTable = (db: DatabaseSync) =>
  (
    statement(db, "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'ann'").get() as {
      n: number
    }
  ).n > 0

/**
 * A segment's rows as unit float32 vectors, from its stored blocks decoded as a scan decodes them, in `data` (room for
 * `count + 1` rows).
 */
const storedUnitRows = (corrupt: Corrupt, db: DatabaseSync, segment: SegmentRow, d: number, data: Float32Array) => {
  const vectors = new Float64Array(segment.blockRows * d)
  const magnitudes = new Float64Array(segment.blockRows)
  for (let b = 0; b * segment.blockRows < segment.count; b++) {
    const stored = storedBlock(corrupt, db, segment, d, b)
    decodeRows(corrupt, segment, stored, d, vectors.subarray(0, stored.rows * d), magnitudes.subarray(0, stored.rows))
    for (let r = 0; r < stored.rows; r++) {
      const magnitude = magnitudes[r]!
      if (magnitude === 0) continue
      const to = (b * segment.blockRows + r) * d
      for (let k = 0; k < d; k++) data[to + k] = vectors[r * d + k]! / magnitude
    }
  }
  return data
}

/** The graphs a write transaction must build before it commits: for which segments, and with what. */
export interface GraphPlan {
  readonly segments: ReadonlyArray<SegmentRow>
  readonly ann: AnnConfig
  readonly dimensions: number
}

/**
 * Brings the graphs in line with the manifest inside a write transaction, but for the building: none when it names no
 * approximate index; otherwise the graphs of segments that are gone, or built with other settings, are dropped, and
 * the plan names the segments still without one (to build each with `buildSegmentGraph`). `undefined`: nothing to
 * build.
 */
export const planGraphs = (db: DatabaseSync, corrupt: Corrupt): GraphPlan | IndexCorrupt | undefined => {
  const json = readMetaIn(db, "manifest")
  if (json === undefined) return undefined
  const manifest = decodeManifestJson(json)
  // A manifest that does not decode is reported by whatever reads it; its graphs are left as they are.
  if (Result.isFailure(manifest)) return undefined
  const { ann, dimensions } = manifest.success
  if (ann === undefined) {
    if (hasTable(db)) db.exec("DROP TABLE ann")
    return undefined
  }
  db.exec(ANN_TABLE)
  db.prepare("DELETE FROM ann WHERE config <> ? OR segment NOT IN (SELECT id FROM segments)").run(configOf(ann))
  const built = new Set(
    (db.prepare("SELECT segment FROM ann").all() as Array<{ segment: number }>).map((row) => row.segment)
  )
  try {
    const segments = segmentRows(corrupt, db).filter((segment) => !built.has(segment.id))
    return segments.length === 0 ? undefined : { segments, ann, dimensions }
  } catch (error) {
    if (error instanceof IndexCorrupt) return error
    throw error
  }
}

/** The build of one segment's graph as a job, its rows read into `data`; `IndexCorrupt` for a block it cannot read. */
const jobIn = (
  db: DatabaseSync,
  corrupt: Corrupt,
  plan: GraphPlan,
  segment: SegmentRow,
  data: Float32Array
): GraphJob | IndexCorrupt => {
  try {
    const rows = storedUnitRows(corrupt, db, segment, plan.dimensions, data)
    const { efConstruction, m } = plan.ann
    return { rows, count: segment.count, dimensions: plan.dimensions, m, efConstruction }
  } catch (error) {
    if (error instanceof IndexCorrupt) return error
    throw error
  }
}

/** The build of one segment's graph as a job for another thread: its rows in an array of their own. */
export const segmentGraphJob = (db: DatabaseSync, corrupt: Corrupt, plan: GraphPlan, segment: SegmentRow) =>
  jobIn(db, corrupt, plan, segment, new Float32Array((segment.count + 1) * plan.dimensions))

/** Stores a segment's built graph (its bytes, as `buildGraphBytes` gives them). */
export const storeSegmentGraph = (db: DatabaseSync, plan: GraphPlan, segment: SegmentRow, bytes: Uint8Array): void =>
  void db.prepare("INSERT INTO ann (segment, config, data) VALUES (?, ?, ?)").run(segment.id, configOf(plan.ann), bytes)

/**
 * Builds and stores the graph of one segment of a plan on this thread (its rows read straight into a kernel's
 * memory); a stored vector block it cannot read is `IndexCorrupt`.
 */
export const buildSegmentGraph = (
  db: DatabaseSync,
  corrupt: Corrupt,
  plan: GraphPlan,
  segment: SegmentRow
): IndexCorrupt | undefined => {
  const job = jobIn(db, corrupt, plan, segment, holdRows((segment.count + 1) * plan.dimensions, plan.dimensions))
  if (job instanceof IndexCorrupt) return job
  storeSegmentGraph(db, plan, segment, buildGraphBytes(job))
  return undefined
}

/**
 * Builds and stores the graphs a plan names: on this thread and, where there are others (`builder`), on them at the
 * same time, each taking the next segment when it is free (a graph is the same whichever thread builds it). Each is
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
  const tell = Effect.suspend(() => Effect.ignoreCause(progress(done, plan.segments.length)))
  const queue = [...plan.segments]
  const here = Effect.gen(function* () {
    // The other threads are sent their first graphs before this one starts on its own.
    yield* Effect.yieldNow
    for (let segment = queue.shift(); segment !== undefined; segment = queue.shift()) {
      const taken = segment
      const damaged = yield* run("building a vector graph", () => buildSegmentGraph(db, corrupt, plan, taken))
      if (damaged !== undefined) return yield* damaged
      done++
      yield* tell
      // Lets the other threads' finished graphs in before the next build holds this thread.
      yield* Effect.yieldNow
    }
  })
  const elsewhere = (threads: GraphBuilder) =>
    Effect.gen(function* () {
      for (let segment = queue.shift(); segment !== undefined; segment = queue.shift()) {
        const taken = segment
        const job = yield* run("reading a segment's vectors for its graph", () =>
          segmentGraphJob(db, corrupt, plan, taken)
        )
        if (job instanceof IndexCorrupt) return yield* job
        const bytes = yield* threads.build(job)
        // A thread that failed leaves its graph, and the rest, to this one.
        const damaged = yield* run("building a vector graph", () =>
          bytes === undefined ? buildSegmentGraph(db, corrupt, plan, taken) : storeSegmentGraph(db, plan, taken, bytes)
        )
        if (damaged !== undefined) return yield* damaged
        done++
        yield* tell
        if (bytes === undefined) return
      }
    })
  // Never more threads than segments past the one this thread takes: a run that adds one segment builds its graph
  // here, without copying its rows to another thread (or starting one).
  const others = Math.min(builder?.threads ?? 0, plan.segments.length - 1)
  return Effect.andThen(
    tell,
    Effect.all([...Array.from({ length: others }, () => elsewhere(builder!)), here], {
      concurrency: "unbounded",
      discard: true
    })
  )
}

/** How many segments have no graph (the index names an approximate index, so each should have one). */
export const missingGraphs = (db: DatabaseSync): number =>
  (
    statement(
      db,
      hasTable(db)
        ? "SELECT count(*) AS n FROM segments WHERE id NOT IN (SELECT segment FROM ann)"
        : "SELECT count(*) AS n FROM segments"
    ).get() as { n: number }
  ).n

/** A segment's graph with the rows it walks, kept with the segment's decoded columns. */
interface SegmentGraph {
  readonly graph: Graph
  readonly rows: GraphRows
}

const graphs = new WeakMap<SegmentColumns, SegmentGraph | null>()

/** What the graph reader needs of a snapshot's reading. */
export interface GraphReading {
  readonly corrupt: Corrupt
  readonly db: DatabaseSync
  readonly caches: Caches
  readonly dimensions: number
  readonly segments: ReadonlyArray<SegmentRow>
  readonly offsets: ReadonlyArray<number>
  readonly deleted: Uint8Array | undefined
}

/**
 * A snapshot's approximate search over the segments' graphs, or `undefined` when the index has none: the `ef` rows
 * each segment's graph finds nearest the query among live rows the filter allows, scored exactly. A segment without
 * a graph (one written by an older FuncPipe) has every live row scored.
 */
export const graphSearch = (r: GraphReading) => {
  if (!hasTable(r.db)) return undefined
  const { caches, corrupt, db, deleted, dimensions: d, offsets, segments } = r
  const stateOf = (segment: SegmentRow, columns: SegmentColumns): SegmentGraph | null => {
    const known = graphs.get(columns)
    if (known !== undefined) return known
    const row = statement(db, "SELECT data FROM ann WHERE segment = ?").get(segment.id) as { data: unknown } | undefined
    let state: SegmentGraph | null = null
    if (row !== undefined) {
      const graph = row.data instanceof Uint8Array ? decodeGraph(row.data) : "the graph is not a blob"
      if (typeof graph === "string") throw corrupt(`segment ${segment.id}'s vector graph is damaged: ${graph}`)
      if (graph.count !== segment.count) throw corrupt(`segment ${segment.id}'s vector graph has another row count`)
      state = { graph, rows: keptUnitRows(corrupt, db, segment, d, columns) }
    }
    graphs.set(columns, state)
    return state
  }
  return (query: ArrayLike<number>, ef: number, filter?: PositionFilter): AnnFound => {
    const q = Float64Array.from(query)
    let qLength = 0
    for (let j = 0; j < d; j++) qLength += q[j]! * q[j]!
    qLength = Math.sqrt(qLength)
    // A query whose length is not a normal number cannot be made a unit vector for the walk (its scores are those of
    // the exact scan's arithmetic, which copes): the caller scans, as told by a cut at +Infinity.
    if (!(qLength >= 2 ** -511 && qLength < Number.POSITIVE_INFINITY))
      return { positions: new Int32Array(0), scores: new Float64Array(0), cutAt: Number.POSITIVE_INFINITY }
    const unit = Float32Array.from(q, (x) => x / qLength)
    const positions: Array<number> = []
    const scores: Array<number> = []
    let cutAt = Number.NEGATIVE_INFINITY
    const row64 = new Float64Array(d)
    const magnitude = new Float64Array(1)
    for (let s = 0; s < segments.length; s++) {
      const segment = segments[s]!
      const offset = offsets[s]!
      const columns = columnsOf(caches, segment)
      const state = stateOf(segment, columns)
      const allowed = (row: number) =>
        deleted?.[offset + row] !== 1 && (filter === undefined || filter.allowed[offset + row] === 1)
      // Each segment's graph is walked on its own: a walk told to stop where it cannot beat the segments before
      // stops before it has left its entry's region, and finds half as much (bench:ann --segments).
      const rows: Iterable<number> =
        state === null
          ? Array.from({ length: segment.count }, (_, row) => row).filter(allowed)
          : searchGraph(state.graph, state.rows, unit, ef, allowed)
      let nodes = 0
      if (state !== null) for (const row of rows) if (isGraphNode(state.graph, row)) nodes++
      const blocks = keptBlocks(corrupt, db, segment, d, columns)
      // Full: the walk kept as many nodes as asked for (copies found with them not counted).
      const full = state !== null && nodes >= ef
      let lowest = Number.POSITIVE_INFINITY
      for (const row of rows) {
        const block = blocks[Math.floor(row / segment.blockRows)]!
        const at = row % segment.blockRows
        // The row in float64 with its magnitude, by the very operations the exact scan uses.
        let vector: Float64Array
        if (block.floats !== undefined) {
          const bytes = new Uint8Array(block.floats.buffer, block.floats.byteOffset + at * d * 4, d * 4)
          if (decodeBlock(bytes, "f32", 1, d, row64, magnitude) !== "ok")
            throw corrupt(`segment ${segment.id} has a vector that is not finite`)
          vector = row64
        } else {
          vector = block.vectors.subarray(at * d, (at + 1) * d)
          magnitude[0] = block.magnitudes[at]!
        }
        let dot = 0
        for (let j = 0; j < d; j++) dot += q[j]! * vector[j]!
        const score = magnitude[0] === 0 ? Number.NaN : clamp(dot / (qLength * magnitude[0]!))
        positions.push(offset + row)
        scores.push(score)
        if (score < lowest) lowest = score
      }
      if (full && lowest > cutAt) cutAt = lowest
    }
    return { positions: Int32Array.from(positions), scores: Float64Array.from(scores), cutAt }
  }
}

/** A segment's rows as unit float32 vectors, from its kept blocks. */
const keptUnitRows = (
  corrupt: Corrupt,
  db: DatabaseSync,
  segment: SegmentRow,
  d: number,
  columns: SegmentColumns
): GraphRows => {
  const data = holdRows((segment.count + 1) * d, d)
  keptBlocks(corrupt, db, segment, d, columns).forEach((block, b) => {
    const from = b * segment.blockRows
    const rows = Math.min(segment.blockRows, segment.count - from)
    for (let r = 0; r < rows; r++) {
      let norm = 0
      if (block.floats !== undefined) {
        // The magnitude as a decoded block has it (the sum of squares left to right), and each component divided by
        // it, as the graph was built from.
        for (let k = 0; k < d; k++) norm += block.floats[r * d + k]! * block.floats[r * d + k]!
        const magnitude = Math.sqrt(norm)
        if (magnitude === 0) continue
        for (let k = 0; k < d; k++) data[(from + r) * d + k] = block.floats[r * d + k]! / magnitude
      } else {
        const magnitude = block.magnitudes[r]!
        if (magnitude === 0) continue
        for (let k = 0; k < d; k++) data[(from + r) * d + k] = block.vectors[r * d + k]! / magnitude
      }
    }
  })
  return { count: segment.count, dimensions: d, data }
}
