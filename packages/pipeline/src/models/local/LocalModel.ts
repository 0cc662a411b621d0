/**
 * The `local:<folder>` embedding models: a Hugging Face model folder (tokenizer.json, config.json, an ONNX export of
 * the model) run in this process by transformers.js, read from the folder only.
 */

import { createHash } from "node:crypto"
import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { Effect, FileSystem, Path, Result, Schema, Stream } from "effect"
import { systemReason } from "../../platform/SystemReason.ts"
import { Embedder, fingerprintOf } from "../Embedder.ts"
import { EmbedFailure, ModelUnavailable } from "../ModelErrors.ts"
import type { Provider } from "../Provider.ts"
import { DEFAULT_POOLING, LOCAL_PREFIX, lengthBatches, type Pooling, poolingOf, poolVectors } from "./Pooling.ts"
import { loadRuntime, type ModelLike, type TokenizerLike, type TransformersRuntime } from "./Transformers.ts"

/** The text embedded once when a model is loaded, to learn its vector length. */
export const PROBE_TEXT = "FuncPipe dimension probe"

/** What a model folder holds, as FuncPipe found it. */
export interface ModelFolder {
  /** The folder's absolute path. */
  readonly folder: string
  /** The folder holding `model.onnx`, relative to `folder`: `onnx` or `` (the folder itself). */
  readonly subfolder: string
  /** The files whose bytes decide the vectors, relative to `folder`, in a fixed order. */
  readonly files: ReadonlyArray<string>
  readonly pooling: Pooling
}

/** What a model folder must hold, for messages. */
const LAYOUT = "a Hugging Face model folder with tokenizer.json, config.json and onnx/model.onnx (or model.onnx)"

const decodeLabel = Schema.decodeUnknownResult(ModelLabel)

/**
 * Checks that `given` (what follows `local:`) is a model folder, before anything is loaded: the folder, its
 * tokenizer, configuration and ONNX model, and its pooling (`1_Pooling/config.json`, as sentence-transformers writes
 * it; mean pooling without one). Fails with `ModelUnavailable` saying what is missing.
 */
export const inspectFolder = Effect.fn("LocalModel.inspectFolder")(function* (given: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const unavailable = (model: string, reason: string) => new ModelUnavailable({ model, reason })
  if (given.trim() === "") {
    return yield* unavailable(
      LOCAL_PREFIX,
      `name the model's folder after "${LOCAL_PREFIX}", e.g. ${LOCAL_PREFIX}/models/all-MiniLM-L6-v2 (${LAYOUT})`
    )
  }
  const folder = path.resolve(given)
  const label = decodeLabel(`${LOCAL_PREFIX}${folder}`)
  if (Result.isFailure(label)) {
    return yield* unavailable(
      `${LOCAL_PREFIX}${given}`,
      `the index stores the folder's path in the model's name, which may hold only letters, digits and . _ : / @ -; ` +
        `give a path without other characters (a symbolic link to the folder will do)`
    )
  }
  const name = label.success
  const info = yield* fs.stat(folder).pipe(
    Effect.catchReason("PlatformError", "NotFound", () =>
      Effect.fail(unavailable(name, `there is no folder ${folder}`))
    ),
    Effect.mapError((error) =>
      error._tag === "ModelUnavailable" ? error : unavailable(name, `cannot read ${folder}: ${systemReason(error)}`)
    )
  )
  if (info.type !== "Directory") return yield* unavailable(name, `${folder} is not a folder; give ${LAYOUT}`)
  const has = (file: string) => fs.exists(path.join(folder, file)).pipe(Effect.orElseSucceed(() => false))
  for (const file of ["tokenizer.json", "config.json"]) {
    if (!(yield* has(file))) return yield* unavailable(name, `${folder} has no ${file}; give ${LAYOUT}`)
  }
  const subfolder = (yield* has("onnx/model.onnx")) ? "onnx" : (yield* has("model.onnx")) ? "" : undefined
  if (subfolder === undefined) {
    return yield* unavailable(
      name,
      `${folder} has no onnx/model.onnx or model.onnx; export the model to ONNX first (Hugging Face's Optimum: ` +
        `optimum-cli export onnx --model NAME FOLDER)`
    )
  }
  const model = path.join(subfolder, "model.onnx")
  const optional = ["tokenizer_config.json", "special_tokens_map.json", `${model}_data`, "1_Pooling/config.json"]
  const files = ["config.json", "tokenizer.json", model]
  for (const file of optional) if (yield* has(file)) files.push(file)
  let pooling = DEFAULT_POOLING
  if (files.includes("1_Pooling/config.json")) {
    const file = path.join(folder, "1_Pooling", "config.json")
    const text = yield* fs
      .readFileString(file)
      .pipe(Effect.mapError((error) => unavailable(name, `cannot read ${file}: ${systemReason(error)}`)))
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    const read = poolingOf(json)
    if (Result.isFailure(read)) return yield* unavailable(name, `${file} cannot be used: ${read.failure}`)
    pooling = read.success
  }
  return { name, folder: { folder, subfolder, files, pooling } satisfies ModelFolder }
})

