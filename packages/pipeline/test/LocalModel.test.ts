/**
 * `local:<folder>` models without their runtime: pooling and batching (pure), the folder checks, and the errors a
 * user meets before any model runs. The runtime itself is exercised by `LocalModel.models.test.ts`.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { tinyModelFiles, writeTinyModel } from "@funcpipe/test-kit/LocalModelFixture"
import { ConfigProvider, Effect, FileSystem, Layer, Path, Result } from "effect"
import { inspectFolder, localFingerprint } from "../src/models/local/LocalModel.ts"
import { lengthBatches, poolingOf, poolVectors } from "../src/models/local/Pooling.ts"
import { INSTALL_RUNTIME_COMMAND, importRuntime, installRuntime } from "../src/models/local/Transformers.ts"
import { Models } from "../src/models/Models.ts"

const half = 1 / Math.sqrt(2)

describe("poolVectors", () => {
  // Two texts of three token slots, two dimensions; the second text's last slot is padding.
  const hidden = [1, 2, 3, 4, 5, 6, /* text 2 */ 2, 0, 0, 2, 100, 100]
  const mask = [1n, 1n, 1n, 1, 1, 0]

  it("averages the real tokens' vectors, leaves padding out, and scales to length 1", () => {
    const [a, b] = poolVectors(hidden, [2, 3, 2], mask, "mean")
    const mean = [3, 4]
    assert.deepStrictEqual(
      Array.from(a!),
      mean.map((x) => x / 5)
    )
    assert.deepStrictEqual(Array.from(b!), [half, half])
  })

  it("takes the first token's vector for cls pooling", () => {
    const [a, b] = poolVectors(hidden, [2, 3, 2], mask, "cls")
    const length = Math.hypot(1, 2)
    assert.deepStrictEqual(Array.from(a!), [1 / length, 2 / length])
    assert.deepStrictEqual(Array.from(b!), [1, 0])
  })

  it("gives zeros for a text without real tokens or whose mean is zero", () => {
    const [none, zero] = poolVectors([1, 1, 1, -1], [2, 1, 2], [0, 1], "mean")
    assert.deepStrictEqual(Array.from(none!), [0, 0])
    assert.deepStrictEqual(Array.from(poolVectors([1, -1, -1, 1], [1, 2, 2], [1, 1], "mean")[0]!), [0, 0])
    assert.deepStrictEqual(Array.from(zero!), [half, -half])
  })
})

describe("lengthBatches", () => {
  it("groups the longest texts first, within the text and character bounds, each position once", () => {
    const texts = ["aa", "a", "aaaaaa", "aaa", "aaaa", ""]
    assert.deepStrictEqual(lengthBatches(texts, 2, 100), [
      [2, 4],
      [3, 0],
      [1, 5]
    ])
    assert.deepStrictEqual(lengthBatches(texts, 10, 7), [[2], [4, 3], [0, 1, 5]])
  })

  it("puts a text longer than the character bound in a batch of its own", () => {
    assert.deepStrictEqual(lengthBatches(["x".repeat(50), "y"], 8, 10), [[0], [1]])
  })
})

describe("poolingOf", () => {
  it("reads sentence-transformers' pooling file: mean or cls, nothing else", () => {
    assert.deepStrictEqual(
      poolingOf({ word_embedding_dimension: 384, pooling_mode_mean_tokens: true }),
      Result.succeed("mean")
    )
    assert.deepStrictEqual(
      poolingOf({ pooling_mode_cls_token: true, pooling_mode_mean_tokens: false }),
      Result.succeed("cls")
    )
    assert.deepStrictEqual(
      poolingOf({ pooling_mode_max_tokens: true }),
      Result.fail("it asks for max_tokens pooling; FuncPipe pools by mean_tokens or cls_token")
    )
    assert.isTrue(Result.isFailure(poolingOf([])))
    assert.isTrue(Result.isFailure(poolingOf({})))
  })
})

/** The `Models` catalogue with `$FUNCPIPE_MODELS` an empty folder, so the runtime is not installed there. */
const withoutRuntime = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const models = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-no-runtime-" })
    return yield* effect.pipe(
      Effect.provide(Models.layer.pipe(Layer.provide(NodeHttpClient.layerNodeHttp))),
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ FUNCPIPE_MODELS: models })))
    )
  })

/** Why the catalogue cannot give `local:<given>`: the failure's tag and message. */
const refusal = (given: string) =>
  withoutRuntime(Effect.flip(Effect.flatMap(Models, (models) => models.embedder(`local:${given}`)))).pipe(
    Effect.map((error) => ({ tag: error._tag, message: error.message }))
  )

