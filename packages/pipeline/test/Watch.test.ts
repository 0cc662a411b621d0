/**
 * A watched index: whatever happens to the files (made, changed, removed, renamed, saved by an editor through a
 * rename, changed ten thousand times in a burst), once the watch has caught up the index is the one a fresh run over
 * the same files makes. The tests wait for the watch's run reports, never for a timer.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { isDeepStrictEqual } from "node:util"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, FileSystem, Layer, Option, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { settle, type WatchRun, watchIndex } from "../src/programs/Watch.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { matters, watchTargets } from "../src/read/Watcher.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

const Base = Layer.mergeAll(Embedder.layerLocalSha256, DocumentSource.layer).pipe(
  Layer.provideMerge(NodeServices.layer)
)

/** What the index at `file` holds: its documents (content hashes included), each with its chunks' texts, and counts. */
const contents = (file: string) =>
  Effect.gen(function* () {
    const store = yield* IndexStore
    const manifest = Option.getOrUndefined(yield* store.manifest)
    const documents = [...(yield* store.documents)].sort((a, b) => (a.docId < b.docId ? -1 : 1))
    const snapshot = yield* store.snapshot
    const chunks = documents.map((d) =>
      Option.match(snapshot, { onNone: () => [], onSome: (s) => s.document(d.docId)?.chunks ?? [] })
    )
    return { documents, chunks, counts: [manifest?.documents, manifest?.chunks] }
  }).pipe(Effect.scoped, Effect.provide(layerSqlite(file)))

const write = (file: string, text: string) => writeFileSync(file, text)

/**
 * Watches `docs` (made by `setup` in a temporary folder) into an index there, and waits for the first run. `caughtUp`
 * then waits for run reports until the index holds what a fresh run over the files as they are makes, failing on a
 * failed run; it returns how many runs it saw.
 */
const watching = (setup: (docs: string) => void) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-watch-" })
    const docs = `${dir}/docs`
    mkdirSync(docs)
    setup(docs)
    const index = `${dir}/index.db`
    const runs = yield* Queue.unbounded<WatchRun>()
    yield* watchIndex([docs], {}, { quiet: "50 millis", maxWait: "1 second" }).pipe(
      Stream.runForEach((run) => Queue.offer(runs, run)),
      Effect.provide(layerSqlite(index)),
      Effect.forkScoped
    )
    const first = yield* Queue.take(runs)
    assert.strictEqual(first._tag, "Indexed", first._tag === "Failed" ? first.error.message : "")
    assert.isTrue(first.first)
    let fresh = 0
    const caughtUp = Effect.gen(function* () {
      const target = `${dir}/fresh-${fresh++}.db`
      yield* indexPaths([docs]).pipe(Effect.provide(layerSqlite(target)))
      const expected = yield* contents(target)
      for (let seen = 1; ; seen++) {
        const run = yield* Queue.take(runs)
        if (run._tag === "Failed") return yield* Effect.die(run.error)
        assert.isFalse(run.first)
        if (isDeepStrictEqual(yield* contents(index), expected)) return seen
      }
    }).pipe(Effect.timeout("60 seconds"))
    return { docs, caughtUp }
  })

