/** `funcpipe ask`: answer a question from the index with a chat model, citing the chunks the answer comes from. */

import { citationsOf, DEFAULT_CONTEXT_TOKENS } from "@funcpipe/pipeline/analysis/Prompt"
import { defaultChatSettings, layerChatModel } from "@funcpipe/pipeline/models/openai/OpenAiChat"
import { describe } from "@funcpipe/pipeline/models/openai/OpenAiFailures"
import { DEFAULT_BASE_URL } from "@funcpipe/pipeline/models/openai/OpenAiSettings"
import { NO_SOURCES_ANSWER, prepareAnswer, promptOf } from "@funcpipe/pipeline/programs/Answer"
import { layerIndexStore } from "@funcpipe/pipeline/programs/IndexLocation"
import { layerIndexModel } from "@funcpipe/pipeline/programs/IndexModel"
import {
  Clock,
  Config,
  Console,
  Effect,
  FileSystem,
  Layer,
  Option,
  type Redacted,
  Result,
  Schema,
  Stdio,
  Stream
} from "effect"
import { type AiError, LanguageModel } from "effect/ai"
import { Argument, Command, Flag } from "effect/cli"
import { indexPath, json, rankingFlags, ruleOption, serviceFlags, where, withServiceFlags } from "../flags/Flags.ts"
import { queryText, STDIN_HINT } from "../flags/QueryText.ts"

/** Where `ask` takes its chat model from, for the messages that say how to configure one. */
export const LLM_ENV = { model: "FUNCPIPE_LLM", url: "FUNCPIPE_LLM_URL", key: "FUNCPIPE_LLM_KEY" } as const

/** `ask` without a chat model: it says how to name one. */
export class ChatModelMissing extends Schema.TaggedError<ChatModelMissing>()("ChatModelMissing", {}) {
  override get message(): string {
    return (
      `ask needs a chat model: give --llm openai:<model> (or set ${LLM_ENV.model}), and --llm-url for a ` +
      `service other than OpenAI's (Ollama: http://localhost:11434/v1); --show-prompt prints the prompt without one`
    )
  }
}

