/**
 * The `openai:<model>` embedding models: any service that answers OpenAI's `POST <base URL>/embeddings` (OpenAI,
 * Ollama, vLLM, LM Studio, llama.cpp's server, Text Embeddings Inference, LocalAI), as an `effect/ai` `EmbeddingModel`
 * adapted to the pipeline's `Embedder`.
 */

import { Effect, Result } from "effect"
import { HttpClient } from "effect/http"
import { ModelUnavailable } from "../ModelErrors.ts"
import type { Provider } from "../Provider.ts"
import { labelOf, makeEmbedder, OPENAI_PREFIX } from "./OpenAiEmbedder.ts"
import { DEFAULT_BASE_URL, ENV, environment, ServiceFlags, settingsFrom } from "./OpenAiSettings.ts"

export { type Answer, approxTokens, decodeAnswer, planBatches } from "./OpenAiBatches.ts"
export { makeEmbedder, OPENAI_PREFIX, PROBE_TEXT } from "./OpenAiEmbedder.ts"
export { describe, retryAfterMillis } from "./OpenAiFailures.ts"
export { layerEmbeddingModel, makeModel } from "./OpenAiModel.ts"
export { retryDelayMillis } from "./OpenAiRequest.ts"
export {
  DEFAULT_BASE_URL,
  defaultSettings,
  ENV,
  environment,
  MAX_RETRY_AFTER_MILLIS,
  normalizeBaseUrl,
  type OpenAiSettings,
  ServiceFlags,
  type SettingsInput,
  settingsFrom
} from "./OpenAiSettings.ts"

/**
 * The `openai:` provider for the `Models` catalogue. Settings are read when a model is asked for: the command line's
 * `ServiceFlags`, then the environment (`ENV`), then `defaultSettings`. Without a key, the OpenAI API itself is
 * refused before any request.
 */
export const provider: Effect.Effect<Provider, never, HttpClient.HttpClient> = Effect.map(
  HttpClient.HttpClient,
  (client) => (name) => {
    if (!name.startsWith(OPENAI_PREFIX)) return undefined
    return Effect.gen(function* () {
      const label = labelOf(name.slice(OPENAI_PREFIX.length))
      if (Result.isFailure(label)) return yield* label.failure
      const unavailable = (reason: string) => new ModelUnavailable({ model: name, reason })
      const input = yield* Effect.mapError(environment, (error) => unavailable(error.message))
      const settings = settingsFrom(input, yield* ServiceFlags)
      if (Result.isFailure(settings)) return yield* unavailable(settings.failure)
      if (settings.success.apiKey === undefined && settings.success.baseUrl === DEFAULT_BASE_URL) {
        return yield* unavailable(
          `the OpenAI API needs a key: set ${ENV.key} or ${ENV.openAiKey}; for another service (Ollama, vLLM, …) ` +
            `give its address with --embed-url or ${ENV.url}`
        )
      }
      return yield* makeEmbedder(name.slice(OPENAI_PREFIX.length), settings.success)
    }).pipe(Effect.provideService(HttpClient.HttpClient, client))
  }
)
