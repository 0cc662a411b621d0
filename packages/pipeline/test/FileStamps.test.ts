/**
 * The stat-based fast path: a run (or `status`) leaves unread the files whose stamp (size, times, inode, name) is as
 * the last run recorded and whose documents are all in the index, and reads every other file; the answers are those
 * of a run that reads everything.
 */
import { utimesSync, writeFileSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Result, Stream } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { indexStatus } from "../src/programs/IndexStatus.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

/** A source that reads as the real one does and counts the files it left unread and the documents it read. */
const countingSource = (counts: { unread: number; read: number }, converterVersion?: number) =>
  Layer.effect(
    DocumentSource,
    Effect.map(DocumentSource, (real) =>
      DocumentSource.of({
        ...real,
        read: (paths, labels, known) =>
          real.read(paths, labels, known).pipe(
            Stream.tap((record) =>
              Effect.sync(() => {
                if (Result.isSuccess(record)) counts.read++
                else if (record.failure._tag === "UnreadFile") counts.unread++
              })
            )
          )
      })
    )
  ).pipe(
    Layer.provide(
      converterVersion === undefined ? DocumentSource.layer : DocumentSource.layerWith({ converterVersion })
    )
  )

/** Sets a file's times an hour back: a file changed just before a run is read again by the next one (racy). */
const settle = (file: string, secondsAgo = 3600) => {
  const then = Date.now() / 1000 - secondsAgo
  utimesSync(file, then, then)
}

const setup = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-stamps-" })
  yield* fs.makeDirectory(`${dir}/docs/sub`, { recursive: true })
  const files = {
    "docs/a.md": "# Alpha\nThe first note.\n",
    "docs/b.md": "# Beta\nThe second note.\n",
    "docs/sub/c.txt": "A third note, in plain text.\n",
    "docs/rows.jsonl": '{"id":"j1","text":"one line"}\n{"id":"j2","text":"another line"}\n'
  }
  for (const [name, text] of Object.entries(files)) {
    writeFileSync(`${dir}/${name}`, text)
    settle(`${dir}/${name}`)
  }
  const counts = { unread: 0, read: 0 }
  const reset = () => {
    counts.unread = 0
    counts.read = 0
  }
  const layer = Layer.mergeAll(layerSqlite(`${dir}/index.db`), countingSource(counts))
  return { dir, counts, reset, layer }
})

const Base = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)

