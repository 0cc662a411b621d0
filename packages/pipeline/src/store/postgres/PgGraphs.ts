/**
 * The approximate vector index of an index in PostgreSQL (`funcpipe index --ann hnsw`): HNSW graphs in the schema's
 * `ann` table, each over a group of document rows, written in the run's own transaction.
 *
 * A graph's rows are its documents' chunks, the documents in row-id order. A document written again gets a new row
 * (the writer deletes and inserts), so the rows a graph names never change under it: a document deleted or changed
 * since leaves its rows in the graph, walked through and never returned, like a deleted chunk in a SQLite segment.
 * That is why a graph is stored with its rows' i8 scan codes and always walked over them: the rows it walks need not
 * be in the table any more, nor in the shard that walks it.
 *
 * A run that adds documents builds a graph over them (as many as `groupRowsOf` allows each); a graph that has lost
 * more than half its rows is built again from the rows still there, and when more than `MAX_OPEN_GROUPS` graphs are
 * under half full they are built again as one, so that many small runs do not leave many graphs to walk.
 */

import type { AnnConfig, IndexManifest } from "@funcpipe/domain/Manifest"
import { Effect, Semaphore } from "effect"
import type { SqlClient, SqlError, Statement } from "effect/sql"
import type { CodeRows } from "../../search/CodeKernel.ts"
import { buildGraphBytes, type GraphJob, unitRowInto } from "../../search/GraphBuild.ts"
import { holdRows } from "../../search/GraphKernel.ts"
import type { Graph } from "../../search/Hnsw.ts"
import { decodeGraph } from "../../search/HnswBytes.ts"
import { type TransactionOptions, typed } from "../IndexStore.ts"
import type { LoadedGraph } from "../LoadedGraphs.ts"
import { IndexCorrupt } from "../StoreErrors.ts"
import { configOf, groupRowsOf, MAX_OPEN_GROUPS } from "../sqlite/Graphs.ts"
import { codeRowsOf, decodeCodes, encodeCodes } from "../sqlite/WalkRows.ts"

/** The tables the graphs are read and written with. */
export interface GraphTables {
  readonly documents: Statement.Identifier
  readonly ann: Statement.Identifier
  /** The schema's `ann` table by name, for `to_regclass`. */
  readonly annName: string
}

/** The graph tables of the index in `schema`. */
export const graphTablesOf = (sql: SqlClient.SqlClient, schema: string): GraphTables => ({
  documents: sql(`${schema}.documents`),
  ann: sql(`${schema}.ann`),
  annName: `${quoteIdent(schema)}.ann`
})

/** A name quoted for SQL text (`to_regclass` reads one), its quotes doubled. */
const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

/** Creates the `ann` table where it is not there yet (a schema made before graphs had none). */
export const createAnnTable = (sql: SqlClient.SqlClient, t: GraphTables) =>
  sql`CREATE TABLE IF NOT EXISTS ${t.ann} (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    first_doc bigint NOT NULL,
    config text NOT NULL,
    docs bytea NOT NULL,
    counts bytea NOT NULL,
    graph bytea NOT NULL,
    codes bytea NOT NULL
  )`.pipe(Effect.asVoid)

/** Whether the schema has an `ann` table. */
const hasAnnTable = (sql: SqlClient.SqlClient, t: GraphTables) =>
  Effect.map(
    sql<{ readonly found: boolean }>`SELECT to_regclass(${t.annName}) IS NOT NULL AS found`,
    (rows) => rows[0]?.found === true
  )

/** Removes every graph (the table stays, for readers that saw it). */
export const dropGraphs = (sql: SqlClient.SqlClient, t: GraphTables) =>
  Effect.flatMap(hasAnnTable(sql, t), (found) => (found ? Effect.asVoid(sql`DELETE FROM ${t.ann}`) : Effect.void))

/** A document row with chunks: its row id and chunk count. */
export interface DocRows {
  readonly id: number
  readonly chunks: number
}

/** A stored graph as the planner sees it: its id, settings, and its documents' rows, in row-id order. */
export interface StoredGraph {
  readonly id: number
  readonly config: string
  readonly docs: ReadonlyArray<DocRows>
}

/** The graphs a run drops and the groups of document rows it builds graphs over, each in row-id order. */
export interface GraphUpdate {
  readonly drop: ReadonlyArray<number>
  readonly groups: ReadonlyArray<ReadonlyArray<DocRows>>
}

const chunksIn = (docs: ReadonlyArray<DocRows>) => docs.reduce((sum, doc) => sum + doc.chunks, 0)