/** The chat model could not answer: why, in the provider's words (never with the key). */
export class AnswerFailed extends Schema.TaggedError<AnswerFailed>()("AnswerFailed", { reason: Schema.String }) {
  override get message(): string {
    return `the chat model could not answer: ${this.reason}`
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

const llm = Flag.String("llm").pipe(
  Flag.withMetavar("openai:MODEL"),
  Flag.withDescription(
    `The chat model that answers, at an OpenAI-compatible service (default $${LLM_ENV.model}); nothing is sent to a ` +
      "model unless one is given"
  ),
  Flag.withFallbackConfig(Config.String(LLM_ENV.model)),
  Flag.optional
)

const llmUrl = Flag.String("llm-url").pipe(
  Flag.withMetavar("URL"),
  Flag.withDescription(
    `The chat service's address before /chat/completions (default $${LLM_ENV.url}, else ${DEFAULT_BASE_URL}; ` +
      "Ollama: http://localhost:11434/v1). The key comes from $FUNCPIPE_LLM_KEY (or, for OpenAI only, $OPENAI_API_KEY)"
  ),
  Flag.withFallbackConfig(Config.String(LLM_ENV.url)),
  Flag.optional
)

/** The key to send: `FUNCPIPE_LLM_KEY`, else `OPENAI_API_KEY` when the service is OpenAI's own. */
const keyFor = (url: string) =>
  Effect.gen(function* () {
    const own = yield* Config.option(Config.Redacted(LLM_ENV.key))
    if (Option.isSome(own)) return own.value
    if (url !== DEFAULT_BASE_URL) return undefined
    return Option.getOrUndefined(yield* Config.option(Config.Redacted("OPENAI_API_KEY")))
  }).pipe(Effect.orDie)

/** The chat model layer the flags name, or why there is none. */
const chatLayer = (name: Option.Option<string>, url: Option.Option<string>) =>
  Effect.gen(function* () {
    if (Option.isNone(name)) return yield* new ChatModelMissing()
    const model = /^openai:(.+)$/.exec(name.value)?.[1]
    if (model === undefined) return yield* new ChatModelUnknown({ name: name.value })
    const baseUrl = Option.getOrElse(url, () => DEFAULT_BASE_URL).replace(/\/+$/, "")
    const key: Redacted.Redacted<string> | undefined = yield* keyFor(baseUrl)
    // Node's HTTP client, loaded only when a model is asked (as the embedding models load it).
    const http = Layer.unwrap(
      Effect.promise(() => import("@effect/platform-node/NodeHttpClient")).pipe(
        Effect.map((m) => m.layerNodeHttpOptions({ keepAlive: true }))
      )
    )
    return layerChatModel(model, defaultChatSettings(baseUrl, key)).pipe(Layer.provide(http))
  })

export const ask = Command.make(
  "ask",
  {
    text: Argument.String("question").pipe(Argument.withDescription(`The question, ${STDIN_HINT}`)),
    topK: Flag.Int("top-k").pipe(
      Flag.withSchema(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }))),
      Flag.withMetavar("N"),
      Flag.withDescription("How many chunks to retrieve for the prompt (1 to 100; default 8)"),
      Flag.withDefault(8)
    ),
    mode: rankingFlags.mode,
    where,
    index: indexPath,
    llm,
    llmUrl,
    contextTokens: Flag.Int("context-tokens").pipe(
      Flag.withSchema(Schema.Int.check(Schema.isBetween({ minimum: 100, maximum: 1_000_000 }))),
      Flag.withMetavar("N"),
      Flag.withDescription(`The most tokens (estimated) the sources may take (default ${DEFAULT_CONTEXT_TOKENS})`),
      Flag.withDefault(DEFAULT_CONTEXT_TOKENS)
    ),
    system: Flag.String("system").pipe(
      Flag.withMetavar("FILE"),
      Flag.withDescription("A file whose text replaces the system prompt (the instructions to the model)"),
      Flag.optional
    ),
    showPrompt: Flag.Boolean("show-prompt").pipe(
      Flag.withDescription("Print the messages that would be sent to the model, and send nothing"),
      Flag.withDefault(false)
    ),
    ...serviceFlags,
    json
  },
  Effect.fn("ask")(function* (input) {
    const question = yield* queryText(input.text)
    const fs = yield* FileSystem.FileSystem
    const system = Option.isSome(input.system) ? yield* fs.readFileString(input.system.value) : undefined
    const started = yield* Clock.currentTimeMillis
    const { found, prompt } = yield* prepareAnswer(question, input.topK, {
      ...(Option.isSome(input.mode) ? { mode: input.mode.value } : {}),
      ...ruleOption("where", input.where),
      contextTokens: input.contextTokens,
      ...(system === undefined ? {} : { system })
    }).pipe(Effect.provide(Layer.provideMerge(withServiceFlags(input)(layerIndexModel), layerIndexStore(input.index))))
    if (input.showPrompt) {
      yield* Console.log(`system:\n${prompt.system}\n\nuser:\n${prompt.user}`)
      return
    }
    const sources = prompt.sources.map((s) => ({
      number: s.number,
      doc_id: s.docId,
      title: s.title,
      start: s.start,
      end: s.end,
      text: s.text
    }))
    if (prompt.sources.length === 0) {
      // Nothing to answer from: the model is not asked.
      if (input.json)
        yield* Console.log(JSON.stringify({ question, answer: NO_SOURCES_ANSWER, citations: [], sources }))
      else yield* Console.log(NO_SOURCES_ANSWER)
      return
    }
    const layer = yield* chatLayer(input.llm, input.llmUrl)
    const pieces: Array<string> = []
    let usage: { input: number | undefined; output: number | undefined } = { input: undefined, output: undefined }
    const parts = Stream.unwrap(
      Effect.map(LanguageModel.LanguageModel, (model) => model.streamText({ prompt: promptOf(prompt) }))
    ).pipe(
      Stream.tap((part) =>
        Effect.sync(() => {
          if (part.type === "finish")
            usage = { input: part.usage.inputTokens.total, output: part.usage.outputTokens.total }
        })
      ),
      Stream.filterMap((part) => (part.type === "text-delta" ? Result.succeed(part.delta) : Result.failVoid)),
      Stream.tap((delta) => Effect.sync(() => void pieces.push(delta)))
    )
    const failed = (e: AiError.AiError) => new AnswerFailed({ reason: describe(e) })
    if (input.json) {
      yield* Stream.runDrain(parts).pipe(
        Effect.provide(layer),
        Effect.catchTag("AiError", (e) => Effect.fail(failed(e)))
      )
    } else {
      const stdio = yield* Stdio.Stdio
      yield* Stream.run(parts, stdio.stdout({ endOnDone: false })).pipe(
        Effect.provide(layer),
        Effect.catchTag("AiError", (e) => Effect.fail(failed(e)))
      )
      yield* Console.log("")
    }
    const answer = pieces.join("")
    const citations = citationsOf(answer, prompt.sources)
    if (input.json) {
      yield* Console.log(
        JSON.stringify({
          question,
          answer,
          citations: citations.map((c) => ({ number: c.number, known: c.known })),
          sources,
          usage: { input_tokens: usage.input ?? null, output_tokens: usage.output ?? null },
          millis: (yield* Clock.currentTimeMillis) - started
        })
      )
      return
    }
    yield* Console.log("\nSources:")
    for (const s of prompt.sources) {
      const words = s.text.split(" ").slice(0, 12).join(" ")
      yield* Console.log(
        `[${s.number}] ${s.docId}${s.title === "" ? "" : ` "${s.title}"`}  [${s.start}, ${s.end})  ${words}…`
      )
    }
    for (const c of citations) {
      if (!c.known) yield* Console.error(`note: the answer cites [${c.number}], which is not one of the sources`)
    }
    void found
  })
).pipe(
  Command.withDescription("Answer a question from the index with a chat model, citing the chunks it comes from"),
  Command.withExamples([
    {
      command: 'funcpipe ask "How far away is the Moon?" --llm openai:gpt-4o-mini',
      description: "Ask OpenAI's model (key in $OPENAI_API_KEY or $FUNCPIPE_LLM_KEY)"
    },
    {
      command: 'funcpipe ask "How far away is the Moon?" --llm openai:llama3.2 --llm-url http://localhost:11434/v1',
      description: "Ask a model Ollama serves"
    },
    { command: 'funcpipe ask "How far away is the Moon?" --show-prompt', description: "Print the prompt only" }
  ])
)
