/** Installing and loading the `glove-100d` vectors, on tiny synthetic packages (no network, no real vectors). */

import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, FileSystem, Layer, Path } from "effect"
import { FetchHttpClient } from "effect/http"
import { Embedder } from "../src/models/Embedder.ts"
import { COMMON_COMPONENTS, GLOVE_100D } from "../src/models/glove/Glove.ts"
import {
  GLOVE_FILE,
  gloveFingerprint,
  INSTALL_COMMAND,
  installGlove,
  loadGlove,
  modelsFolder,
  readGlove,
  type VectorSource
} from "../src/models/glove/GloveFiles.ts"
import { Models } from "../src/models/Models.ts"
import { searchPaths } from "../src/programs/Search.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { packageOf, sourceOf, toyVectors, winkJson } from "./GloveFixture.ts"

const TestLayer = Layer.mergeAll(NodeServices.layer, FetchHttpClient.layer)
const tarball = packageOf(winkJson(toyVectors()))
const source = sourceOf(tarball)

/** A fresh models folder, set as `$FUNCPIPE_MODELS` for `effect`. */
const withModels = <A, E, R>(effect: (folder: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const folder = yield* fs.makeTempDirectoryScoped()
    return yield* effect(folder).pipe(
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ FUNCPIPE_MODELS: folder })))
    )
  })

/** Writes the fixture tarball to a file in `folder`, for `from` installs. */
const tarballFile = Effect.fn("tarballFile")(function* (folder: string, bytes: Uint8Array = tarball) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const file = path.join(folder, "..", `${path.basename(folder)}-vectors.tgz`)
  yield* fs.writeFile(file, bytes)
  yield* Effect.addFinalizer(() => fs.remove(file, { force: true }).pipe(Effect.ignore))
  return file
})

