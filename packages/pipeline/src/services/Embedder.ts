/** Boundary service: turns texts into embeddings with one model, in batches. */
import { Context, Effect, Layer, Schema } from "effect"
import type { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { embedText, LOCAL_SHA256, LOCAL_SHA256_DIMENSIONS } from "../stages/Embed.ts"

/** The embedding model could not embed a batch (a remote model is down, a text is too long for it, …). */
export class EmbedFailure extends Schema.TaggedError<EmbedFailure>()("EmbedFailure", {
  model: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `the embedding model ${this.model} failed: ${this.reason}`
  }
}

export class Embedder extends Context.Service<Embedder, {
  /** The label stored with every vector this embedder makes. */
  readonly model: ModelLabel
  /** The length of every vector this embedder makes. */
  readonly dimensions: number
  /** Embeds the texts in order: result `i` is the embedding of `texts[i]`. */
  readonly embedMany: (texts: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Embedding>, EmbedFailure>
}>()("pipeline/Embedder") {
  /** The `local-sha256` reference model: deterministic, offline, exact-match only. */
  static readonly layerLocalSha256 = Layer.succeed(
    Embedder,
    Embedder.of({
      model: LOCAL_SHA256,
      dimensions: LOCAL_SHA256_DIMENSIONS,
      embedMany: (texts) => Effect.sync(() => texts.map(embedText))
    })
  )
}
