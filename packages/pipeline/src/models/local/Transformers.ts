/**
 * The transformers.js runtime that `local:<folder>` models run on: installed on demand with npm into the models
 * folder (it is not a dependency of FuncPipe: with ONNX Runtime it is a 160 MB download), and imported only when such
 * a model is used.
 */

import { arch, platform } from "node:os"
import { pathToFileURL } from "node:url"
import { Effect, FileSystem, Path, Random, Schema, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { systemReason } from "../../platform/SystemReason.ts"
import { modelsFolder } from "../glove/GloveFiles.ts"

/** The package the runtime is, at the one version FuncPipe is tested with. */
export const RUNTIME_PACKAGE = "@huggingface/transformers"
export const RUNTIME_VERSION = "4.3.2"

/** The command that installs the runtime; every message about a missing or unusable runtime names it. */
export const INSTALL_RUNTIME_COMMAND = "funcpipe models install transformers"

/** The runtime's folder in the models folder. */
export const RUNTIME_FOLDER = "transformers"

/** A tensor as transformers.js gives it: numbers row by row, and its shape. */
export interface TensorLike {
  readonly data: ArrayLike<number | bigint>
  readonly dims: ReadonlyArray<number>
}

/** A tokenizer: texts in, `input_ids` and `attention_mask` (and whatever else the model takes) out. */
export type TokenizerLike = (
  texts: Array<string>,
  options: { readonly padding: boolean; readonly truncation: boolean }
) => Record<string, TensorLike>

/** A model: the tokenizer's tensors in, its outputs (`last_hidden_state`, …) out. */
export interface ModelLike {
  (inputs: Record<string, TensorLike>): Promise<Record<string, TensorLike | undefined>>
  readonly dispose: () => Promise<unknown>
}

/** The part of transformers.js FuncPipe uses. */
export interface TransformersRuntime {
  readonly version: string
  readonly AutoTokenizer: { readonly from_pretrained: (path: string, options: object) => Promise<TokenizerLike> }
  readonly AutoModel: { readonly from_pretrained: (path: string, options: object) => Promise<ModelLike> }
}

/** The runtime is not installed. */
export class RuntimeNotInstalled extends Schema.TaggedError<RuntimeNotInstalled>()("RuntimeNotInstalled", {
  folder: Schema.String
}) {
  override get message(): string {
    return (
      `the runtime for local: models (transformers.js with ONNX Runtime) is not installed in ${this.folder}; ` +
      `install it once with: ${INSTALL_RUNTIME_COMMAND}`
    )
  }
}

/** The runtime is installed but cannot be loaded (another version, damaged files, a platform ONNX Runtime lacks). */
export class RuntimeUnusable extends Schema.TaggedError<RuntimeUnusable>()("RuntimeUnusable", {
  folder: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return (
      `the runtime for local: models in ${this.folder} cannot be loaded (${this.reason}); install it again ` +
      `with: ${INSTALL_RUNTIME_COMMAND}`
    )
  }
}

/** Installing the runtime failed; what was installed before is left as it was. */
export class RuntimeInstallFailed extends Schema.TaggedError<RuntimeInstallFailed>()("RuntimeInstallFailed", {
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot install the runtime for local: models: ${this.reason}`
  }
}

/** The runtime's folder: `transformers` in the models folder. */
export const runtimeFolder = Effect.fn("runtimeFolder")(function* () {
  const path = yield* Path.Path
  return path.join(yield* modelsFolder(), RUNTIME_FOLDER)
})

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The file Node imports the package from (its `exports` for Node's `import`), relative to the package. */
const entryOf = (manifest: Record<string, unknown>): string | undefined => {
  const exports = manifest.exports
  const node = isRecord(exports) ? exports.node : undefined
  const imports = isRecord(node) ? node.import : undefined
  const entry = isRecord(imports) ? imports.default : undefined
  return typeof entry === "string" ? entry : undefined
}

/**
 * Imports the runtime installed in `folder` and turns remote loading off: models are read from their folder only,
 * nothing is downloaded and nothing is cached. `RuntimeNotInstalled` when there is none, `RuntimeUnusable` when it is
 * another version than `RUNTIME_VERSION` or does not load.
 */
export const importRuntime = Effect.fn("importRuntime")(function* (folder: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const unusable = (reason: string) => new RuntimeUnusable({ folder, reason })
  const packageFolder = path.join(folder, "node_modules", ...RUNTIME_PACKAGE.split("/"))
  const text = yield* fs.readFileString(path.join(packageFolder, "package.json")).pipe(
    Effect.catchReason("PlatformError", "NotFound", () => Effect.fail(new RuntimeNotInstalled({ folder }))),
    Effect.mapError((error) =>
      error._tag === "RuntimeNotInstalled" ? error : unusable(`its package.json: ${systemReason(error)}`)
    )
  )
  let manifest: unknown
  try {
    manifest = JSON.parse(text)
  } catch {
    return yield* unusable("its package.json is not JSON")
  }
  if (!isRecord(manifest)) return yield* unusable("its package.json is not a JSON object")
  if (manifest.version !== RUNTIME_VERSION) {
    return yield* unusable(`it is version ${String(manifest.version)}; this FuncPipe runs on ${RUNTIME_VERSION}`)
  }
  const entry = entryOf(manifest)
  if (entry === undefined) return yield* unusable("its package.json names no file for Node to import")
  const runtime = yield* Effect.tryPromise({
    try: () => import(pathToFileURL(path.join(packageFolder, entry)).href) as Promise<Record<string, unknown>>,
    catch: (error) => unusable(error instanceof Error ? error.message.split("\n")[0]! : String(error))
  })
  const env = runtime.env
  const loader = (name: string) => {
    const value = runtime[name] as { readonly from_pretrained?: unknown } | undefined
    return (typeof value === "function" || isRecord(value)) && typeof value.from_pretrained === "function"
  }
  if (!isRecord(env) || !loader("AutoTokenizer") || !loader("AutoModel")) {
    return yield* unusable("it lacks env, AutoTokenizer or AutoModel")
  }
  env.allowRemoteModels = false
  env.allowLocalModels = true
  env.useFSCache = false
  env.useBrowserCache = false
  // Its warnings would interleave with the CLI's own lines; failures still reach us as rejected promises.
  env.logLevel = 40
  return { ...runtime, version: RUNTIME_VERSION } as unknown as TransformersRuntime
})

/** The runtime in the models folder (see `importRuntime`). */
export const loadRuntime = Effect.fn("loadRuntime")(function* () {
  return yield* importRuntime(yield* runtimeFolder())
})

/** How far an installation is, for a person watching. */
export type RuntimeInstallStage = "downloading" | "checking" | "moving"

/** What an installation did. */
export interface RuntimeInstalled {
  readonly folder: string
  readonly bytes: number
}

/** The size of the files under `root`, in bytes. */
const sizeOf = Effect.fnUntraced(function* (root: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  let bytes = 0
  for (const name of yield* fs.readDirectory(root, { recursive: true })) {
    const info = yield* fs.stat(path.join(root, name))
    if (info.type === "File") bytes += Number(info.size)
  }
  return bytes
})

/**
 * Files of the installed packages that Node never loads: ONNX Runtime's libraries for other platforms, and the
 * browser build of ONNX Runtime, whose Node part transformers.js carries in its own bundle. Removing them takes the
 * installation from 475 MB to 85 MB.
 */
const unusedFiles = Effect.fnUntraced(function* (modules: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const binaries = path.join(modules, "onnxruntime-node", "bin", "napi-v6")
  const out = [path.join(modules, "onnxruntime-web")]
  for (const os of yield* fs.readDirectory(binaries).pipe(Effect.orElseSucceed(() => []))) {
    for (const cpu of yield* fs.readDirectory(path.join(binaries, os)).pipe(Effect.orElseSucceed(() => []))) {
      if (os !== platform() || cpu !== arch()) out.push(path.join(binaries, os, cpu))
    }
  }
  return out
})

/**
 * Installs the runtime into the models folder: `npm install` of `RUNTIME_PACKAGE@RUNTIME_VERSION` in a new folder
 * (from the npm registry npm is set up for; `npmFlags` are added to its command line), without ONNX Runtime's
 * download of CUDA libraries from outside the registry (`ONNXRUNTIME_NODE_INSTALL=skip`: FuncPipe runs models on the
 * CPU), then files Node never loads are removed, the runtime is imported once to check it loads, and the folder takes
 * the place of the previous installation. A failed or interrupted install leaves the previous one, or none.
 */
export const installRuntime = Effect.fn("installRuntime")(function* (
  options: {
    readonly progress?: (stage: RuntimeInstallStage) => Effect.Effect<void>
    readonly npmFlags?: ReadonlyArray<string>
  } = {}
) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  const progress = options.progress ?? (() => Effect.void)
  const models = yield* modelsFolder()
  const target = path.join(models, RUNTIME_FOLDER)
  const suffix = (yield* Random.nextInt).toString(36).replace("-", "")
  const temporary = path.join(models, `.${RUNTIME_FOLDER}.${suffix}.tmp`)
  const previous = path.join(models, `.${RUNTIME_FOLDER}.${suffix}.old`)
  const failed = (what: string) => (error: unknown) =>
    new RuntimeInstallFailed({ reason: `${what}: ${systemReason(error)}` })
  const remove = (folder: string) => fs.remove(folder, { recursive: true, force: true })
  const cleanUp = Effect.all([remove(temporary), remove(previous)]).pipe(Effect.ignore)
  const manifest = {
    private: true,
    description: "The runtime of FuncPipe's local: models, installed by funcpipe models install transformers",
    dependencies: { [RUNTIME_PACKAGE]: RUNTIME_VERSION }
  }
  const npm = ChildProcess.make(
    "npm",
    [
      "install",
      "--prefix",
      temporary,
      "--no-audit",
      "--no-fund",
      "--no-update-notifier",
      "--omit=dev",
      "--loglevel=error",
      ...(options.npmFlags ?? [])
    ],
    {
      cwd: temporary,
      // No CUDA libraries from outside the registry; and this folder is the project, not the one `npm run` or `npx`
      // started in (they pass theirs down).
      env: { ONNXRUNTIME_NODE_INSTALL: "skip", npm_config_local_prefix: undefined, npm_config_prefix: undefined },
      extendEnv: true,
      stdin: "ignore"
    }
  )
  const runNpm = Effect.scoped(
    Effect.gen(function* () {
      const handle = yield* spawner.spawn(npm)
      const output = yield* handle.all.pipe(Stream.decodeText(), Stream.mkString)
      return { code: yield* handle.exitCode, output }
    })
  ).pipe(
    Effect.catchReason("PlatformError", "NotFound", () =>
      Effect.fail(new RuntimeInstallFailed({ reason: "npm was not found: it comes with Node.js; put it on the PATH" }))
    ),
    Effect.mapError((error) => (error._tag === "RuntimeInstallFailed" ? error : failed("cannot run npm")(error)))
  )

  return yield* Effect.gen(function* () {
    yield* fs.makeDirectory(temporary, { recursive: true }).pipe(Effect.mapError(failed(`cannot create ${temporary}`)))
    yield* fs
      .writeFileString(path.join(temporary, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`)
      .pipe(Effect.mapError(failed(`cannot write in ${temporary}`)))
    yield* progress("downloading")
    const { code, output } = yield* runNpm
    if (code !== 0) {
      const said = output
        .split("\n")
        .map((line) => line.replace(/^npm (error|ERR!) ?/, "").trim())
        .filter((line) => line !== "" && !line.startsWith("A complete log"))
        .slice(0, 3)
        .join("; ")
      const command = `npm install ${RUNTIME_PACKAGE}@${RUNTIME_VERSION}`
      return yield* new RuntimeInstallFailed({
        reason: `${command} failed (exit code ${code})${said === "" ? "" : `: ${said}`}`
      })
    }
    yield* progress("checking")
    for (const file of yield* unusedFiles(path.join(temporary, "node_modules"))) {
      yield* remove(file).pipe(Effect.mapError(failed(`cannot remove ${file}`)))
    }
    yield* importRuntime(temporary).pipe(
      Effect.mapError(
        (error) => new RuntimeInstallFailed({ reason: `the installed runtime does not load: ${error.message}` })
      )
    )
    yield* progress("moving")
    const bytes = yield* sizeOf(temporary).pipe(Effect.mapError(failed(`cannot read ${temporary}`)))
    const replacing = yield* fs.exists(target).pipe(Effect.orElseSucceed(() => false))
    if (replacing) yield* fs.rename(target, previous).pipe(Effect.mapError(failed(`cannot replace ${target}`)))
    yield* fs.rename(temporary, target).pipe(
      // Put the previous installation back rather than leave none.
      Effect.tapError(() => (replacing ? Effect.ignore(fs.rename(previous, target)) : Effect.void)),
      Effect.mapError(failed(`cannot move the runtime to ${target}`))
    )
    return { folder: target, bytes } satisfies RuntimeInstalled
  }).pipe(Effect.ensuring(cleanUp))
})
