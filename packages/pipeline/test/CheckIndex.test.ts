/**
 * `checkIndex` on a sound index and on indexes broken in each way it looks for: a damaged file, a manifest that
 * miscounts, a document whose chunk count is wrong, postings lost or garbled, a vector block cut short.
 */
import { DatabaseSync } from "node:sqlite"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { type CheckName, type CheckReport, checkIndex, isSound } from "../src/programs/CheckIndex.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

const NOTES: Record<string, string> = {
  "moon.md": "# The Moon\n\nThe Moon is about 384,000 km from the Earth. Its phases repeat every 29.5 days.\n",
  "saturn.md": "# Saturn\n\nSaturn's rings are ice and rock. Cassini orbited Saturn for thirteen years.\n",
  "bread.md": "# Bread\n\nLet the dough rise slowly in a cool kitchen, then bake it hot.\n",
  "tides.md": "# Tides\n\nThe Moon pulls the oceans into two bulges, so most coasts see two high tides a day.\n"
}

/** A fresh index of the notes; its file, with the write-ahead log folded in (so the file alone holds the index). */
const notesIndex = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-check-" })
  yield* fs.makeDirectory(`${dir}/notes`)
  for (const [name, text] of Object.entries(NOTES)) yield* fs.writeFileString(`${dir}/notes/${name}`, text)
  const file = `${dir}/index.db`
  yield* indexPaths([`${dir}/notes`]).pipe(
    Effect.provide(Layer.mergeAll(layerSqlite(file), Embedder.layerLocalSha256, DocumentSource.layer))
  )
  withDb(file, (db) => db.exec("PRAGMA wal_checkpoint(TRUNCATE)"))
  return file
})

const withDb = (file: string, f: (db: DatabaseSync) => void) => {
  const db = new DatabaseSync(file)
  try {
    f(db)
  } finally {
    db.close()
  }
}

const check = (file: string) =>
  checkIndex({ queries: 4 }).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), Embedder.layerLocalSha256)))

/** The problems of one check. */
const problemsOf = (report: CheckReport, name: CheckName) =>
  report.checks.filter((c) => c.name === name).flatMap((c) => c.problems)

const Base = NodeServices.layer

describe("checkIndex", () => {
  it.live("finds nothing wrong with a sound index, and says what it covered", () =>
    Effect.gen(function* () {
      const file = yield* notesIndex
      const report = yield* check(file)
      assert.isTrue(isSound(report), JSON.stringify(report.checks))
      assert.deepStrictEqual(
        report.checks.map((c) => c.name),
        ["storage", "manifest", "documents", "postings", "vectors", "ordering"]
      )
      const covered = Object.fromEntries(report.checks.map((c) => [c.name, c.covered]))
      assert.match(covered["postings"]!, /^4 chunks' terms against \d+ terms' postings$/)
      assert.match(covered["ordering"]!, /^12 result lists from 4 queries in lexical, vector, hybrid mode$/)
    }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("reports a manifest that miscounts, and a document that says more chunks than it has", () =>
    Effect.gen(function* () {
      const file = yield* notesIndex
      withDb(file, (db) => {
        const row = db.prepare("SELECT value FROM meta WHERE key = 'manifest'").get() as { value: string }
        const manifest = JSON.parse(row.value)
        manifest.documents = 9
        db.prepare("UPDATE meta SET value = ? WHERE key = 'manifest'").run(JSON.stringify(manifest))
      })
      const miscounted = yield* check(file)
      assert.deepStrictEqual(problemsOf(miscounted, "manifest"), ["the manifest counts 9 documents; the index holds 4"])
      withDb(file, (db) => db.exec("UPDATE documents SET chunks = chunks + 1 WHERE doc_id = 'bread.md'"))
      const report = yield* check(file)
      assert.isFalse(isSound(report))
      assert.isNotEmpty(problemsOf(report, "documents"))
      assert.include(problemsOf(report, "documents")[0]!, '"bread.md"')
    }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("reports a term lost from the postings and a postings list that does not decode", () =>
    Effect.gen(function* () {
      const file = yield* notesIndex
      withDb(file, (db) => db.exec("DELETE FROM postings WHERE term = 'saturn'"))
      const lost = yield* check(file)
      const missing = problemsOf(lost, "postings")
      assert.isNotEmpty(missing)
      assert.match(missing[0]!, /^the term "saturn" of position \d+ is missing from its postings$/)
      withDb(file, (db) => db.exec("UPDATE postings SET data = X'FFFFFFFF' WHERE term = 'moon'"))
      const garbled = yield* check(file)
      assert.isTrue(problemsOf(garbled, "postings").some((p) => p.startsWith('the postings of "moon"')))
    }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("reports a vector block cut short", () =>
    Effect.gen(function* () {
      const file = yield* notesIndex
      withDb(file, (db) => db.exec("UPDATE vectors SET data = substr(data, 1, length(data) - 6)"))
      const report = yield* check(file)
      assert.isNotEmpty(problemsOf(report, "vectors"))
      assert.include(problemsOf(report, "vectors")[0]!, "damaged")
    }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("reports a damaged file from SQLite's own check", () =>
    Effect.gen(function* () {
      const file = yield* notesIndex
      const fs = yield* FileSystem.FileSystem
      // Garbles the headers and cell pointers of the b-tree pages after the first (SQLite's own page).
      const bytes = yield* fs.readFile(file)
      const damaged = Uint8Array.from(bytes)
      for (let page = 4096; page < damaged.length; page += 4096)
        for (let i = page; i < page + 64; i++) damaged[i] = 0xa5
      yield* fs.writeFile(file, damaged)
      const report = yield* check(file)
      assert.isFalse(isSound(report))
      assert.match(problemsOf(report, "storage")[0] ?? "", /damaged \(SQLite's check finds damage/)
    }).pipe(Effect.scoped, Effect.provide(Base))
  )
})