describe("file stamps", () => {
  it.live(
    "read a converted file again once its converter is another version, and re-index it only if it reads otherwise",
    () =>
      Effect.gen(function* () {
        const { counts, dir, reset } = yield* setup
        writeFileSync(`${dir}/docs/page.html`, "<title>Page</title><p>A page of HTML.</p>")
        settle(`${dir}/docs/page.html`)
        const run = (version: number) =>
          indexPaths([`${dir}/docs`]).pipe(
            Effect.provide(Layer.mergeAll(layerSqlite(`${dir}/index.db`), countingSource(counts, version)))
          )
        yield* run(1)
        reset()
        yield* run(1)
        assert.deepStrictEqual(counts, { unread: 5, read: 0 }, "the page too is left unread")
        reset()
        const upgraded = yield* run(2)
        assert.deepStrictEqual(counts, { unread: 4, read: 1 }, "the page is read again, the Markdown and text are not")
        assert.deepStrictEqual([upgraded.plan.added, upgraded.plan.updated], [[], []], "it reads the same: unchanged")
        reset()
        yield* run(2)
        assert.deepStrictEqual(counts, { unread: 5, read: 0 }, "its new stamp is kept")
      }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("leave unchanged files unread, in index runs and in status, with the same plan", () =>
    Effect.gen(function* () {
      const { counts, dir, layer, reset } = yield* setup
      yield* Effect.gen(function* () {
        const first = yield* indexPaths([`${dir}/docs`])
        assert.strictEqual(first.plan.added.length, 5)
        assert.deepStrictEqual(counts, { unread: 0, read: 5 })
        reset()
        const again = yield* indexPaths([`${dir}/docs`])
        assert.deepStrictEqual(counts, { unread: 4, read: 0 }, "four files, none read")
        assert.deepStrictEqual([again.plan.added, again.plan.updated, again.plan.deleted], [[], [], []])
        assert.deepStrictEqual([...again.plan.unchanged].sort(), ["a.md", "b.md", "j1", "j2", "sub/c.txt"])
        assert.strictEqual(again.chunks, first.chunks)
        reset()
        const status = yield* indexStatus()
        assert.deepStrictEqual(status.changed, [])
        assert.deepStrictEqual(counts, { unread: 4, read: 0 })

        // One file changed (its time too, as an editor's save does): it alone is read.
        writeFileSync(`${dir}/docs/b.md`, "# Beta\nThe second note, longer now.\n")
        settle(`${dir}/docs/b.md`, 1800)
        reset()
        const changed = yield* indexStatus()
        assert.deepStrictEqual(
          changed.changed.map((c) => [c.source, c.updated]),
          [[`${dir}/docs/b.md`, 1]]
        )
        assert.deepStrictEqual(counts, { unread: 3, read: 1 })
        reset()
        const updated = yield* indexPaths([`${dir}/docs`])
        assert.deepStrictEqual(updated.plan.updated, ["b.md"])
        assert.deepStrictEqual(counts, { unread: 3, read: 1 })

        // A file removed is gone from the index as before, without reading the others.
        yield* FileSystem.FileSystem.use((fs) => fs.remove(`${dir}/docs/sub/c.txt`))
        reset()
        const removed = yield* indexPaths([`${dir}/docs`])
        assert.deepStrictEqual(removed.plan.deleted, ["sub/c.txt"])
        assert.deepStrictEqual(counts, { unread: 3, read: 0 })
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.provide(Base))
  )

  it.live("are not trusted for a file changed just before the run, nor after the keep rule changes", () =>
    Effect.gen(function* () {
      const { counts, dir, layer, reset } = yield* setup
      yield* Effect.gen(function* () {
        yield* indexPaths([`${dir}/docs`])
        // Written now: the same size and a time within the racy window, so its stamp is not recorded.
        writeFileSync(`${dir}/docs/a.md`, "# Alpha\nThe first NOTE.\n")
        reset()
        const racy = yield* indexPaths([`${dir}/docs`])
        assert.deepStrictEqual(racy.plan.updated, ["a.md"])
        reset()
        yield* indexPaths([`${dir}/docs`])
        assert.deepStrictEqual(counts, { unread: 3, read: 1 }, "read again while its time is recent")
        // Another keep rule: every file is read, as a document may now be kept or left out differently.
        reset()
        const kept = yield* indexPaths([`${dir}/docs`], {
          keep: { _tag: "Not", rule: { _tag: "Eq", field: "doc_id", value: "j2" } },
          prune: true
        })
        assert.deepStrictEqual(kept.plan.deleted, ["j2"])
        assert.deepStrictEqual(counts, { unread: 0, read: 5 })
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.provide(Base))
  )

  it.live("that are damaged, or whose documents went missing, cost a full read and nothing else", () =>
    Effect.gen(function* () {
      const { counts, dir, layer, reset } = yield* setup
      yield* Effect.gen(function* () {
        yield* indexPaths([`${dir}/docs`])
        const db = new DatabaseSync(`${dir}/index.db`)
        db.prepare("UPDATE file_stamps SET size = 'damaged' WHERE file LIKE '%a.md'").run()
        db.close()
        reset()
        const damaged = yield* indexPaths([`${dir}/docs`])
        assert.deepStrictEqual([damaged.plan.added, damaged.plan.updated, damaged.plan.unchanged.length], [[], [], 5])
        assert.deepStrictEqual(counts, { unread: 0, read: 5 })
        // Recorded again by that run: the next one reads nothing.
        reset()
        yield* indexPaths([`${dir}/docs`])
        assert.deepStrictEqual(counts, { unread: 4, read: 0 })
        // A document of a file gone from the index behind the stamps' back: the file is read and it is back.
        const again = new DatabaseSync(`${dir}/index.db`)
        again.prepare("DELETE FROM documents WHERE doc_id = 'j2'").run()
        again.close()
        reset()
        const repaired = yield* indexPaths([`${dir}/docs`])
        assert.deepStrictEqual(repaired.plan.added, ["j2"])
        assert.deepStrictEqual(counts, { unread: 3, read: 2 })
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.provide(Base))
  )

  it.live("are not recorded for a file with a skipped record, so its skip is reported on every run", () =>
    Effect.gen(function* () {
      const { counts, dir, layer, reset } = yield* setup
      writeFileSync(`${dir}/docs/rows.jsonl`, '{"id":"j1","text":"one line"}\nnot json\n')
      settle(`${dir}/docs/rows.jsonl`)
      yield* Effect.gen(function* () {
        const first = yield* indexPaths([`${dir}/docs`])
        assert.strictEqual(first.skipped.length, 1)
        reset()
        const again = yield* indexPaths([`${dir}/docs`])
        assert.deepStrictEqual(
          again.skipped.map((s) => s.line),
          [2]
        )
        assert.deepStrictEqual(counts, { unread: 3, read: 1 })
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.provide(Base))
  )
})
