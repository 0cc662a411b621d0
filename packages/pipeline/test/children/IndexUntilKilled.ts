/**
 * A real indexing process for the crash test: indexes a corpus into an index (a file, or a postgres:// URL) with the
 * production layers, but its embedder stops after `stopAfter` batches, prints "mid-run" and waits to be killed, inside
 * the write transaction.
 * Usage: node IndexUntilKilled.ts <index-file-or-url> <corpus-path> <stop-after-batches>
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { Console, Effect, Layer } from "effect"
import { Embedder } from "../../src/models/Embedder.ts"
import { layerIndexStore } from "../../src/programs/IndexLocation.ts"
import { indexPaths } from "../../src/programs/IndexRun.ts"
import { DocumentSource } from "../../src/read/DocumentSource.ts"

const [indexFile, corpus, stopAfter] = process.argv.slice(2) as [string, string, string]

let batches = 0
const StallingEmbedder = Layer.effect(
  Embedder,
  Effect.gen(function* () {
    const local = yield* Embedder
    return Embedder.of({
      ...local,
      embedMany: (texts) =>
        ++batches > Number(stopAfter)
          ? Console.log("mid-run").pipe(Effect.andThen(Effect.never))
          : local.embedMany(texts)
    })
  })
).pipe(Layer.provide(Embedder.layerLocalSha256))

const chunker = new ChunkerConfig({
  chunkSize: ChunkSize.make(480),
  overlap: Overlap.make(0),
  tailPolicy: "emit_short"
})

indexPaths([corpus], { chunker }).pipe(
  Effect.provide(Layer.mergeAll(layerIndexStore(indexFile), DocumentSource.layer, StallingEmbedder)),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
