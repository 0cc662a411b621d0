/** The embedder a query must use: the model its index was built with, never one of the query's choosing. */
import { Effect, Layer, Option } from "effect"
import { Embedder } from "../models/Embedder.ts"
import { DEFAULT_MODEL, Models } from "../models/Models.ts"
import type { ModelError } from "../models/Provider.ts"
import { IndexStore, type StoreError } from "../store/IndexStore.ts"

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
