/** Answering a query from the stored index. */
import { Effect, Option, Schema } from "effect"
import { SearchQuery } from "@funcpipe/domain/Query"
import { Embedder } from "../services/Embedder.ts"
import { IndexStore } from "../services/IndexStore.ts"
import { prepareQuery } from "../stages/Query.ts"
import { ModelMismatch, retrieve, vectorIndex } from "../stages/Retrieve.ts"

/** Nothing has been indexed at the location yet. */
export class IndexMissing extends Schema.TaggedError<IndexMissing>()("IndexMissing", {
  location: Schema.String
}) {
  override get message(): string {
    return `there is no index at ${this.location} yet; build one with: funcpipe index <paths...>`
  }
}

/** The stored manifest, or `IndexMissing`. */
export const requireManifest = Effect.fn("requireManifest")(function*() {
  const store = yield* IndexStore
  const manifest = yield* store.manifest
  if (Option.isNone(manifest)) return yield* new IndexMissing({ location: store.location })
  return manifest.value
})

/**
 * Answers `text` from the stored index: the index must have been built by the embedder's model (checked before any
 * vector is read or scored), the text is cleaned with the index's own rules, the stored vectors are laid out in one
 * contiguous array, and the same `retrieve` as the in-memory path ranks them.
 */
export const queryIndex = Effect.fn("queryIndex")(function*(text: string, topK: number) {
  const store = yield* IndexStore
  const embedder = yield* Embedder
  const manifest = yield* requireManifest()
  if (manifest.model !== embedder.model || manifest.dimensions !== embedder.dimensions) {
    return yield* new ModelMismatch({ index: manifest.model, query: embedder.model })
  }
  const prepared = yield* Effect.fromResult(prepareQuery(text, topK, manifest.cleaner))
  const [embedding] = yield* embedder.embedMany([prepared.text])
  const query = new SearchQuery({ text: prepared.text, embedding: embedding!, topK: prepared.topK })
  const chunks = yield* store.chunks
  const index = yield* Effect.fromResult(vectorIndex(manifest.model, manifest.dimensions, chunks))
  const results = yield* Effect.fromResult(retrieve(query, index))
  return { manifest, query, results } as const
})