/**
 * What a run changes in the graphs, from the stored graphs and the live document rows (those with chunks, in row-id
 * order), at `limit` rows a graph. Dropped, their live rows grouped again with the rows in no graph: a graph built
 * otherwise (`config`), one that has lost more than half its rows, and one whose documents do not match the table's
 * (out of order, repeated, in an earlier graph, or of another chunk count: damage). Then, while more than
 * `MAX_OPEN_GROUPS` groups are under half full (stored graphs and new groups alike), the two smallest are built again as
 * one: a run that adds a few documents rebuilds a small graph, never a large one, and each row is rebuilt only as often
 * as its group doubles. A document never spans two groups.
 */
export const planGraphUpdate = (
  stored: ReadonlyArray<StoredGraph>,
  live: ReadonlyArray<DocRows>,
  config: string,
  limit: number
): GraphUpdate => {
  const liveChunks = new Map(live.map((doc) => [doc.id, doc.chunks]))
  const drop: Array<number> = []
  /** A group under half full: a stored graph's (`id`) or one to build. */
  type Open = { readonly id: number | undefined; readonly docs: ReadonlyArray<DocRows>; readonly rows: number }
  const open: Array<Open> = []
  const covered = new Set<number>()
  for (const graph of stored) {
    const sound = graph.docs.every(
      (doc, k) =>
        doc.chunks > 0 &&
        (k === 0 || doc.id > graph.docs[k - 1]!.id) &&
        !covered.has(doc.id) &&
        (liveChunks.get(doc.id) ?? doc.chunks) === doc.chunks
    )
    const docs = graph.docs.filter((doc) => liveChunks.has(doc.id))
    const rows = chunksIn(docs)
    if (!sound || graph.config !== config || rows === 0 || 2 * rows < chunksIn(graph.docs)) {
      drop.push(graph.id)
      continue
    }
    for (const doc of docs) covered.add(doc.id)
    if (2 * rows < limit) open.push({ id: graph.id, docs, rows })
  }
  const groups = pack(
    live.filter((doc) => !covered.has(doc.id) && doc.chunks > 0),
    limit
  )
  const built: Array<ReadonlyArray<DocRows>> = []
  for (const docs of groups) {
    const rows = chunksIn(docs)
    if (2 * rows < limit) open.push({ id: undefined, docs, rows })
    else built.push(docs)
  }
  const order = (a: Open, b: Open) => a.rows - b.rows || a.docs[0]!.id - b.docs[0]!.id
  while (open.length > MAX_OPEN_GROUPS) {
    open.sort(order)
    const [a, b] = open.splice(0, 2) as [Open, Open]
    for (const one of [a, b]) if (one.id !== undefined) drop.push(one.id)
    const docs = [...a.docs, ...b.docs].sort((x, y) => x.id - y.id)
    const rows = a.rows + b.rows
    // A group half full or more is done with: merged again, it could outgrow `limit`.
    if (2 * rows < limit) open.push({ id: undefined, docs, rows })
    else built.push(docs)
  }
  for (const one of open) if (one.id === undefined) built.push(one.docs)
  built.sort((a, b) => a[0]!.id - b[0]!.id)
  return { drop: drop.sort((a, b) => a - b), groups: built }
}

/** Documents in row-id order packed into groups of at most `limit` rows (a larger document in a group of its own). */
const pack = (docs: ReadonlyArray<DocRows>, limit: number): Array<Array<DocRows>> => {
  const groups: Array<Array<DocRows>> = []
  let rows = 0
  for (const doc of [...docs].sort((a, b) => a.id - b.id)) {
    if (groups.length === 0 || rows + doc.chunks > limit) {
      groups.push([])
      rows = 0
    }
    groups[groups.length - 1]!.push(doc)
    rows += doc.chunks
  }
  return groups
}

/** Documents read per statement while a graph's rows are gathered. */
const READ_PAGE = 500

/**
 * Brings the graphs up to date with the documents, just before the run's transaction commits: none when the manifest
 * names no approximate index, else the planned ones built (on the builder's threads where there are some) and
 * stored, each with its rows' codes. `IndexCorrupt` for a stored row that does not read.
 */
