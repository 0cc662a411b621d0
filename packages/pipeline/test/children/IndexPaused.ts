/**
 * A real indexing process that pauses inside its write transaction: after `pauseAfter` batches its embedder prints
 * "paused" and waits for a line on stdin; then the run goes on, commits and prints "done".
 * Usage: node IndexPaused.ts <index-file> <corpus-path> <chunk-size> <rebuild: 0|1> <pause-after-batches>
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { Console, Effect, Layer } from "effect"
import { Embedder } from "../../src/models/Embedder.ts"
import { indexPaths } from "../../src/programs/IndexRun.ts"
import { DocumentSource } from "../../src/read/DocumentSource.ts"
import { layerSqlite } from "../../src/store/sqlite/SqliteIndexStore.ts"

const [indexFile, corpus, chunkSize, rebuild, pauseAfter] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string
]

/** Resolves at the first line on stdin. */
const told = Effect.callback<void>((resume) => {
  process.stdin.once("data", () => {
    process.stdin.destroy()
    resume(Effect.void)
  })
})

let batches = 0
const PausingEmbedder = Layer.effect(
  Embedder,
  Effect.gen(function* () {
    const local = yield* Embedder
    return Embedder.of({
      ...local,
      embedMany: (texts) =>
        ++batches === Number(pauseAfter)
          ? Console.log("paused").pipe(Effect.andThen(told), Effect.andThen(local.embedMany(texts)))
          : local.embedMany(texts)
    })
  })
).pipe(Layer.provide(Embedder.layerLocalSha256))

const chunker = new ChunkerConfig({
  chunkSize: ChunkSize.make(Number(chunkSize)),
  overlap: Overlap.make(0),
  tailPolicy: "emit_short"
})

indexPaths([corpus], { chunker, rebuild: rebuild === "1" }).pipe(
  Effect.andThen(Console.log("done")),
  Effect.provide(Layer.mergeAll(layerSqlite(indexFile), DocumentSource.layer, PausingEmbedder)),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