describe("a watched index", () => {
  it.live(
    "follows files made, changed and removed, in folders made after the watch began too",
    () =>
      Effect.gen(function* () {
        const { caughtUp, docs } = yield* watching((docs) => {
          mkdirSync(`${docs}/sub`)
          write(`${docs}/a.md`, "# Alpha\nThe first note.\n")
          write(`${docs}/b.md`, "# Beta\nThe second note.\n")
          write(`${docs}/sub/c.txt`, "A third note, in plain text.\n")
        })
        write(`${docs}/a.md`, "# Alpha\nThe first note, changed.\n")
        write(`${docs}/d.md`, "# Delta\nA new note.\n")
        mkdirSync(`${docs}/new/deeper`, { recursive: true })
        write(`${docs}/new/deeper/e.md`, "# Echo\nA note in a new folder.\n")
        rmSync(`${docs}/b.md`)
        yield* caughtUp
        // A folder made after the watch began is watched as well.
        write(`${docs}/new/deeper/e.md`, "# Echo\nThe note in the new folder, changed.\n")
        yield* caughtUp
        write(`${docs}/sub/c.txt`, "The third note, changed.\n")
        yield* caughtUp
      }).pipe(Effect.provide(Base)),
    120_000
  )

  it.live(
    "follows files and folders renamed",
    () =>
      Effect.gen(function* () {
        const { caughtUp, docs } = yield* watching((docs) => {
          mkdirSync(`${docs}/sub`)
          write(`${docs}/a.md`, "# Alpha\nThe first note.\n")
          write(`${docs}/b.md`, "# Beta\nThe second note.\n")
          write(`${docs}/sub/c.md`, "# Gamma\nA third note.\n")
        })
        renameSync(`${docs}/a.md`, `${docs}/z.md`)
        yield* caughtUp
        renameSync(`${docs}/sub`, `${docs}/moved`)
        yield* caughtUp
        // The renamed folder is watched under its new name.
        write(`${docs}/moved/c.md`, "# Gamma\nThe third note, changed after its folder moved.\n")
        yield* caughtUp
        // A file moved out of the paths is gone from the index; one moved in is added.
        renameSync(`${docs}/b.md`, `${docs}/../b.md`)
        renameSync(`${docs}/../b.md`, `${docs}/moved/b.md`)
        yield* caughtUp
      }).pipe(Effect.provide(Base)),
    120_000
  )

  it.live(
    "follows editors that save by writing another file and renaming it over the note",
    () =>
      Effect.gen(function* () {
        const { caughtUp, docs } = yield* watching((docs) => {
          write(`${docs}/x.md`, "# X\nThe note as it was.\n")
          write(`${docs}/y.md`, "# Y\nAnother note.\n")
        })
        // As most editors save: a new file beside it, renamed over it.
        write(`${docs}/x.md.tmp`, "# X\nThe note as saved.\n")
        renameSync(`${docs}/x.md.tmp`, `${docs}/x.md`)
        yield* caughtUp
        // Saved that way again: the file in place is another file now, and its changes are seen still.
        write(`${docs}/.x.md.swp`, "# X\nSaved once more.\n")
        renameSync(`${docs}/.x.md.swp`, `${docs}/x.md`)
        yield* caughtUp
        // As vim saves with a backup: the note renamed away, written anew, the backup removed.
        renameSync(`${docs}/y.md`, `${docs}/y.md~`)
        write(`${docs}/y.md`, "# Y\nAnother note, saved with a backup.\n")
        rmSync(`${docs}/y.md~`)
        yield* caughtUp
        // Removing a note saved through a rename is seen (Node's own recursive watch on Linux misses it).
        rmSync(`${docs}/x.md`)
        yield* caughtUp
      }).pipe(Effect.provide(Base)),
    120_000
  )

  it.live(
    "ends a burst of 10,000 changes in a few runs and the index of a fresh run",
    () =>
      Effect.gen(function* () {
        const { caughtUp, docs } = yield* watching((docs) => {
          write(`${docs}/keep.md`, "# Keep\nA note the burst leaves alone.\n")
        })
        // 2,000 files in 20 new folders, each written 5 times: 10,000 changes as fast as they can be made.
        for (let round = 0; round < 5; round++) {
          for (let i = 0; i < 2_000; i++) {
            const folder = `${docs}/burst-${i % 20}`
            if (round === 0 && i < 20) mkdirSync(folder)
            write(`${folder}/note-${i}.md`, `# Note ${i}\nRound ${round} of the burst, note ${i}.\n`)
          }
        }
        const runs = yield* caughtUp
        // Coalesced: a run covers every change made before it starts, however many.
        assert.isAtMost(runs, 30, `${runs} runs`)
      }).pipe(Effect.provide(Base)),
    120_000
  )
})

describe("what a watch watches", () => {
  it("watches each folder a run reads once, and the folder above each path", () => {
    const dir = `${tmpdir()}/funcpipe-watch-targets-${process.pid}`
    rmSync(dir, { recursive: true, force: true })
    try {
      mkdirSync(`${dir}/docs/sub/deeper`, { recursive: true })
      mkdirSync(`${dir}/docs/.hidden`)
      mkdirSync(`${dir}/docs/node_modules`)
      write(`${dir}/docs/a.md`, "a")
      write(`${dir}/notes.jsonl`, "{}")
      const targets = watchTargets([`${dir}/docs`, `${dir}/notes.jsonl`])
      assert.deepStrictEqual(
        targets.map((t) => [t.folder.slice(dir.length), t.names === undefined ? undefined : [...t.names].sort()]),
        [
          ["/docs", undefined],
          ["/docs/sub", undefined],
          ["/docs/sub/deeper", undefined],
          ["", ["docs", "notes.jsonl"]]
        ]
      )
      const docs = targets[0]!
      const ignored = [`${dir}/docs/index.db`]
      assert.isTrue(matters(docs, "a.md", ignored))
      assert.isFalse(matters(docs, ".a.md.swp", ignored), "hidden files are not read")
      assert.isFalse(matters(docs, "node_modules", ignored))
      for (const own of ["index.db", "index.db-wal", "index.db-journal", "index.db.embeddings"]) {
        assert.isFalse(matters(docs, own, ignored), `${own}: the index's own files start no run`)
      }
      assert.isTrue(matters(docs, "index.dbx", ignored))
      const above = targets[3]!
      assert.isTrue(matters(above, "notes.jsonl", ignored))
      assert.isFalse(matters(above, "other.jsonl", ignored))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("settle", () => {
  it.effect("waits until the changes have been quiet for a while", () =>
    Effect.gen(function* () {
      const changes = yield* Queue.sliding<void>(1)
      const settled = yield* Effect.forkChild(settle(changes, "300 millis", "5 seconds"))
      yield* TestClock.adjust("200 millis")
      yield* Queue.offer(changes, undefined)
      yield* TestClock.adjust("299 millis")
      assert.isUndefined(settled.pollUnsafe(), "299 ms after the last change")
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(settled)
    })
  )

  it.effect("waits no longer than its longest wait under steady changes", () =>
    Effect.gen(function* () {
      const changes = yield* Queue.sliding<void>(1)
      const settled = yield* Effect.forkChild(settle(changes, "300 millis", "5 seconds"))
      for (let t = 0; t < 4_800; t += 200) {
        yield* Queue.offer(changes, undefined)
        yield* TestClock.adjust("200 millis")
        assert.isUndefined(settled.pollUnsafe(), `at ${t + 200} ms`)
      }
      yield* Queue.offer(changes, undefined)
      yield* TestClock.adjust("200 millis")
      yield* Fiber.join(settled)
    })
  )
})