export const updateGraphs = (
  sql: SqlClient.SqlClient,
  t: GraphTables,
  location: string,
  manifest: IndexManifest,
  options: TransactionOptions
): Effect.Effect<void, SqlError.SqlError | IndexCorrupt> =>
  Effect.gen(function* () {
    const ann = manifest.ann
    if (ann === undefined) {
      // Emptied, not dropped: a reader loading meanwhile may have seen the table, and must still find it.
      yield* dropGraphs(sql, t)
      return
    }
    yield* createAnnTable(sql, t)
    const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
    const d = manifest.dimensions
    const storedRows = yield* sql<{ id: unknown; config: unknown; docs: unknown; counts: unknown }>`
      SELECT id, config, docs, counts FROM ${t.ann} ORDER BY first_doc, id`
    const stored: Array<StoredGraph> = []
    for (const row of storedRows) {
      const docs = docRowsOf(row.docs, row.counts)
      if (docs === undefined || typeof row.config !== "string") return yield* corrupt("a vector graph's row is damaged")
      stored.push({ id: Number(row.id), config: row.config, docs })
    }
    const live = (yield* sql<{ id: unknown; chunks: unknown }>`
      SELECT id, chunks FROM ${t.documents} WHERE chunks > 0 ORDER BY id`).map((row) => ({
      id: Number(row.id),
      chunks: Number(row.chunks)
    }))
    if (!live.every((doc) => Number.isSafeInteger(doc.id))) return yield* corrupt("a document's row id is out of range")
    const plan = planGraphUpdate(stored, live, configOf(ann), groupRowsOf(d))
    if (plan.drop.length > 0) yield* sql`DELETE FROM ${t.ann} WHERE id IN ${sql.in(plan.drop)}`
    let done = 0
    const tell = Effect.suspend(() =>
      options.graphs === undefined ? Effect.void : Effect.ignoreCause(options.graphs(done, plan.groups.length))
    )
    yield* tell
    // The database is asked one thing at a time (one connection holds the transaction); graphs build meanwhile.
    const database = yield* Semaphore.make(1)
    const one = (group: ReadonlyArray<DocRows>) =>
      Effect.gen(function* () {
        const count = chunksIn(group)
        const builder = options.graphBuilder
        // Rows to build here go straight into a kernel's memory; rows for another thread into an array of their own.
        const read = (here: boolean) =>
          database.withPermits(1)(unitRows(sql, t, group, d, here ? holdRows((count + 1) * d, d) : undefined, corrupt))
        const rows = yield* read(builder === undefined)
        // The codes first: a job's rows belong to the thread that builds it once sent.
        const codes = encodeCodes(codeRowsOf(count, d, [rows.subarray(0, count * d)]))
        const job: GraphJob = { rows, count, dimensions: d, m: ann.m, efConstruction: ann.efConstruction }
        const elsewhere = builder === undefined ? undefined : yield* builder.build(job)
        // A thread that could not build it leaves it to this one, with the rows read again.
        const bytes = elsewhere ?? buildGraphBytes(builder === undefined ? job : { ...job, rows: yield* read(true) })
        yield* database.withPermits(1)(
          sql`INSERT INTO ${t.ann} ${sql.insert({
            first_doc: group[0]!.id,
            config: configOf(ann),
            docs: new Uint8Array(BigInt64Array.from(group, (doc) => BigInt(doc.id)).buffer),
            counts: new Uint8Array(Uint32Array.from(group, (doc) => doc.chunks).buffer),
            graph: bytes,
            codes
          })}`
        )
        done++
        yield* tell
      })
    yield* Effect.forEach(plan.groups, one, {
      concurrency: Math.max(1, options.graphBuilder?.threads ?? 1),
      discard: true
    })
  })

/** A graph's documents from its `docs` and `counts` columns, or `undefined` where they do not match. */
const docRowsOf = (docs: unknown, counts: unknown): Array<DocRows> | undefined => {
  const ids = typed(docs, 8, (b, o, n) => new BigInt64Array(b, o, n))
  const chunks = typed(counts, 4, (b, o, n) => new Uint32Array(b, o, n))
  if (ids === undefined || chunks === undefined || ids.length !== chunks.length) return undefined
  const rows = Array.from(ids, (id, k) => ({ id: Number(id), chunks: chunks[k]! }))
  return rows.every((doc) => Number.isSafeInteger(doc.id)) ? rows : undefined
}

/**
 * The unit float32 rows of a group's documents, one after another (each component divided by the row's magnitude,
 * summed left to right as the exact scan sums it; an all-zero row stays zero), into `into` or an array of their own
 * with room for one more row. A graph is built from them and its codes are made from them.
 */
