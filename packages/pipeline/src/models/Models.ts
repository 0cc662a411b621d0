/** Embedding models by name: the catalogue a command picks its `Embedder` from. */
import { Context, Effect, type FileSystem, Layer, type Path } from "effect"
import { LOCAL_SHA256 } from "../analysis/Embed.ts"
import { Embedder } from "./Embedder.ts"
import { GLOVE_100D } from "./glove/Glove.ts"
import { loadGlove } from "./glove/GloveFiles.ts"
import * as LocalModel from "./local/LocalModel.ts"
import { type ModelChoiceError, ModelUnavailable, UnknownModel } from "./ModelErrors.ts"
import * as OpenAiEmbeddings from "./openai/OpenAiEmbeddings.ts"
import type { Provider } from "./Provider.ts"

/** The default model: offline and exact, the Python reference's. */
export const DEFAULT_MODEL = LOCAL_SHA256

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
    readonly embedder: (name: string) => Effect.Effect<Embedder["Service"], ModelChoiceError>
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
   * need an `HttpClient`, and `local:` folders (whose runtime is imported only when one is asked for).
   */
  static readonly layer = Layer.effect(
    Models,
    Effect.all([gloveProvider, OpenAiEmbeddings.provider, LocalModel.localModelProvider]).pipe(
      Effect.map((providers) => Models.make([localSha256, ...providers]))
    )
  )
}

/** The embedder of the model called `name`, as a layer. */
export const layerModel = (name: string): Layer.Layer<Embedder, ModelChoiceError, Models> =>
  Layer.effect(
    Embedder,
    Models.use((models) => models.embedder(name))
  )
