/** `funcpipe models`: installing refuses an archive that is not the published one; `list` says what is installed. */

import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { ConfigProvider, Effect, Exit, FileSystem, Layer, Path } from "effect"
import { CliOutput, Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, version } from "../src/Cli.ts"
import { presenter, reportFailure } from "../src/output/Report.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })

/** Runs `effect` with a fresh, empty models folder as `$FUNCPIPE_MODELS`. */
const withModels = <A, E, R>(effect: (folder: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const folder = yield* fs.makeTempDirectoryScoped()
    return yield* effect(folder).pipe(
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ FUNCPIPE_MODELS: folder })))
    )
  })

describe("funcpipe models", () => {
  it.effect("list shows glove-100d as not installed, with the command that installs it", () =>
    withModels(() =>
      Effect.gen(function* () {
        yield* run(["models", "list"])
        const lines = (yield* TestConsole.logLines).map(String)
        assert.deepStrictEqual(lines, [
          "local-sha256  built in, needs no files",
          "glove-100d  not installed (install with: funcpipe models install glove-100d)",
          "local:<folder>  runtime not installed (install with: funcpipe models install transformers)"
        ])
      })
    ).pipe(Effect.provide(TestLayer))
  )

  it.effect("install --from refuses a tarball that is not the published package and installs nothing", () =>
    withModels((folder) =>
      Effect.gen(function* () {
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
    ).pipe(Effect.provide(TestLayer))
  )

  it.effect("install knows only models that have files to install", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(run(["models", "install", "local-sha256"]))
      assert.strictEqual(error._tag, "ShowHelp")
    }).pipe(Effect.provide(TestLayer))
  )
})

/** Every model, as the CLI has them, with `$FUNCPIPE_MODELS` an empty folder: no runtime, no vectors. */
const AllModels = Layer.mergeAll(
  DocumentSource.layer,
  Models.layer.pipe(Layer.provide(NodeHttpClient.layerNodeHttp)),
  CliOutput.layerPresenter(presenter)
).pipe(Layer.provideMerge(NodeServices.layer))
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/** Runs a command that must fail and returns what it left on stderr, as the entry point prints it. */
const failureLines = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(run(args))
    assert.isTrue(Exit.isFailure(exit), `${args.join(" ")} should fail`)
    if (Exit.isFailure(exit)) yield* reportFailure(exit.cause)
    return (yield* TestConsole.errorLines).map(String)
  })

describe("local: models at the command line", () => {
  it.effect("a missing folder, a folder without a model and a missing runtime are one line each", () =>
    withModels((models) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const root = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-local-cli-" })
        const index = path.join(root, "index.db")
        const missing = path.join(root, "missing")
        assert.deepStrictEqual(
          yield* failureLines(["index", sample, "--model", `local:${missing}`, "--index", index]),
          [`funcpipe: the embedding model local:${missing} cannot be used: there is no folder ${missing}`]
        )
        const folder = path.join(root, "model")
        yield* fs.makeDirectory(folder)
        yield* fs.writeFileString(path.join(folder, "tokenizer.json"), "{}")
        yield* fs.writeFileString(path.join(folder, "config.json"), "{}")
        const noModel = yield* failureLines(["index", sample, "--model", `local:${folder}`, "--index", index])
        assert.deepStrictEqual(noModel.slice(1), [
          `funcpipe: the embedding model local:${folder} cannot be used: ${folder} has no onnx/model.onnx or ` +
            "model.onnx; export the model to ONNX first (Hugging Face's Optimum: optimum-cli export onnx --model NAME " +
            "FOLDER)"
        ])
        yield* fs.makeDirectory(path.join(folder, "onnx"))
        yield* fs.writeFile(path.join(folder, "onnx", "model.onnx"), new Uint8Array(8))
        const noRuntime = yield* failureLines(["index", sample, "--model", `local:${folder}`, "--index", index])
        assert.deepStrictEqual(noRuntime.slice(2), [
          `funcpipe: the embedding model local:${folder} cannot be used: the runtime for local: models ` +
            `(transformers.js with ONNX Runtime) is not installed in ${path.join(models, "transformers")}; install it ` +
            "once with: funcpipe models install transformers"
        ])
        assert.isFalse(yield* fs.exists(index))
      })
    ).pipe(Effect.provide(AllModels))
  )
})