/** The SHA-256 (hex) of each of the folder's files, by name. */
const digests = Effect.fnUntraced(function* (model: ModelFolder) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const out: Record<string, string> = {}
  for (const file of model.files) {
    const hash = createHash("sha256")
    yield* fs
      .stream(path.join(model.folder, file), { chunkSize: 1 << 20 })
      .pipe(Stream.runForEach((bytes) => Effect.sync(() => void hash.update(bytes))))
    out[file] = hash.digest("hex")
  }
  return out
})

/**
 * The fingerprint of a folder's model: its name, vector length, pooling, the runtime's version and the SHA-256 of
 * every file that decides its vectors (weights, tokenizer, configuration), so an index made with other weights in the
 * same folder is found out.
 */
export const localFingerprint = (
  name: ModelLabel,
  dimensions: number,
  model: ModelFolder,
  runtimeVersion: string,
  fileDigests: Readonly<Record<string, string>>
): string =>
  fingerprintOf({
    model: name,
    dimensions,
    pooling: model.pooling,
    normalized: true,
    runtime: `transformers.js ${runtimeVersion}`,
    ...Object.fromEntries(Object.entries(fileDigests).map(([file, digest]) => [`sha256 ${file}`, digest]))
  })

/** The first line of what a library threw, for a message. */
const thrown = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split("\n")[0]!

/** Embeds one batch: tokenize (padded to its longest text, cut at the model's length), run, pool. */
const embedBatch = async (
  tokenizer: TokenizerLike,
  model: ModelLike,
  texts: Array<string>,
  pooling: Pooling
): Promise<Array<Float64Array>> => {
  const inputs = tokenizer(texts, { padding: true, truncation: true })
  const outputs = await model(inputs)
  const hidden = outputs.last_hidden_state
  const mask = inputs.attention_mask
  if (hidden === undefined || mask === undefined) {
    throw new Error(`the model gives no last_hidden_state (its outputs: ${Object.keys(outputs).join(", ")})`)
  }
  const [batch, tokens, dimensions] = hidden.dims
  if (hidden.dims.length !== 3 || batch !== texts.length || tokens !== mask.dims[1]) {
    throw new Error(`its last_hidden_state has the shape [${hidden.dims.join(", ")}], not [texts, tokens, dimensions]`)
  }
  return poolVectors(hidden.data as ArrayLike<number>, [batch, tokens!, dimensions!], mask.data, pooling)
}

/**
 * The `Embedder` of the model in `given` (what follows `local:`, resolved against the working directory): the folder
 * is checked, the runtime imported (`runtime`), the tokenizer and model loaded from the folder only, and a probe text
 * embedded to learn the vector length. Texts are embedded in batches (`lengthBatches`), one batch at a time (ONNX
 * Runtime uses every core for each). Fails with `ModelUnavailable`, whose reason says what to do.
 */
