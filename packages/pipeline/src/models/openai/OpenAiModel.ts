/** The `effect/ai` `EmbeddingModel` of one `openai:` model, which splits each call into batches sent concurrently. */

import { Effect, Layer, Ref } from "effect"
import { EmbeddingModel } from "effect/ai"
import { HttpClient } from "effect/http"
import type { EmbedUsage } from "../Embedder.ts"
import { type Answer, planBatches } from "./OpenAiBatches.ts"
import { endpointOf } from "./OpenAiFailures.ts"
import { sender } from "./OpenAiRequest.ts"
import type { OpenAiSettings } from "./OpenAiSettings.ts"

/** The answers of one call's batches as one response: their vectors in order, and their tokens when any are known. */
const joinAnswers = (answers: ReadonlyArray<Answer>) => {
  let inputTokens: number | undefined
  for (const a of answers) if (a.tokens !== undefined) inputTokens = (inputTokens ?? 0) + a.tokens
  return { results: answers.flatMap((a) => a.vectors), usage: { inputTokens } }
}

/**
 * Makes the `EmbeddingModel` of `model` (the name the service knows, without `openai:`) at the service the settings
 * name, and the counter of its usage. Each `embedMany` is split by `planBatches`, sent `concurrency` requests at a
 * time, each retried per the settings; vectors must have `dimensions` numbers (any one length when undefined).
 */
export const makeModel = Effect.fn("OpenAiEmbeddings.makeModel")(function* (
  model: string,
  settings: OpenAiSettings,
  options: {
    /** The vector length to expect (default: `settings.dimensions`). */
    readonly dimensions?: number | undefined
    /** Where to count requests and tokens (default: a new counter). */
    readonly usage?: Ref.Ref<EmbedUsage>
  } = {}
) {
  const client = yield* HttpClient.HttpClient
  const dimensions = options.dimensions ?? settings.dimensions
  const usage = options.usage ?? (yield* Ref.make<EmbedUsage>({ requests: 0, inputTokens: undefined }))
  const send = sender({ client, endpoint: endpointOf(model, settings), dimensions, usage })
  const embeddingModel = yield* EmbeddingModel.make({
    embedMany: ({ inputs }) =>
      Effect.forEach(
        planBatches(inputs, settings.batchInputs, settings.batchTokens),
        ([start, end]) => send(inputs.slice(start, end)),
        { concurrency: settings.concurrency }
      ).pipe(Effect.map(joinAnswers))
  })
  return { embeddingModel, usage: Ref.get(usage) }
})

/**
 * The `EmbeddingModel` and its `Dimensions` for other Effect programs (`settings.dimensions` must be set, since a
 * layer cannot probe); needs an `HttpClient`.
 */
export const layerEmbeddingModel = (model: string, settings: OpenAiSettings & { readonly dimensions: number }) =>
  Layer.merge(
    Layer.effect(
      EmbeddingModel.EmbeddingModel,
      Effect.map(makeModel(model, settings), (made) => made.embeddingModel)
    ),
    Layer.succeed(EmbeddingModel.Dimensions, settings.dimensions)
  )
