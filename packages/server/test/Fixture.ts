/** Test fixtures: a small index in a temporary folder, and a server over it on a free loopback port. */
import { NodeServices } from "@effect/platform-node"
import { ChunkerConfig, ChunkSize, DEFAULT_MAX_BODY_BYTES, Overlap } from "@funcpipe/domain/Config"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { embedText, LOCAL_SHA256, LOCAL_SHA256_DIMENSIONS } from "@funcpipe/pipeline/analysis/Embed"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { putDocuments } from "@funcpipe/pipeline/programs/DocumentWrites"
import { indexPaths } from "@funcpipe/pipeline/programs/IndexRun"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { layerSqlite } from "@funcpipe/pipeline/store/sqlite/SqliteIndexStore"
import { Effect, FileSystem, Layer, Redacted } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpServer } from "effect/http"
import { layer, type ServerOptions } from "../src/Server.ts"

export const doc = (docId: string, title: string, body: string) =>
  new RawDoc({ docId: DocId.make(docId), title, body, categories: null })

/** The documents of the fixture index. */
export const DOCS = [
  doc(
    "voyager-1",
    "Voyager 1",
    "Launched in 1977, Voyager 1 flew past Jupiter and Saturn and is now in interstellar space."
  ),
  doc(
    "sky/moon.md",
    "The Moon",
    "The Moon has no light of its own. What we see is sunlight bounced off grey dust and rock."
  ),
  doc(
    "sky/polaris.md",
    "Finding Polaris",
    "Follow the two end stars of the Big Dipper's bowl upward to find Polaris, the North Star."
  ),
  doc("cassini", "Cassini", "Cassini orbited Saturn for thirteen years and studied its rings and moons.")
]

/** Writes `docs` into the index at `file` (as another process would: through its own store). */
export const writeDocs = (file: string, docs: ReadonlyArray<RawDoc>) =>
  putDocuments(docs, "test").pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), Embedder.layerLocalSha256)))

/** A temporary folder's index file holding `DOCS`; the folder goes with the scope. */
export const fixtureIndex = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-server-" })
  const file = `${dir}/index.db`
  yield* writeDocs(file, DOCS)
  return file
}).pipe(Effect.provide(NodeServices.layer))

/**
 * A temporary folder's index of a few notes cut into chunks of 40 code points, so that a document has several; the
 * folder goes with the scope.
 */
export const shortChunkIndex = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-server-short-" })
  yield* fs.makeDirectory(`${dir}/notes`)
  yield* fs.writeFileString(
    `${dir}/notes/polaris.md`,
    "# Finding Polaris\n\n## From the *Big Dipper*\nFollow the two end stars of the Big Dipper's bowl upward to find Polaris, the North Star. " +
      "Polaris barely moves during the night, which makes it a guide to true north.\n"
  )
  yield* fs.writeFileString(
    `${dir}/notes/orion.md`,
    "# Orion\nThree bright stars in a row form the hunter's belt; Betelgeuse glows red at his shoulder.\n"
  )
  yield* fs.writeFileString(`${dir}/notes/bread.md`, "# Bread\nLet the dough rise slowly in a cool kitchen.\n")
  const file = `${dir}/index.db`
  const chunker = new ChunkerConfig({
    chunkSize: ChunkSize.make(40),
    overlap: Overlap.make(0),
    tailPolicy: "emit_short"
  })
  yield* indexPaths([`${dir}/notes`], { chunker }).pipe(
    Effect.provide(Layer.mergeAll(layerSqlite(file), Embedder.layerLocalSha256, DocumentSource.layer))
  )
  return file
}).pipe(Effect.provide(NodeServices.layer))

/** Server options for tests: loopback, a free port, no polling (tests refresh by hand), silent. */
export const testOptions = (overrides: Partial<ServerOptions> = {}): ServerOptions => ({
  host: "127.0.0.1",
  port: 0,
  token: undefined,
  writable: false,
  maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
  pollMillis: 0,
  report: () => Effect.void,
  ...overrides
})

/** The server over `file`, with the fetch client for callers. */
export const serverOver = (file: string, overrides: Partial<ServerOptions> = {}) =>
  Layer.mergeAll(layer(testOptions(overrides)), FetchHttpClient.layer).pipe(
    Layer.provide(Layer.mergeAll(layerSqlite(file), Embedder.layerLocalSha256, NodeServices.layer))
  )

export const TOKEN = Redacted.make("s3cret-token")

/** The server's base URL. */
export const baseUrl = HttpServer.HttpServer.useSync((server) => HttpServer.formatAddress(server.address))

/** Sends a request and returns its status and JSON body (or text, when it is not JSON). */
export const send = (
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  body?: unknown,
  headers: Record<string, string> = {}
) =>
  Effect.gen(function* () {
    const http = yield* HttpClient.HttpClient
    const url = `${yield* baseUrl}${path}`
    let request = HttpClientRequest.make(method)(url).pipe(HttpClientRequest.setHeaders(headers))
    if (typeof body === "string") request = HttpClientRequest.bodyText(request, body, "application/json")
    else if (body !== undefined) request = HttpClientRequest.bodyJsonUnsafe(request, body)
    const response = yield* http.execute(request)
    const text = yield* response.text
    // biome-ignore lint/suspicious/noExplicitAny: a response body, explored by each test's assertions
    let json: any
    try {
      json = JSON.parse(text)
    } catch {
      json = text
    }
    return { status: response.status, headers: response.headers, body: json }
  })

/**
 * The local model, but each embedding first runs `before` (say, waiting for a gate): a query as slow as a test wants.
 */
export const slowEmbedder = (before: Effect.Effect<void>) =>
  Layer.succeed(
    Embedder,
    Embedder.of({
      ...Embedder.localSha256,
      model: LOCAL_SHA256,
      dimensions: LOCAL_SHA256_DIMENSIONS,
      embedMany: (texts) => Effect.as(before, texts.map(embedText))
    })
  )