describe("local: models before their runtime", () => {
  it.effect("a missing folder, a file, and a folder without a model are refused with what is missing", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const root = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-local-" })
      const layout = "a Hugging Face model folder with tokenizer.json, config.json and onnx/model.onnx (or model.onnx)"
      const missing = path.join(root, "nothing")
      assert.deepStrictEqual(yield* refusal(missing), {
        tag: "ModelUnavailable",
        message: `the embedding model local:${missing} cannot be used: there is no folder ${missing}`
      })
      const file = path.join(root, "file.onnx")
      yield* fs.writeFileString(file, "")
      assert.strictEqual(
        (yield* refusal(file)).message,
        `the embedding model local:${file} cannot be used: ${file} is not a folder; give ${layout}`
      )
      const empty = path.join(root, "empty")
      yield* fs.makeDirectory(empty)
      assert.strictEqual(
        (yield* refusal(empty)).message,
        `the embedding model local:${empty} cannot be used: ${empty} has no tokenizer.json; give ${layout}`
      )
      const noModel = path.join(root, "no-model")
      yield* writeTinyModel(noModel)
      yield* fs.remove(path.join(noModel, "onnx"), { recursive: true })
      assert.strictEqual(
        (yield* refusal(noModel)).message,
        `the embedding model local:${noModel} cannot be used: ${noModel} has no onnx/model.onnx or model.onnx; ` +
          "export the model to ONNX first (Hugging Face's Optimum: optimum-cli export onnx --model NAME FOLDER)"
      )
      assert.match((yield* refusal("")).message, /name the model's folder after "local:", e\.g\. local:\/models\//)
      assert.match((yield* refusal(path.join(root, "my model"))).message, /may hold only letters, digits/)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a model folder without the runtime names the command that installs it", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const folder = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-local-" })
      yield* writeTinyModel(folder)
      const { tag, message } = yield* refusal(folder)
      assert.strictEqual(tag, "ModelUnavailable")
      assert.match(
        message,
        new RegExp(`^the embedding model local:${folder} cannot be used: the runtime for local: models`)
      )
      assert.isTrue(message.endsWith(`install it once with: ${INSTALL_RUNTIME_COMMAND}`), message)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a relative folder is named by its absolute path, and its pooling file is read", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const folder = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-local-" })
      yield* writeTinyModel(folder)
      yield* fs.makeDirectory(path.join(folder, "1_Pooling"))
      yield* fs.writeFileString(
        path.join(folder, "1_Pooling", "config.json"),
        JSON.stringify({ pooling_mode_cls_token: true })
      )
      const relative = path.relative(process.cwd(), folder)
      const { name, folder: model } = yield* inspectFolder(relative)
      assert.strictEqual(name, `local:${folder}`)
      assert.strictEqual(model.pooling, "cls")
      assert.strictEqual(model.subfolder, "onnx")
      assert.deepStrictEqual(model.files, [
        "config.json",
        "tokenizer.json",
        "onnx/model.onnx",
        "tokenizer_config.json",
        "1_Pooling/config.json"
      ])
      yield* fs.writeFileString(
        path.join(folder, "1_Pooling", "config.json"),
        JSON.stringify({ pooling_mode_max_tokens: true })
      )
      const error = yield* Effect.flip(inspectFolder(folder))
      assert.match(error.message, /1_Pooling\/config.json cannot be used: it asks for max_tokens pooling/)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it("fingerprints differ when a file's digest, the pooling or the runtime differ", () => {
    const model = { folder: "/m", subfolder: "onnx", files: ["onnx/model.onnx"], pooling: "mean" as const }
    const name = "local:/m" as Parameters<typeof localFingerprint>[0]
    const base = localFingerprint(name, 8, model, "4.3.2", { "onnx/model.onnx": "aa" })
    assert.strictEqual(localFingerprint(name, 8, model, "4.3.2", { "onnx/model.onnx": "aa" }), base)
    assert.notStrictEqual(localFingerprint(name, 8, model, "4.3.2", { "onnx/model.onnx": "ab" }), base)
    assert.notStrictEqual(
      localFingerprint(name, 8, { ...model, pooling: "cls" }, "4.3.2", { "onnx/model.onnx": "aa" }),
      base
    )
    assert.notStrictEqual(localFingerprint(name, 8, model, "4.4.0", { "onnx/model.onnx": "aa" }), base)
  })

  it.effect("a runtime of another version, or without its files, is refused with the install command", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const folder = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-runtime-" })
      const missing = yield* Effect.flip(importRuntime(folder))
      assert.strictEqual(missing._tag, "RuntimeNotInstalled")
      const packageFolder = path.join(folder, "node_modules", "@huggingface", "transformers")
      yield* fs.makeDirectory(packageFolder, { recursive: true })
      yield* fs.writeFileString(path.join(packageFolder, "package.json"), JSON.stringify({ version: "3.0.0" }))
      const old = yield* Effect.flip(importRuntime(folder))
      assert.strictEqual(
        old.message,
        `the runtime for local: models in ${folder} cannot be loaded (it is version 3.0.0; this FuncPipe runs on ` +
          `4.3.2); install it again with: ${INSTALL_RUNTIME_COMMAND}`
      )
      yield* fs.writeFileString(
        path.join(packageFolder, "package.json"),
        JSON.stringify({ version: "4.3.2", exports: { node: { import: { default: "./dist/missing.mjs" } } } })
      )
      const broken = yield* Effect.flip(importRuntime(folder))
      assert.strictEqual(broken._tag, "RuntimeUnusable")
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it("the fixture's ONNX file is a few hundred bytes", () => {
    const onnx = tinyModelFiles()["onnx/model.onnx"] as Uint8Array
    assert.isBelow(onnx.length, 4096)
  })

  it.effect("a failed install says what npm said and leaves the models folder as it was", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const models = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-install-" })
      const cache = path.join(models, "npm-cache")
      // npm offline with an empty cache fails at once, as it would without a registry.
      const error = yield* Effect.flip(installRuntime({ npmFlags: ["--offline", "--cache", cache] })).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ FUNCPIPE_MODELS: models })))
      )
      assert.strictEqual(error._tag, "RuntimeInstallFailed")
      assert.match(
        error.message,
        /^cannot install the runtime for local: models: npm install @huggingface\/transformers@4\.3\.2 failed \(exit code 1\): .*ENOTCACHED/
      )
      assert.deepStrictEqual(
        (yield* fs.readDirectory(models)).filter((name) => name !== "npm-cache"),
        []
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