const unitRows = (
  sql: SqlClient.SqlClient,
  t: GraphTables,
  group: ReadonlyArray<DocRows>,
  d: number,
  into: Float32Array | undefined,
  corrupt: (detail: string) => IndexCorrupt
) =>
  Effect.gen(function* () {
    const count = chunksIn(group)
    const data = into ?? new Float32Array((count + 1) * d)
    let at = 0
    // The group's own rows, a page of ids at a time (a regrouped graph's rows may lie far apart in the table).
    for (let from = 0; from < group.length; from += READ_PAGE) {
      const ids = group.slice(from, from + READ_PAGE)
      const page = yield* sql<{ id: unknown; vectors: unknown }>`
        SELECT id, vectors FROM ${t.documents} WHERE id IN ${sql.in(ids.map((doc) => doc.id))} ORDER BY id`
      if (page.length !== ids.length || page.some((row, k) => Number(row.id) !== ids[k]!.id))
        return yield* corrupt("a document of a vector graph vanished while the graph was built")
      for (const [k, row] of page.entries()) {
        const { chunks, id } = ids[k]!
        const vectors = typed(row.vectors, 8, (b, o, n) => new Float64Array(b, o, n))
        if (vectors === undefined || vectors.length !== chunks * d)
          return yield* corrupt(`the vectors of document row ${id} are unreadable`)
        for (let r = 0; r < chunks; r++, at++)
          if (!Number.isFinite(unitRowInto(vectors, r * d, d, data, at * d)))
            return yield* corrupt(`a vector of document row ${id} is not finite`)
      }
    }
    return data
  })

/** Where a loaded document's chunks are in the snapshot: its first position and its chunk count, by row id. */
export type LoadedRows = ReadonlyMap<number, { readonly first: number; readonly chunks: number }>

/**
 * The stored graphs the snapshot walks, each row mapped to its position (-1 for a row not loaded: its document gone,
 * or in another shard), and what is damaged: a graph, its codes or its documents that do not read are left out and
 * said there (an approximate query then fails as damage, an exact one still answers). A graph built with other
 * settings than the manifest's is left out too (its chunks are scanned, and `check` says so).
 */
export const loadGraphs = (
  sql: SqlClient.SqlClient,
  t: GraphTables,
  manifest: IndexManifest,
  loaded: LoadedRows,
  positions: number
): Effect.Effect<{ readonly graphs: Array<LoadedGraph>; readonly damage: Array<string> }, SqlError.SqlError> =>
  Effect.gen(function* () {
    const ann: AnnConfig | undefined = manifest.ann
    const graphs: Array<LoadedGraph> = []
    const damage: Array<string> = []
    if (ann === undefined || !(yield* hasAnnTable(sql, t))) return { graphs, damage }
    const d = manifest.dimensions
    // The positions a graph loaded so far holds: a later graph that holds one of them too is damage.
    const covered = new Uint8Array(positions)
    const ids = yield* sql<{
      id: unknown
    }>`SELECT id FROM ${t.ann} WHERE config = ${configOf(ann)} ORDER BY first_doc, id`
    // One graph at a time: a graph with its codes can be a few hundred MB.
    for (const { id } of ids) {
      const [row] = yield* sql<{ docs: unknown; counts: unknown; graph: unknown; codes: unknown }>`
        SELECT docs, counts, graph, codes FROM ${t.ann} WHERE id = ${id}`
      const named = `the vector graph ${String(id)}`
      const docs = row === undefined ? undefined : docRowsOf(row.docs, row.counts)
      if (row === undefined || docs === undefined) {
        damage.push(`${named} is damaged: its documents do not read`)
        continue
      }
      const count = chunksIn(docs)
      const graph = row.graph instanceof Uint8Array ? decodeGraph(row.graph) : "the graph is not bytes"
      const codes: CodeRows | string =
        row.codes instanceof Uint8Array ? decodeCodes(row.codes, count, d) : "its scan codes are not bytes"
      const at = mapRows(docs, count, loaded, covered)
      const problem =
        typeof graph === "string"
          ? graph
          : graph.count !== count
            ? "it has another row count than its documents"
            : typeof codes === "string"
              ? codes
              : typeof at === "string"
                ? at
                : undefined
      if (problem !== undefined) damage.push(`${named} is damaged: ${problem}`)
      else {
        for (const p of at as Int32Array) if (p >= 0) covered[p] = 1
        graphs.push({ graph: graph as Graph, codes: codes as CodeRows, positions: at as Int32Array })
      }
    }
    return { graphs, damage }
  })

/**
 * Each of a graph's `count` rows' position in the snapshot, or -1; or why they cannot be mapped (a document of another
 * chunk count, or a chunk that `covered` says an earlier graph holds, or this one twice).
 */
const mapRows = (
  docs: ReadonlyArray<DocRows>,
  count: number,
  loaded: LoadedRows,
  covered: Uint8Array
): Int32Array | string => {
  const positions = new Int32Array(count).fill(-1)
  const seen = new Set<number>()
  let at = 0
  for (const doc of docs) {
    const here = loaded.get(doc.id)
    if (here !== undefined) {
      if (here.chunks !== doc.chunks) return "it has another chunk count for a document"
      if (seen.has(doc.id) || covered[here.first] === 1)
        return "it holds chunks another graph holds, or holds them twice"
      seen.add(doc.id)
      for (let c = 0; c < doc.chunks; c++) positions[at + c] = here.first + c
    }
    at += doc.chunks
  }
  return positions
}
