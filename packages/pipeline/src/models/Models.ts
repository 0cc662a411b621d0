/** Embedding models by name: the catalogue a command picks its `Embedder` from. */
import { Context, Effect, type FileSystem, Layer, Option, type Path, Schema } from "effect"
import { LOCAL_SHA256 } from "../analysis/Embed.ts"
import { IndexStore, type StoreError } from "../store/IndexStore.ts"
import { Embedder } from "./Embedder.ts"
import { GLOVE_100D } from "./glove/Glove.ts"
import { loadGlove } from "./glove/GloveFiles.ts"
import * as LocalModel from "./local/LocalModel.ts"
import * as OpenAiEmbeddings from "./openai/OpenAiEmbeddings.ts"

/** The names a user can give, for messages and `--help`. */
export const MODEL_NAMES =
  "local-sha256, glove-100d, openai:<model> (any OpenAI-compatible service), local:<folder> (a Hugging Face ONNX model)"

/** The default model: offline and exact, the Python reference's. */
export const DEFAULT_MODEL = LOCAL_SHA256

/** No model goes by that name. */
export class UnknownModel extends Schema.TaggedError<UnknownModel>()("UnknownModel", {
  name: Schema.String
}) {
  override get message(): string {
    return `there is no embedding model called "${this.name}"; the models are ${MODEL_NAMES}`
  }
}

/** The model exists but cannot be used here (its files are not installed, a setting is missing, …). */
export class ModelUnavailable extends Schema.TaggedError<ModelUnavailable>()("ModelUnavailable", {
  model: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `the embedding model ${this.model} cannot be used: ${this.reason}`
  }
}

/** What a provider makes: an embedder, or why it cannot. */
export type ModelError = UnknownModel | ModelUnavailable

/**
 * A family of models: `name` is the whole model name (`glove-100d`) or, for a family (`openai:`), what follows the
 * prefix. Returns `undefined` when the name is not one of its models.
 */
export type Provider = (name: string) => Effect.Effect<Embedder["Service"], ModelUnavailable> | undefined

/** The `local-sha256` provider. */
export const localSha256: Provider = (name) =>
  name === LOCAL_SHA256 ? Effect.succeed(Embedder.localSha256) : undefined

/**
 * The `glove-100d` provider: its vectors are read from the models folder when the model is first asked for (never
 * for another model), once per process. Vectors not installed, or a damaged cache, are `ModelUnavailable` with a
 * reason that names the install command.
 */
export const gloveProvider: Effect.Effect<Provider, never, FileSystem.FileSystem | Path.Path> = Effect.gen(
  function* () {
    const context = yield* Effect.context<FileSystem.FileSystem | Path.Path>()
    const load = yield* Effect.cached(
      loadGlove().pipe(
        Effect.mapError((error) => new ModelUnavailable({ model: GLOVE_100D, reason: error.message })),
        Effect.provideContext(context)
      )
    )
    return (name) => (name === GLOVE_100D ? load : undefined)
  }
)

export class Models extends Context.Service<
  Models,
  {
    /** The embedder of the model named `name`. */
    readonly embedder: (name: string) => Effect.Effect<Embedder["Service"], ModelError>
  }
>()("pipeline/Models") {
  /** A catalogue of the given providers, asked in order. */
  static readonly make = (providers: ReadonlyArray<Provider>) =>
    Models.of({
      embedder: (name) => {
        for (const provider of providers) {
          const made = provider(name)
          if (made !== undefined) return made
        }
        return Effect.fail(new UnknownModel({ name }))
      }
    })

  /** `local-sha256` only (for tests and programs that need no other model). */
  static readonly layerLocal = Layer.succeed(Models, Models.make([localSha256]))

  /**
   * Every model: `local-sha256`, `glove-100d` (whose vectors load only when it is asked for), `openai:` ones, which
   * need an `HttpClient`, and `local:` folders (whose runtime is imported only when one is asked for). (Suspended:
   * OpenAiEmbeddings and LocalModel import this module.)
   */
  static readonly layer = Layer.effect(
    Models,
    Effect.suspend(() =>
      Effect.all([gloveProvider, OpenAiEmbeddings.provider, LocalModel.localModelProvider]).pipe(
        Effect.map((providers) => Models.make([localSha256, ...providers]))
      )
    )
  )
}

/** The embedder of the model called `name`, as a layer. */
export const layerModel = (name: string): Layer.Layer<Embedder, ModelError, Models> =>
  Layer.effect(
    Embedder,
    Models.use((models) => models.embedder(name))
  )

/**
 * The embedder of the model the index was built with (the default model when there is no index yet, so that the
 * command reports the missing index itself). A query never chooses its own model.
 */
export const layerIndexModel: Layer.Layer<Embedder, ModelError | StoreError, Models | IndexStore> = Layer.effect(
  Embedder,
  Effect.gen(function* () {
    const manifest = yield* IndexStore.use((store) => store.manifest)
    const models = yield* Models
    return yield* models.embedder(Option.match(manifest, { onNone: () => DEFAULT_MODEL, onSome: (m) => m.model }))
  })
)
