/**
 * A SQLite index's graphs in the paged layout (a head in `ann`, a row a node in `ann_rows`): a file whose graphs were
 * stored whole (before paging) answers as before and is paged by its next run, byte for byte as an index paged from
 * the start; rows damaged or missing are damage that a walk meets and `check` finds; and a process asking once walks
 * only the graphs a walk reads in part.
 */
import { DatabaseSync } from "node:sqlite"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { type AnnConfig, DEFAULT_ANN } from "@funcpipe/domain/Manifest"
import { Effect, FileSystem, Layer, Option } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { checkIndex, isSound } from "../src/programs/CheckIndex.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { type QueryOptions, queryIndex } from "../src/programs/QueryIndex.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { holdCodes } from "../src/search/CodeKernel.ts"
import { decodeGraphHead, encodeGraph } from "../src/search/HnswBytes.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { IndexCorrupt } from "../src/store/StoreErrors.ts"
import { pagedCodeRows, readGraphRows } from "../src/store/sqlite/GraphRows.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"
import { encodeCodes } from "../src/store/sqlite/WalkRows.ts"
import { rewriteGraphRows } from "./GraphTables.ts"

const WORDS = ["moon", "tide", "orbit", "comet", "saturn", "ring", "star", "probe", "dust", "light", "night", "sky"]

/** `n` short documents as JSON Lines, their words drawn from a fixed list by their number. */
const jsonl = (n: number) =>
  Array.from({ length: n }, (_, id) => {
    const text = Array.from({ length: 12 }, (_, j) => WORDS[(id * 7 + j * ((id % 5) + 1)) % WORDS.length]).join(" ")
    return JSON.stringify({ doc_id: `d${id}`, title: `Note ${id}`, text })
  }).join("\n")

const on = (file: string) =>
  Effect.provide(Layer.mergeAll(layerSqlite(file), Embedder.layerLocalSha256, DocumentSource.layer))

const ask = (file: string, text: string, options: QueryOptions) =>
  queryIndex(text, 10, { mode: "vector", ...options }).pipe(
    on(file),
    Effect.map((answer) => answer.results.map((r) => [r.chunk.docId, r.score] as const))
  )

/** Every graph's head and row, as stored. */
const stored = (file: string) => {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    return {
      heads: db.prepare("SELECT segment, config, segments, data, layout FROM ann ORDER BY segment").all(),
      rows: db.prepare("SELECT id, data FROM ann_rows ORDER BY id").all()
    }
  } finally {
    db.close()
  }
}

/**
 * Stores an index's paged graphs whole, as FuncPipe did before paging them: each graph as one value, its codes as
 * another, no `layout` column and no `ann_rows` table.
 */
const storeWhole = (file: string, d: number) => {
  const db = new DatabaseSync(file)
  try {
    for (const { data, layout, segment } of db.prepare("SELECT segment, data, layout FROM ann").all() as Array<{
      segment: number
      data: Uint8Array
      layout: string
    }>) {
      const paged = decodeGraphHead(data)
      if (typeof paged === "string") throw new Error(paged)
      const codes = holdCodes(paged.graph.count, d)
      const problem = readGraphRows(db, segment, paged, d, layout === "rows+i8" ? codes : undefined)
      if (problem !== undefined) throw new Error(problem)
      db.prepare("UPDATE ann SET data = ?, codes = ? WHERE segment = ?").run(
        encodeGraph(paged.graph),
        layout === "rows+i8" ? encodeCodes({ ...codes, codes: codes.codes.subarray(0, paged.graph.count * d) }) : null,
        segment
      )
    }
    db.exec("ALTER TABLE ann DROP COLUMN layout; DROP TABLE ann_rows")
  } finally {
    db.close()
  }
}

const Base = Layer.mergeAll(NodeServices.layer)

/** A folder holding `docs.jsonl` (300 documents), indexed into `index.db` with `ann`. */
const built = (ann: AnnConfig) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-paged-" })
    yield* fs.writeFileString(`${dir}/docs.jsonl`, jsonl(300))
    const file = `${dir}/index.db`
    yield* indexPaths([`${dir}/docs.jsonl`], { ann }).pipe(on(file))
    return { dir, file }
  })

const TEXTS = ["moon tide orbit", "comet dust", "saturn ring probe", "night sky light"]

