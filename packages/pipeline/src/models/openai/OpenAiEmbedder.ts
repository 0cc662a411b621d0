/** The pipeline's `Embedder` of an `openai:` model: its label, its vector length (given or probed), its fingerprint. */

import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { Effect, Ref, Result, Schema } from "effect"
import type { AiError, EmbeddingModel } from "effect/ai"
import { Embedder, type EmbedUsage, fingerprintOf } from "../Embedder.ts"
import { EmbedFailure, ModelUnavailable } from "../ModelErrors.ts"
import { describe } from "./OpenAiFailures.ts"
import { makeModel } from "./OpenAiModel.ts"
import type { OpenAiSettings } from "./OpenAiSettings.ts"

/** The prefix of the model names this provider answers: `openai:text-embedding-3-small`, `openai:nomic-embed-text`. */
export const OPENAI_PREFIX = "openai:"

/** The text a dimension probe embeds when the settings do not give the vector length. */
export const PROBE_TEXT = "FuncPipe dimension probe"

/** Checks a whole `openai:<model>` name against the domain's model labels. */
const decodeLabel = Schema.decodeUnknownResult(ModelLabel)

/** The label of `openai:<model>`, or why that is no model name. */
export const labelOf = (model: string): Result.Result<ModelLabel, ModelUnavailable> => {
  const name = `${OPENAI_PREFIX}${model}`
  if (model.trim() === "") {
    return Result.fail(
      new ModelUnavailable({
        model: name,
        reason:
          `name the service's model after "${OPENAI_PREFIX}", e.g. ${OPENAI_PREFIX}text-embedding-3-small or ` +
          `${OPENAI_PREFIX}nomic-embed-text`
      })
    )
  }
  return Result.mapError(
    decodeLabel(name),
    () => new ModelUnavailable({ model: name, reason: "a model name may hold only letters, digits and . _ : / @ -" })
  )
}

/**
 * The `Embedder` of `openai:<model>`: the model's vector length comes from the settings or from embedding
 * `PROBE_TEXT` once; the fingerprint covers the base URL, model and length, never the key. Fails with
 * `ModelUnavailable` when the name is not a model label or the probe fails.
 */
export const makeEmbedder = Effect.fn("OpenAiEmbeddings.makeEmbedder")(function* (
  model: string,
  settings: OpenAiSettings
) {
  const label = labelOf(model)
  if (Result.isFailure(label)) return yield* label.failure
  const unavailable = (error: AiError.AiError) =>
    new ModelUnavailable({ model: label.success, reason: describe(error) })
  // The probe's request counts in the usage: it is one the service served.
  const usage = yield* Ref.make<EmbedUsage>({ requests: 0, inputTokens: undefined })
  let dimensions = settings.dimensions
  if (dimensions === undefined) {
    const probe = yield* makeModel(model, settings, { usage })
    const answer = yield* probe.embeddingModel.embed(PROBE_TEXT).pipe(Effect.mapError(unavailable))
    dimensions = answer.vector.length
  }
  const { embeddingModel } = yield* makeModel(model, settings, { dimensions, usage })
  return embedderOf(label.success, dimensions, settings.baseUrl, embeddingModel, Ref.get(usage))
})

/**
 * Adapts an `EmbeddingModel` to the pipeline's `Embedder`: vectors become domain `Embedding`s of `label` (their
 * numbers were checked finite and of `dimensions` length as they were read), failures an `EmbedFailure` whose
 * reason is `describe`'s sentence.
 */
const embedderOf = (
  label: ModelLabel,
  dimensions: number,
  baseUrl: string,
  model: EmbeddingModel.EmbeddingModel,
  usage: Effect.Effect<EmbedUsage>
): Embedder["Service"] =>
  Embedder.of({
    model: label,
    dimensions,
    fingerprint: fingerprintOf({ model: label, baseUrl, dimensions }),
    embedMany: (texts) =>
      model.embedMany(texts).pipe(
        Effect.map((response) =>
          response.embeddings.map(
            (e) =>
              new Embedding({ vector: e.vector as [number, ...Array<number>], model: label }, { disableChecks: true })
          )
        ),
        Effect.mapError((error) => new EmbedFailure({ model: label, reason: describe(error) }))
      ),
    usage,
    // A remote service: index runs embed before taking the write lock, through the embedding cache.
    costly: true
  })
