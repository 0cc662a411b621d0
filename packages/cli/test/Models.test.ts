/** `funcpipe models`: installing refuses an archive that is not the published one; `list` says what is installed. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, FileSystem, Layer, Path } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { gzipSync } from "node:zlib"
import { DocumentSource } from "@funcpipe/pipeline/services/DocumentSource"
import { Models } from "@funcpipe/pipeline/services/Models"
import { cli, version } from "../src/Cli.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(
  Layer.provideMerge(NodeServices.layer)
)
const run = Command.runWith(cli, { version })

/** Runs `effect` with a fresh, empty models folder as `$FUNCPIPE_MODELS`. */
const withModels = <A, E, R>(effect: (folder: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const folder = yield* fs.makeTempDirectoryScoped()
    return yield* effect(folder).pipe(
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ FUNCPIPE_MODELS: folder })))
    )
  })

describe("funcpipe models", () => {
  it.effect("list shows glove-100d as not installed, with the command that installs it", () =>
    withModels(() =>
      Effect.gen(function*() {
        yield* run(["models", "list"])
        const lines = (yield* TestConsole.logLines).map(String)
        assert.deepStrictEqual(lines, [
          "local-sha256  built in, needs no files",
          "glove-100d  not installed (install with: funcpipe models install glove-100d)"
        ])
      })
    ).pipe(Effect.provide(TestLayer)))

  it.effect("install --from refuses a tarball that is not the published package and installs nothing", () =>
    withModels((folder) =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const file = path.join(folder, "copy.tgz")
        yield* fs.writeFile(file, new Uint8Array(gzipSync("not the vectors")))
        const error = yield* Effect.flip(run(["models", "install", "glove-100d", "--from", file]))
        assert.strictEqual(error._tag, "IntegrityMismatch")
        assert.deepStrictEqual(yield* fs.readDirectory(folder), ["copy.tgz"])
        assert.deepStrictEqual((yield* TestConsole.errorLines).map(String), [
          "glove-100d: checking its SHA-512 against the registry's"
        ])
      })
    ).pipe(Effect.provide(TestLayer)))

  it.effect("install knows only models that have files to install", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(run(["models", "install", "local-sha256"]))
      assert.strictEqual(error._tag, "ShowHelp")
    }).pipe(Effect.provide(TestLayer)))
})