describe("graphs stored paged", () => {
  for (const codes of ["i8", undefined] as const)
    it.live(
      `stored whole by an older FuncPipe, answer as before and are paged by the next run (${codes ?? "float32"})`,
      () =>
        Effect.gen(function* () {
          const ann: AnnConfig = codes === undefined ? DEFAULT_ANN : { ...DEFAULT_ANN, codes }
          const { dir, file } = yield* built(ann)
          const paged = stored(file)
          assert.isNotEmpty(paged.rows)
          const answers = []
          for (const text of TEXTS) answers.push(yield* ask(file, text, { annCandidates: 16 }))
          storeWhole(file, 16)
          const whole = new DatabaseSync(file, { readOnly: true })
          const tables = whole.prepare("SELECT name FROM sqlite_master WHERE name = 'ann_rows'").all()
          const withCodes = whole.prepare("SELECT count(*) AS n FROM ann WHERE codes IS NOT NULL").get() as {
            n: number
          }
          whole.close()
          assert.deepStrictEqual(tables, [])
          assert.strictEqual(withCodes.n > 0, codes !== undefined)
          // Read whole: the same candidates, so the same answers.
          for (const [i, text] of TEXTS.entries())
            assert.deepStrictEqual(yield* ask(file, text, { annCandidates: 16 }), answers[i])
          // A run that changes nothing pages them as they are: byte for byte the graphs paged from the start.
          yield* indexPaths([`${dir}/docs.jsonl`], { ann }).pipe(on(file))
          assert.deepStrictEqual(stored(file), paged)
          for (const [i, text] of TEXTS.entries())
            assert.deepStrictEqual(yield* ask(file, text, { annCandidates: 16 }), answers[i])
        }).pipe(Effect.scoped, Effect.provide(Base))
    )

  it.live("mark the file as a layout an older FuncPipe refuses, and only while it has them", () =>
    Effect.gen(function* () {
      const layoutOf = (file: string) => {
        const db = new DatabaseSync(file, { readOnly: true })
        try {
          return (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version
        } finally {
          db.close()
        }
      }
      const { dir, file } = yield* built({ ...DEFAULT_ANN, codes: "i8" })
      assert.strictEqual(layoutOf(file), 5)
      // Built again without graphs: the layout an older FuncPipe reads and writes.
      yield* indexPaths([`${dir}/docs.jsonl`], { ann: "exact", rebuild: true }).pipe(on(file))
      assert.strictEqual(layoutOf(file), 4)
      const none = new DatabaseSync(file, { readOnly: true })
      const tables = none.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'ann%'").all()
      none.close()
      assert.deepStrictEqual(tables, [])
      assert.strictEqual((yield* ask(file, "moon tide", {})).length, 10)
    }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("with rows damaged or missing, fail approximate queries as damage, answer exact ones, and fail check", () =>
    Effect.gen(function* () {
      const { file } = yield* built({ ...DEFAULT_ANN, codes: "i8" })
      const sound = yield* checkIndex({ queries: 2 }).pipe(on(file))
      assert.isTrue(isSound(sound), JSON.stringify(sound.checks))
      const exact = yield* ask(file, "moon tide", { exact: true })
      // Every other row gone: a walk meets one at its first steps.
      const db = new DatabaseSync(file)
      db.exec("DELETE FROM ann_rows WHERE id % 2 = 0")
      db.close()
      const missing = yield* Effect.flip(ask(file, "moon tide", { annCandidates: 16 }))
      assert.instanceOf(missing, IndexCorrupt)
      assert.match(missing.message, /the vector graph of segment 1 is damaged: row \d+ is missing/)
      assert.deepStrictEqual(yield* ask(file, "moon tide", { exact: true }), exact)
      const checked = yield* checkIndex({ queries: 2 }).pipe(on(file))
      assert.isFalse(isSound(checked))
      assert.match(JSON.stringify(checked.checks), /\d+ of its rows are missing/)
      // Every row's first link to a row past the graph.
      const other = yield* built({ ...DEFAULT_ANN, codes: "i8" })
      rewriteGraphRows(other.file, (row) => row.setInt32(0, 2 ** 31 - 1, true))
      const misled = yield* Effect.flip(ask(other.file, "moon tide", { annCandidates: 16 }))
      assert.instanceOf(misled, IndexCorrupt)
      assert.include(misled.message, "of the graph links to a row it does not have")
    }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("come to be held whole a slice at a time, after which walks read no row", () =>
    Effect.gen(function* () {
      const { file } = yield* built({ ...DEFAULT_ANN, codes: "i8" })
      const nodes = stored(file).rows.length
      const answers = []
      for (const text of TEXTS) answers.push(yield* ask(file, text, { annCandidates: 16 }))
      // Every row gone from the file once a store's snapshot has held them: a walk that read one would fail.
      const gone = () => {
        const db = new DatabaseSync(file)
        db.exec("DELETE FROM ann_rows")
        db.close()
      }
      const walkAll = Effect.forEach(TEXTS, (text) =>
        Effect.map(queryIndex(text, 10, { mode: "vector", annCandidates: 16 }), (answer) =>
          answer.results.map((r) => [r.chunk.docId, r.score] as const)
        )
      )
      const held = yield* Effect.scoped(
        Effect.gen(function* () {
          const first = Option.getOrThrow(yield* IndexStore.use((store) => store.snapshot))
          // Before its first walk a snapshot holds nothing, and reads nothing to hold.
          assert.isUndefined(first.annWarm!(10))
          const [query] = yield* Embedder.use((e) => e.embedMany(["moon"]))
          const walkedOnce = first.annSearch!(query!.vector, 4)
          assert.isAbove(walkedOnce.positions.length, 0)
          // 10 rows a slice: false while a slice reads all it may, then true.
          let slices = 0
          while (first.annWarm!(10) === false) slices++
          // The walk read some rows already; the slices read the rest, in order.
          assert.isAbove(nodes, 20)
          assert.isAtLeast(slices, 1)
          assert.isAtMost(slices, Math.floor(nodes / 10))
          assert.isTrue(first.annWarm!(10))
          gone()
          // A later snapshot of the same state walks the graphs held whole: the same answers, no row read.
          return yield* walkAll
        })
      ).pipe(on(file))
      assert.deepStrictEqual(held, answers)
      // Without the slices, a walk reads rows, and finds them gone.
      const again = yield* built({ ...DEFAULT_ANN, codes: "i8" })
      const failed = yield* Effect.flip(
        Effect.scoped(
          Effect.gen(function* () {
            yield* IndexStore.use((store) => store.snapshot)
            const db = new DatabaseSync(again.file)
            db.exec("DELETE FROM ann_rows")
            db.close()
            return yield* walkAll
          })
        ).pipe(on(again.file))
      )
      assert.instanceOf(failed, IndexCorrupt)
    }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("are read whole past a row that does not read, which is left for the walk that reaches it", () =>
    Effect.gen(function* () {
      const { file } = yield* built({ ...DEFAULT_ANN, codes: "i8" })
      const db = new DatabaseSync(file)
      try {
        db.exec("UPDATE ann_rows SET data = X'00' WHERE id = (SELECT min(id) FROM ann_rows)")
        const { data, segment } = db.prepare("SELECT segment, data FROM ann ORDER BY segment LIMIT 1").get() as {
          segment: number
          data: Uint8Array
        }
        const paged = decodeGraphHead(data)
        if (typeof paged === "string") throw new Error(paged)
        const nodes = (
          db
            .prepare("SELECT count(*) AS n FROM ann_rows WHERE id >= ? AND id < ?")
            .get(segment * 2 ** 27, (segment + 1) * 2 ** 27) as { n: number }
        ).n
        const rows = pagedCodeRows(paged, segment, 16, "the graph")
        const source = { db, corrupt: (detail: string) => new IndexCorrupt({ location: file, detail }) }
        let read = 0
        for (let n = rows.fill(source, 7); n > 0; n = rows.fill(source, 7)) read += n
        // Every row read, every one held but the damaged one.
        assert.strictEqual(read, nodes)
        assert.strictEqual(rows.held(), nodes - 1)
        // A walk that reaches it reports it (one that may look at every row does).
        const query = new Float32Array(16).fill(0.25)
        assert.throws(
          () => rows.search(paged.graph, query, nodes, undefined, source),
          /the graph is damaged: row \d+ of the graph holds 1 bytes, not 152/
        )
      } finally {
        db.close()
      }
    }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("are walked by a process asking once where they carry codes, and scanned where they do not", () =>
    Effect.gen(function* () {
      // Damaged rows tell a walk from a scan: a walk fails on them, a scan never reads them.
      const damage = (file: string) => {
        const db = new DatabaseSync(file)
        db.exec("DELETE FROM ann_rows WHERE id % 2 = 0")
        db.close()
      }
      const coded = yield* built({ ...DEFAULT_ANN, codes: "i8" })
      const plain = yield* built(DEFAULT_ANN)
      const exact = yield* ask(plain.file, "comet dust", { exact: true })
      // Asking once, undamaged: the walk's answer at the default 64 candidates.
      const once = yield* ask(coded.file, "comet dust", { once: true })
      assert.strictEqual(once.length, 10)
      assert.deepStrictEqual(once, yield* ask(coded.file, "comet dust", { annCandidates: 64 }))
      damage(coded.file)
      damage(plain.file)
      // Over codes, a process asking once walks, and meets the damage; --exact scans.
      assert.instanceOf(yield* Effect.flip(ask(coded.file, "comet dust", { once: true })), IndexCorrupt)
      assert.deepStrictEqual(yield* ask(coded.file, "comet dust", { once: true, exact: true }), exact)
      // Over float32 rows, a walk would read every row first: a process asking once scans, unless told to walk.
      assert.deepStrictEqual(yield* ask(plain.file, "comet dust", { once: true }), exact)
      assert.instanceOf(
        yield* Effect.flip(ask(plain.file, "comet dust", { once: true, annCandidates: 16 })),
        IndexCorrupt
      )
      // A server's query (not once) walks either.
      assert.instanceOf(yield* Effect.flip(ask(plain.file, "comet dust", {})), IndexCorrupt)
    }).pipe(Effect.scoped, Effect.provide(Base))
  )
})
