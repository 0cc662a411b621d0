/**
 * The chat model flags `ask`, `serve` and `mcp` share: `--llm openai:MODEL` and `--llm-url`, with their environment
 * fallbacks, and the `LanguageModel` layer they name. Nothing is sent anywhere unless a model is named.
 */

import { defaultChatSettings, layerChatModel } from "@funcpipe/pipeline/models/openai/OpenAiChat"
import { DEFAULT_BASE_URL } from "@funcpipe/pipeline/models/openai/OpenAiSettings"
import { Config, Effect, Layer, Option, type Redacted, Schema } from "effect"
import type { LanguageModel } from "effect/ai"
import { Flag } from "effect/cli"

/** Where the chat model comes from, for the messages that say how to configure one. */
export const LLM_ENV = { model: "FUNCPIPE_LLM", url: "FUNCPIPE_LLM_URL", key: "FUNCPIPE_LLM_KEY" } as const

/** A command that needs a chat model has none: it says how to name one. */
export class ChatModelMissing extends Schema.TaggedError<ChatModelMissing>()("ChatModelMissing", {}) {
  override get message(): string {
    return (
      `ask needs a chat model: give --llm openai:<model> (or set ${LLM_ENV.model}), and --llm-url for a ` +
      `service other than OpenAI's (Ollama: http://localhost:11434/v1); --show-prompt prints the prompt without one`
    )
  }
}

/** A `--llm` that is not `openai:<model>`. */
export class ChatModelUnknown extends Schema.TaggedError<ChatModelUnknown>()("ChatModelUnknown", {
  name: Schema.String
}) {
  override get message(): string {
    return `--llm ${JSON.stringify(this.name)} is not a chat model FuncPipe can use: give openai:<model>, the model's name at an OpenAI-compatible service`
  }
}

export const llmFlags = {
  llm: Flag.String("llm").pipe(
    Flag.withMetavar("openai:MODEL"),
    Flag.withDescription(
      `The chat model that answers, at an OpenAI-compatible service (default $${LLM_ENV.model}); nothing is sent to ` +
        "a model unless one is given"
    ),
    Flag.withFallbackConfig(Config.String(LLM_ENV.model)),
    Flag.optional
  ),
  llmUrl: Flag.String("llm-url").pipe(
    Flag.withMetavar("URL"),
    Flag.withDescription(
      `The chat service's address before /chat/completions (default $${LLM_ENV.url}, else ${DEFAULT_BASE_URL}; ` +
        "Ollama: http://localhost:11434/v1). The key comes from $FUNCPIPE_LLM_KEY (or, for OpenAI only, $OPENAI_API_KEY)"
    ),
    Flag.withFallbackConfig(Config.String(LLM_ENV.url)),
    Flag.optional
  )
}

/** The key to send: `FUNCPIPE_LLM_KEY`, else `OPENAI_API_KEY` when the service is OpenAI's own. */
const keyFor = (url: string) =>
  Effect.gen(function* () {
    const own = yield* Config.option(Config.Redacted(LLM_ENV.key))
    if (Option.isSome(own)) return own.value
    if (url !== DEFAULT_BASE_URL) return undefined
    return Option.getOrUndefined(yield* Config.option(Config.Redacted("OPENAI_API_KEY")))
  }).pipe(Effect.orDie)

/** A named chat model: its `LanguageModel` layer and where it is, for messages (never the key). */
export interface ChatChoice {
  readonly layer: Layer.Layer<LanguageModel.LanguageModel>
  readonly model: string
  readonly baseUrl: string
}

/** The chat model the flags name; `undefined` when none is named. */
export const chatChoice = (input: {
  readonly llm: Option.Option<string>
  readonly llmUrl: Option.Option<string>
}): Effect.Effect<ChatChoice | undefined, ChatModelUnknown> =>
  Effect.gen(function* () {
    if (Option.isNone(input.llm)) return undefined
    const model = /^openai:(.+)$/.exec(input.llm.value)?.[1]
    if (model === undefined) return yield* new ChatModelUnknown({ name: input.llm.value })
    const baseUrl = Option.getOrElse(input.llmUrl, () => DEFAULT_BASE_URL).replace(/\/+$/, "")
    const key: Redacted.Redacted<string> | undefined = yield* keyFor(baseUrl)
    // Node's HTTP client, loaded only when a model is named (as the embedding models load it).
    const http = Layer.unwrap(
      Effect.promise(() => import("@effect/platform-node/NodeHttpClient")).pipe(
        Effect.map((m) => m.layerNodeHttpOptions({ keepAlive: true }))
      )
    )
    return { layer: layerChatModel(model, defaultChatSettings(baseUrl, key)).pipe(Layer.provide(http)), model, baseUrl }
  })
