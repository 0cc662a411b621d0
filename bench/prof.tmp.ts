import { NodeServices } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { Embedder } from "@funcpipe/pipeline/services/Embedder"
import { IndexStore } from "@funcpipe/pipeline/services/IndexStore"
import { layerPostgres } from "@funcpipe/pipeline/services/PgIndexStore"
const url = process.argv[2]!
for (let i = 0; i < 3; i++) {
  await Effect.runPromise(Effect.gen(function*() {
    const store = yield* IndexStore
    let t = performance.now()
    yield* store.version
    console.log("version (connect)", (performance.now() - t).toFixed(1))
    t = performance.now()
    const s = yield* store.snapshot
    console.log("snapshot", (performance.now() - t).toFixed(1), Option.getOrThrow(s).positions)
    t = performance.now()
    yield* store.snapshot
    console.log("snapshot cached", (performance.now() - t).toFixed(1))
  }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(layerPostgres(url), Embedder.layerLocalSha256, NodeServices.layer))))
}
