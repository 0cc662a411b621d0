/** A server's paged graphs read whole between requests, from the snapshot's first walk on (`warmGraphs`). */

import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DEFAULT_ANN } from "@funcpipe/domain/Manifest"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { indexPaths } from "@funcpipe/pipeline/programs/IndexRun"
import { openSnapshot, querySnapshot } from "@funcpipe/pipeline/programs/QueryIndex"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { IndexStore } from "@funcpipe/pipeline/store/IndexStore"
import { layerSqlite } from "@funcpipe/pipeline/store/sqlite/SqliteIndexStore"
import { Effect, Fiber, FileSystem, Layer } from "effect"
import { TestClock } from "effect/testing"
import { warmGraphs } from "../src/LiveIndex.ts"

const WORDS = ["moon", "tide", "orbit", "comet", "saturn", "ring", "star", "probe", "dust", "light", "night", "sky"]

describe("a server's graphs", () => {
  it.effect("are read whole between requests once the snapshot has walked them, and not before", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-server-warm-" })
      const lines = Array.from({ length: 300 }, (_, id) => {
        const text = Array.from({ length: 12 }, (_, j) => WORDS[(id * 7 + j * ((id % 5) + 1)) % WORDS.length])
        return JSON.stringify({ doc_id: `d${id}`, title: `Note ${id}`, text: text.join(" ") })
      })
      yield* fs.writeFileString(`${dir}/docs.jsonl`, lines.join("\n"))
      const file = `${dir}/index.db`
      const on = Effect.provide(Layer.mergeAll(layerSqlite(file), Embedder.layerLocalSha256, DocumentSource.layer))
      yield* indexPaths([`${dir}/docs.jsonl`], { ann: { ...DEFAULT_ANN, codes: "i8" } }).pipe(on)
      yield* Effect.gen(function* () {
        const snapshot = yield* openSnapshot()
        const store = yield* IndexStore
        const warming = yield* Effect.forkChild(warmGraphs(store.location, snapshot))
        // No walk yet: it looks again each second, holding nothing.
        yield* TestClock.adjust("3 seconds")
        assert.isUndefined(warming.pollUnsafe())
        assert.isUndefined(snapshot.annWarm!(1))
        yield* querySnapshot(snapshot, store.location, "moon tide", 5, { mode: "vector", annCandidates: 4 })
        // At its next look it reads the rows the walk did not, and ends: every graph held whole.
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(warming)
        assert.isTrue(snapshot.annWarm!(1))
      }).pipe(Effect.scoped, on)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))
  )
})
