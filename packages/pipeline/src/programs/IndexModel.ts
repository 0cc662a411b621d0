/** The embedder a query must use: the model its index was built with, never one of the query's choosing. */
import { Effect, Layer, Option } from "effect"
import { Embedder } from "../models/Embedder.ts"
import type { ModelChoiceError } from "../models/ModelErrors.ts"
import { DEFAULT_MODEL, Models } from "../models/Models.ts"
import { IndexStore } from "../store/IndexStore.ts"
import type { StoreError } from "../store/StoreErrors.ts"

/**
 * The embedder of the model the index was built with (the default model when there is no index yet, so that the
 * command reports the missing index itself). A query never chooses its own model.
 */
export const layerIndexModel: Layer.Layer<Embedder, ModelChoiceError | StoreError, Models | IndexStore> = Layer.effect(
  Embedder,
  Effect.gen(function* () {
    const manifest = yield* IndexStore.use((store) => store.manifest)
    const models = yield* Models
    return yield* models.embedder(Option.match(manifest, { onNone: () => DEFAULT_MODEL, onSome: (m) => m.model }))
  })
)
