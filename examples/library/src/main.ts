/** A program of its own built on FuncPipe's packages: a few notes indexed into a temporary index, then one query. */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { RawDoc } from "@funcpipe/domain"
import { chunkDoc, cleanDoc, Embedder, layerSqlite, layerWorkers, putDocuments, queryIndex } from "@funcpipe/pipeline"
import { Console, Effect, FileSystem, Layer, Path, Schema } from "effect"
import { notes } from "./notes.ts"

const question = "How far away is the Moon?"

/** Indexes the notes and prints the three best chunks for `question`. */
const main = Effect.gen(function* () {
  const docs = yield* Schema.decodeUnknownEffect(Schema.Array(RawDoc))(notes)

  // The pure stages are plain functions: here, how each note is cleaned and cut into chunks.
  for (const doc of docs) {
    const chunks = chunkDoc(cleanDoc(doc))
    yield* Console.log(`${doc.docId}: ${chunks.length} chunk(s), the first: ${JSON.stringify(chunks[0]?.text)}`)
  }

  // The services: an index in a temporary folder (removed at the end), the offline local-sha256 model, and the
  // per-document stage on a worker thread that runs the pipeline's own PrepareWorker module.
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const folder = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-example-" })
  const services = Layer.mergeAll(
    layerSqlite(path.join(folder, "index.db")),
    Embedder.layerLocalSha256,
    layerWorkers(new URL(import.meta.resolve("@funcpipe/pipeline/worker")), 1)
  )

  // The programs: the same ones the funcpipe command runs.
  const answer = yield* Effect.gen(function* () {
    const put = yield* putDocuments(docs, "notes")
    yield* Console.log(`indexed ${put.documents} documents as ${put.chunks} chunks`)
    return yield* queryIndex(question, 3)
  }).pipe(Effect.provide(services))

  yield* Console.log(`${question} (${answer.query.mode})`)
  for (const result of answer.results) {
    const title = answer.titles.get(result.chunk.docId) ?? ""
    yield* Console.log(
      `${result.rank}. ${result.score.toFixed(4)}  ${result.chunk.docId} "${title}"  ${result.chunk.text}`
    )
  }
})

main.pipe(Effect.scoped, Effect.provide(NodeServices.layer), NodeRuntime.runMain)