export const makeLocalEmbedder = Effect.fn("LocalModel.makeLocalEmbedder")(function* (
  given: string,
  runtime: Effect.Effect<TransformersRuntime, { readonly message: string }>
) {
  const { folder: model, name } = yield* inspectFolder(given)
  const unavailable = (reason: string) => new ModelUnavailable({ model: name, reason })
  const transformers = yield* Effect.mapError(runtime, (error) => unavailable(error.message))
  const fileDigests = yield* digests(model).pipe(
    Effect.mapError((error) => unavailable(`cannot read its files: ${systemReason(error)}`))
  )
  const options = { local_files_only: true }
  const tokenizer = yield* Effect.tryPromise({
    try: () => transformers.AutoTokenizer.from_pretrained(model.folder, options),
    catch: (error) => unavailable(`its tokenizer cannot be loaded: ${thrown(error)}`)
  })
  // The session lives as long as the process: commands use one model from start to end.
  const onnx = yield* Effect.tryPromise({
    try: () =>
      transformers.AutoModel.from_pretrained(model.folder, {
        ...options,
        subfolder: model.subfolder,
        dtype: "fp32",
        device: "cpu"
      }),
    catch: (error) => unavailable(`its ONNX model cannot be loaded: ${thrown(error)}`)
  })
  // One effect per batch, so a stopped run (Ctrl-C) ends between two batches instead of after all of them.
  const embedTexts = Effect.fnUntraced(function* (texts: ReadonlyArray<string>) {
    const vectors = new Array<Float64Array>(texts.length)
    for (const batch of lengthBatches(texts)) {
      const pooled = yield* Effect.tryPromise({
        try: () =>
          embedBatch(
            tokenizer,
            onnx,
            batch.map((i) => texts[i]!),
            model.pooling
          ),
        catch: thrown
      })
      batch.forEach((i, k) => {
        vectors[i] = pooled[k]!
      })
    }
    return vectors
  })
  const probe = yield* embedTexts([PROBE_TEXT]).pipe(
    Effect.mapError((reason) => unavailable(`it cannot embed: ${reason}`))
  )
  const dimensions = probe[0]!.length
  if (dimensions === 0) return yield* unavailable("its vectors have no dimensions")
  return Embedder.of({
    model: name,
    dimensions,
    fingerprint: localFingerprint(name, dimensions, model, transformers.version, fileDigests),
    embedMany: (texts) =>
      embedTexts(texts).pipe(
        Effect.mapError((reason) => new EmbedFailure({ model: name, reason })),
        Effect.flatMap((vectors) => {
          const embeddings: Array<Embedding> = []
          for (const vector of vectors) {
            if (vector.length !== dimensions || !vector.every(Number.isFinite)) {
              return Effect.fail(
                new EmbedFailure({ model: name, reason: `it gave a vector that is not ${dimensions} finite numbers` })
              )
            }
            const components = Array.from(vector) as [number, ...Array<number>]
            embeddings.push(new Embedding({ vector: components, model: name }, { disableChecks: true }))
          }
          return Effect.succeed(embeddings)
        })
      ),
    usage: Effect.succeed({ requests: 0, inputTokens: undefined }),
    // A transformer takes milliseconds a chunk: index runs embed before the write lock, through the embedding cache.
    costly: true
  })
})

/**
 * The `local:` provider for the `Models` catalogue. The runtime is imported when a `local:` model is first asked for
 * (never for another model), once per process; each model folder is loaded when asked for.
 */
export const localModelProvider: Effect.Effect<Provider, never, FileSystem.FileSystem | Path.Path> = Effect.gen(
  function* () {
    const context = yield* Effect.context<FileSystem.FileSystem | Path.Path>()
    const runtime = yield* Effect.cached(loadRuntime().pipe(Effect.provideContext(context)))
    return (name) =>
      name.startsWith(LOCAL_PREFIX)
        ? makeLocalEmbedder(name.slice(LOCAL_PREFIX.length), runtime).pipe(Effect.provideContext(context))
        : undefined
  }
)
