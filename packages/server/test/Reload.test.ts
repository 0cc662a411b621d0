/** Snapshot swaps when the index file changes, failed reloads, and a graceful shutdown. */

import { renameSync, statSync, writeFileSync } from "node:fs"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { querySnapshot } from "@funcpipe/pipeline/programs/QueryIndex"
import { layerSqlite } from "@funcpipe/pipeline/store/sqlite/SqliteIndexStore"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import { LiveIndex } from "../src/LiveIndex.ts"
import { layer } from "../src/Server.ts"
import { doc, fixtureIndex, send, serverOver, slowEmbedder, testOptions, writeDocs } from "./Fixture.ts"

const COMET = doc("comet", "Comets", "A comet has an icy nucleus and a long tail.")

const topDoc = (text: string) =>
  Effect.map(send("POST", "/v1/query", { text, top_k: 1 }), (r) => r.body.results[0]?.doc_id)

describe("reloading", () => {
  it.effect("swaps to a new state at once; a request in flight finishes on the old one, which then closes", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const live = yield* LiveIndex
        const entered = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        // A request that holds the current snapshot until the gate opens, then queries it.
        const inFlight = yield* Effect.forkChild(
          live.use((loaded) =>
            Effect.gen(function* () {
              yield* Deferred.succeed(entered, undefined)
              yield* Deferred.await(gate)
              return yield* querySnapshot(loaded.snapshot, live.location, "icy nucleus", 5)
            })
          )
        )
        yield* Deferred.await(entered)

        yield* writeDocs(file, [COMET]) // another connection commits, as another process would
        assert.strictEqual(yield* live.refresh, "swapped")
        assert.strictEqual(yield* live.refresh, "unchanged")
        assert.strictEqual(yield* topDoc("icy nucleus"), "comet", "new requests see the new state")
        assert.strictEqual((yield* send("GET", "/v1/status")).body.manifest.documents, 5)

        yield* Deferred.succeed(gate, undefined)
        const old = yield* Fiber.join(inFlight)
        assert.strictEqual(old.manifest.documents, 4, "the request in flight stayed on its snapshot")
        assert.isFalse(old.results.some((r) => r.chunk.docId === "comet"))
      }).pipe(Effect.provide(Layer.merge(serverOver(file), Embedder.layerLocalSha256)))
    })
  )

  it.effect("a failed reload keeps serving the old snapshot and says why on /v1/status", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const live = yield* LiveIndex
        // Another program puts a file that is not an index in its place.
        writeFileSync(`${file}.other`, "plain notes, not an index\n".repeat(100))
        renameSync(`${file}.other`, file)
        assert.strictEqual(yield* live.refresh, "failed")
        const status = yield* send("GET", "/v1/status")
        assert.strictEqual(status.body.ready, true)
        assert.match(status.body.reload_error.message, /is not a FuncPipe index/)
        assert.strictEqual(yield* topDoc("polaris"), "sky/polaris.md", "still answering from the old snapshot")
      }).pipe(Effect.provide(serverOver(file)))
    })
  )

  it.live("notices a commit by itself when polling", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        yield* writeDocs(file, [COMET])
        // Wait for the observable change (the poll runs every 20 ms); the test's timeout bounds the wait.
        let documents = 0
        while (documents !== 5) {
          documents = (yield* send("GET", "/v1/status")).body.manifest.documents
          yield* Effect.yieldNow
        }
        assert.strictEqual(yield* topDoc("icy nucleus"), "comet")
      }).pipe(Effect.provide(serverOver(file, { pollMillis: 20 })))
    })
  )
})

describe("shutting down", () => {
  it.effect("stops taking connections, lets the request in flight finish, then closes the index", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const entered = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      // The local model, but a query's embedding waits for the gate: a slow request, as long as the test wants.
      const slow = slowEmbedder(Effect.andThen(Deferred.succeed(entered, undefined), Deferred.await(gate)))
      const server = Layer.mergeAll(layer(testOptions()), FetchHttpClient.layer).pipe(
        Layer.provide(Layer.mergeAll(layerSqlite(file), slow, NodeServices.layer))
      )
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(server, scope)
      const live = Context.get(context, LiveIndex)
      const loaded = (yield* live.state).loaded!
      const request = yield* Effect.forkChild(
        send("POST", "/v1/query", { text: "saturn", mode: "vector", top_k: 1 }).pipe(Effect.provide(context))
      )
      yield* Deferred.await(entered)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      // Once closing has begun, new connections are refused.
      let refused = false
      while (!refused) {
        refused = Exit.isFailure(yield* Effect.exit(send("GET", "/healthz").pipe(Effect.provide(context))))
        yield* Effect.yieldNow
      }
      assert.isString(loaded.snapshot.chunkAt(0).docId, "the index is still open while the request runs")
      yield* Deferred.succeed(gate, undefined)
      const answer = yield* Fiber.join(request)
      assert.strictEqual(answer.status, 200)
      yield* Fiber.join(closing)
      // A document read goes to the file (chunk rows may be cached), so it shows the file is closed.
      assert.throws(
        () => loaded.snapshot.document("cassini"),
        /finalized|closed|not open/i,
        "the index is closed after the server"
      )
    })
  )

  it.effect("keeps the write-ahead log from growing with every index run while it serves", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const walSize = () => {
        try {
          return statSync(`${file}-wal`).size
        } catch {
          return 0
        }
      }
      // Each run rewrites many documents, so each leaves about the same amount in the log.
      const batch = (run: number) =>
        Array.from({ length: 200 }, (_, i) => doc(`d${i}`, `Doc ${i}`, `Run ${run}: note ${i} about moons and rings.`))
      const sizes: Array<number> = []
      yield* Effect.gen(function* () {
        const live = yield* LiveIndex
        for (let run = 0; run < 5; run++) {
          yield* writeDocs(file, batch(run))
          assert.strictEqual(yield* live.refresh, "swapped")
          yield* live.refresh // the old snapshot is closed by now: the log is folded in and the state opened again
          sizes.push(walSize())
        }
        assert.strictEqual(yield* live.use((loaded) => Effect.succeed(loaded.snapshot.manifest.documents)), 204)
      }).pipe(
        Effect.provide(
          LiveIndex.layer({ pollMillis: 0 }).pipe(
            Layer.provide(Layer.mergeAll(layerSqlite(file), Embedder.layerLocalSha256))
          )
        )
      )
      // The log is reused from its start by each run instead of growing by a run's worth each time.
      assert.isAbove(sizes[0]!, 0)
      assert.isAtMost(sizes.at(-1)!, sizes[0]! * 1.5, `log sizes after each run: ${sizes.join(", ")}`)
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