/** A loopback HTTP server answering every request with `status` and `body`; its URL. Closed with the test. */
const listen = (status: number, body: Uint8Array) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.callback<ReturnType<typeof createServer>>((resume) => {
        const server = createServer((_, response) => {
          response.writeHead(status, { "content-type": "application/gzip" })
          response.end(body)
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
    ),
    (server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/vectors.tgz`
  )

const cos = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => a.reduce((s, x, i) => s + x * b[i]!, 0)

describe("installGlove and loadGlove", () => {
  it.effect("installs from a tarball, and the embedder it loads finds meaning", () =>
    withModels((folder) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const installed = yield* installGlove({ source, from: yield* tarballFile(folder) })
        assert.strictEqual(installed.words, 15)
        assert.strictEqual(installed.file.endsWith(GLOVE_FILE), true)
        assert.deepStrictEqual(yield* fs.readDirectory(folder), [GLOVE_FILE])
        const embedder = yield* loadGlove(source)
        assert.strictEqual(embedder.model, GLOVE_100D)
        assert.strictEqual(embedder.dimensions, 100)
        assert.strictEqual(embedder.fingerprint, gloveFingerprint(source))
        const [query, car, fruit] = yield* embedder.embedMany([
          "automobile",
          "The vehicle and its engine",
          "ripe banana"
        ])
        assert.isTrue(cos(query!.vector, car!.vector) > cos(query!.vector, fruit!.vector) + 0.5)
      })
    ).pipe(Effect.provide(TestLayer))
  )

  it.effect("refuses a tarball that is not the published one and installs nothing", () =>
    withModels((folder) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const other: VectorSource = { ...source, integrity: sourceOf(new Uint8Array([1, 2, 3])).integrity }
        const error = yield* Effect.flip(installGlove({ source: other, from: yield* tarballFile(folder) }))
        assert.strictEqual(error._tag, "IntegrityMismatch")
        assert.match(error.message, /is not the published archive .* nothing was installed/)
        assert.deepStrictEqual(yield* fs.readDirectory(folder), [])
      })
    ).pipe(Effect.provide(TestLayer))
  )

  it.effect("says what is wrong with an archive that is not a vector package", () =>
    withModels((folder) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const notGzip = new TextEncoder().encode("just some text")
        const first = yield* Effect.flip(
          installGlove({ source: sourceOf(notGzip), from: yield* tarballFile(folder, notGzip) })
        )
        assert.strictEqual(first._tag, "ArchiveInvalid")
        const noVectors = packageOf("[1, 2, 3]")
        const second = yield* Effect.flip(
          installGlove({ source: sourceOf(noVectors), from: yield* tarballFile(folder, noVectors) })
        )
        assert.strictEqual(second._tag, "VectorsInvalid")
        assert.deepStrictEqual(yield* fs.readDirectory(folder), [])
      })
    ).pipe(Effect.provide(TestLayer))
  )

  it.effect("downloads the tarball over HTTP, checks it and removes the download", () =>
    withModels((folder) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const url = yield* listen(200, tarball)
        const installed = yield* installGlove({ source: { ...source, url } })
        assert.strictEqual(installed.words, 15)
        assert.deepStrictEqual(yield* fs.readDirectory(folder), [GLOVE_FILE])
        const missing = yield* Effect.flip(
          installGlove({ source: { ...source, url: yield* listen(404, new Uint8Array()) } })
        )
        assert.strictEqual(missing._tag, "DownloadFailed")
        assert.deepStrictEqual(yield* fs.readDirectory(folder), [GLOVE_FILE])
      })
    ).pipe(Effect.provide(TestLayer))
  )
})

describe("missing and damaged vectors", () => {
  it.effect("without a cache the model is unavailable, and the reason names the install command", () =>
    withModels(() =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(loadGlove(source))
        assert.strictEqual(error._tag, "GloveNotInstalled")
        assert.strictEqual((yield* Effect.flip(readGlove(source)))._tag, "GloveNotInstalled")
        const models = yield* Models
        const unavailable = yield* Effect.flip(models.embedder(GLOVE_100D))
        assert.strictEqual(unavailable._tag, "ModelUnavailable")
        assert.include(unavailable.message, INSTALL_COMMAND)
        // Other models never touch the vectors.
        assert.strictEqual((yield* models.embedder("local-sha256")).model, "local-sha256")
      }).pipe(Effect.provide(Models.layer))
    ).pipe(Effect.provide(TestLayer))
  )

  it.effect("a damaged or foreign cache is refused with the install command", () =>
    withModels((folder) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        yield* installGlove({ source, from: yield* tarballFile(folder) })
        const file = path.join(folder, GLOVE_FILE)
        const good = yield* fs.readFile(file)
        yield* fs.writeFile(file, good.subarray(0, good.length - 100))
        const truncated = yield* Effect.flip(readGlove(source))
        assert.strictEqual(truncated._tag, "GloveCacheUnusable")
        assert.match(truncated.message, /truncated.*install them again with: funcpipe models install glove-100d/)
        // The embedder reads the cache when it first embeds, and fails there with the same reason.
        const embedder = yield* loadGlove(source)
        const failed = yield* Effect.flip(embedder.embedMany(["car"]))
        assert.strictEqual(failed._tag, "EmbedFailure")
        assert.match(failed.message, /truncated.*install them again with: funcpipe models install glove-100d/)
        yield* fs.writeFile(file, good)
        const foreign = yield* Effect.flip(readGlove({ ...source, name: "other-vectors@2.0.0" }))
        assert.match(foreign.message, /another FuncPipe version/)
      })
    ).pipe(Effect.provide(TestLayer))
  )

  it.effect("a vector damaged inside the cache fails the embedding that uses it, not a later query", () =>
    withModels((folder) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        yield* installGlove({ source, from: yield* tarballFile(folder) })
        const file = path.join(folder, GLOVE_FILE)
        const bytes = new Uint8Array(yield* fs.readFile(file))
        const view = new DataView(bytes.buffer)
        const recipeBytes = view.getUint32(24, true)
        const vectorsAt = 32 + Math.ceil(recipeBytes / 8) * 8 + (1 + COMMON_COMPONENTS) * 100 * 8
        // Row 6 is "automobile": its first component (half precision) becomes NaN.
        view.setUint16(vectorsAt + 6 * 100 * 2, 0x7e00, true)
        yield* fs.writeFile(file, bytes)
        const embedder = yield* loadGlove(source)
        assert.strictEqual((yield* embedder.embedMany(["ripe banana"])).length, 1)
        const error = yield* Effect.flip(embedder.embedMany(["an automobile"]))
        assert.strictEqual(error._tag, "EmbedFailure")
        assert.include(error.message, INSTALL_COMMAND)
      })
    ).pipe(Effect.provide(TestLayer))
  )
})

describe("retrieval with glove-100d", () => {
  it.effect("finds by meaning; a query with no word the model knows is answered lexically, with a note saying so", () =>
    withModels((folder) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        yield* installGlove({ source, from: yield* tarballFile(folder) })
        const docs = yield* fs.makeTempDirectoryScoped()
        yield* fs.writeFileString(path.join(docs, "cars.md"), "The vehicle and its engine, 1 of 2")
        yield* fs.writeFileString(path.join(docs, "fruit.md"), "A ripe banana from the orchard, 2 of 2")
        const answer = (query: string, mode: "vector" | "lexical" | "hybrid") =>
          searchPaths([docs], query, 2, { mode }).pipe(Effect.provide(Layer.effect(Embedder, loadGlove(source))))
        const search = (query: string, mode: "vector" | "lexical" | "hybrid") =>
          Effect.map(answer(query, mode), (a) => a.results.map((r) => r.chunk.docId))
        assert.deepStrictEqual(yield* search("automobile", "vector"), ["cars.md", "fruit.md"])
        const lexical = yield* answer("1 2", "lexical")
        for (const mode of ["vector", "hybrid"] as const) {
          const zero = yield* answer("1 2", mode)
          assert.strictEqual(zero.query.mode, "lexical", mode)
          assert.match(zero.query.note ?? "", /finds nothing in this query it can place .* answered in lexical mode/)
          assert.deepStrictEqual(zero.results, lexical.results)
        }
        assert.isUndefined(lexical.query.note)
      })
    ).pipe(Effect.provide(DocumentSource.layer.pipe(Layer.provideMerge(TestLayer))))
  )
})

describe("modelsFolder", () => {
  const folderWith = (env: Record<string, string>) =>
    modelsFolder().pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))))

  it.effect("is $FUNCPIPE_MODELS, else under $XDG_CACHE_HOME, else under ~/.cache", () =>
    Effect.gen(function* () {
      assert.strictEqual(yield* folderWith({ FUNCPIPE_MODELS: "/m", HOME: "/h" }), "/m")
      assert.strictEqual(yield* folderWith({ XDG_CACHE_HOME: "/c", HOME: "/h" }), "/c/funcpipe/models")
      assert.strictEqual(yield* folderWith({ HOME: "/h" }), "/h/.cache/funcpipe/models")
    }).pipe(Effect.provide(TestLayer))
  )
})
