/** Boundary service: turns texts into embeddings with one model, in batches. */

import { createHash } from "node:crypto"
import type { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { Context, Effect, Layer } from "effect"
import { embedText, LOCAL_SHA256, LOCAL_SHA256_DIMENSIONS } from "../analysis/Embed.ts"
import type { EmbedFailure } from "./ModelErrors.ts"

/** What a model has cost so far: requests made and, when the model reports them, input tokens. */
export interface EmbedUsage {
  readonly requests: number
  readonly inputTokens: number | undefined
}

/**
 * A digest (SHA-256, hex) of everything that decides a model's vectors: its name, vector length and the settings that
 * change its output (a service's address, a vector file's version). Equal fingerprints mean equal vectors for equal
 * texts, so stored vectors stay valid; the index records it and a query checks it.
 */
export const fingerprintOf = (settings: Readonly<Record<string, string | number | boolean>>): string =>
  createHash("sha256")
    .update(JSON.stringify(Object.entries(settings).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))))
    .digest("hex")

export class Embedder extends Context.Service<
  Embedder,
  {
    /** The label stored with every vector this embedder makes. */
    readonly model: ModelLabel
    /** The length of every vector this embedder makes. */
    readonly dimensions: number
    /** The fingerprint of the model's settings (see `fingerprintOf`). */
    readonly fingerprint: string
    /** Embeds the texts in order: result `i` is the embedding of `texts[i]`. */
    readonly embedMany: (texts: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Embedding>, EmbedFailure>
    /** What the model has cost since this embedder was made. */
    readonly usage: Effect.Effect<EmbedUsage>
    /**
     * Embedding costs time or money (a remote service, a large model): an index run embeds before it takes the write
     * lock, through the embedding cache, so the lock is held briefly and a stopped run's work is not paid for twice.
     */
    readonly costly?: boolean
  }
>()("pipeline/Embedder") {
  /** The `local-sha256` reference model: deterministic, offline, exact-match only. */
  static readonly localSha256 = Embedder.of({
    model: LOCAL_SHA256,
    dimensions: LOCAL_SHA256_DIMENSIONS,
    fingerprint: fingerprintOf({ model: LOCAL_SHA256, dimensions: LOCAL_SHA256_DIMENSIONS }),
    embedMany: (texts) => Effect.sync(() => texts.map(embedText)),
    usage: Effect.succeed({ requests: 0, inputTokens: undefined })
  })

  /** `localSha256` as a layer. */
  static readonly layerLocalSha256 = Layer.succeed(Embedder, Embedder.localSha256)
}
