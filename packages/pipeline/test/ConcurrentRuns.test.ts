/**
 * Two real indexing processes at once: the second run decides everything (settings check, sync plan) under the write
 * lock, so it can never write from a plan made before the first run committed.
 */

import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { Effect, FileSystem, Layer, Option } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

const child = fileURLToPath(new URL("./children/IndexPaused.ts", import.meta.url))

const corpus = (count: number) =>
  `${Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      id: `doc-${i}`,
      text: Array.from({ length: 10 }, (_, s) => `Sentence ${s} of document ${i} says something new.`).join(" ")
    })
  ).join("\n")}\n`

interface Running {
  readonly proc: ChildProcess
  /** Resolves when the process prints `line`. */
  readonly printed: (line: string) => Effect.Effect<void>
  /** Resolves with the exit code and what the process wrote (stdout, then stderr). */
  readonly exited: Effect.Effect<{ readonly code: number | null; readonly output: string }>
}

/** Starts `IndexPaused` with the arguments (see that file). */
const start = (args: ReadonlyArray<string>): Running => {
  const proc = spawn(process.execPath, [child, ...args], { stdio: ["pipe", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  const waiting: Array<() => void> = []
  proc.stdout!.on("data", (data: Buffer) => {
    stdout += data.toString()
    for (const wake of waiting.splice(0)) wake()
  })
  proc.stderr!.on("data", (data: Buffer) => void (stderr += data.toString()))
  const exit = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)))
  return {
    proc,
    printed: (line) =>
      Effect.callback<void>((resume) => {
        const check = () => (stdout.split("\n").includes(line) ? resume(Effect.void) : void waiting.push(check))
        check()
        void exit.then(() => resume(Effect.void))
      }),
    exited: Effect.promise(() => exit.then((code) => ({ code, output: stdout + stderr })))
  }
}

const Base = Layer.mergeAll(Embedder.layerLocalSha256, DocumentSource.layer).pipe(
  Layer.provideMerge(NodeServices.layer)
)

describe("two index runs at once", () => {
  it.live(
    "a run that waited for the lock plans against what the first one committed, never a stale plan",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-race-" })
        const indexFile = `${dir}/index.db`
        const corpusFile = `${dir}/corpus.jsonl`
        yield* fs.writeFileString(corpusFile, corpus(400))
        yield* indexPaths([corpusFile]).pipe(Effect.provide(layerSqlite(indexFile)))

        // A rebuilds with 256-code-point chunks and stops inside its write transaction.
        const a = start([indexFile, corpusFile, "256", "1", "2"])
        yield* a.printed("paused")
        // B, an update with the default 512, starts while A holds the lock; A then goes on and commits. B either took
        // the lock after A's commit (and must see A's settings) or gave up waiting (busy); it must not write.
        const b = start([indexFile, corpusFile, "512", "0", "0"])
        yield* Effect.sleep("300 millis")
        a.proc.stdin!.end("go\n")
        const [doneA, doneB] = yield* Effect.all([a.exited, b.exited], { concurrency: 2 })
        assert.strictEqual(doneA.code, 0, doneA.output)
        assert.notStrictEqual(doneB.code, 0, "B must not succeed from a plan made before A committed")
        assert.match(doneB.output, /SettingsChanged|IndexBusy/)

        // The index is A's, labelled as A's, and consistent: nothing is left to repair.
        const { documents, manifest } = yield* IndexStore.use((store) =>
          Effect.all({ manifest: Effect.map(store.manifest, Option.getOrThrow), documents: store.documents })
        ).pipe(Effect.provide(layerSqlite(indexFile)))
        assert.strictEqual(manifest.chunker.chunkSize, 256)
        assert.strictEqual(
          manifest.chunks,
          documents.reduce((sum, d) => sum + d.chunks, 0)
        )
        assert.strictEqual(documents.length, 400)
        const again = yield* indexPaths([corpusFile], {
          chunker: new ChunkerConfig({
            chunkSize: ChunkSize.make(256),
            overlap: Overlap.make(0),
            tailPolicy: "emit_short"
          })
        }).pipe(Effect.provide(layerSqlite(indexFile)))
        assert.deepStrictEqual(
          [again.plan.added.length, again.plan.updated.length, again.plan.unchanged.length],
          [0, 0, 400]
        )
      }).pipe(Effect.provide(Base)),
    60_000
  )
})
