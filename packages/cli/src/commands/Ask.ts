/** `funcpipe ask`: answer a question from the index with a chat model, citing the chunks the answer comes from. */

import { askJson } from "@funcpipe/domain/Ask"
import { DEFAULT_CONTEXT_TOKENS } from "@funcpipe/pipeline/analysis/Prompt"
import { describe } from "@funcpipe/pipeline/models/openai/OpenAiFailures"
import {
  type Answered,
  type AnswerUsage,
  answerParts,
  NO_SOURCES_ANSWER,
  prepareAnswer,
  resolveCitations
} from "@funcpipe/pipeline/programs/Answer"
import { layerIndexStore } from "@funcpipe/pipeline/programs/IndexLocation"
import { layerIndexModel } from "@funcpipe/pipeline/programs/IndexModel"
import { Clock, Console, Effect, FileSystem, Layer, Option, Result, Schema, Stdio, Stream } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { ChatModelMissing, chatChoice, llmFlags } from "../flags/Chat.ts"
import {
  annFlags,
  indexPath,
  json,
  rankingFlags,
  ruleOption,
  serviceFlags,
  where,
  withServiceFlags
} from "../flags/Flags.ts"
import { queryText, STDIN_HINT } from "../flags/QueryText.ts"

/** The chat model could not answer: why, in the provider's words (never with the key). */
export class AnswerFailed extends Schema.TaggedError<AnswerFailed>()("AnswerFailed", { reason: Schema.String }) {
  override get message(): string {
    return `the chat model could not answer: ${this.reason}`
  }
}

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
    ...annFlags,
    where,
    index: indexPath,
    ...llmFlags,
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
    const { prompt } = yield* prepareAnswer(question, input.topK, {
      ...(Option.isSome(input.mode) ? { mode: input.mode.value } : {}),
      ...ruleOption("where", input.where),
      contextTokens: input.contextTokens,
      // A process of its own asks once: it walks only where that reads little (see query).
      once: true,
      ...(input.exact ? { exact: true } : {}),
      ...(Option.isSome(input.annCandidates) ? { annCandidates: input.annCandidates.value } : {}),
      ...(system === undefined ? {} : { system })
    }).pipe(Effect.provide(Layer.provideMerge(withServiceFlags(input)(layerIndexModel), layerIndexStore(input.index))))
    if (input.showPrompt) {
      yield* Console.log(`system:\n${prompt.system}\n\nuser:\n${prompt.user}`)
      return
    }
    const done = (answered: Answered) =>
      Effect.map(Clock.currentTimeMillis, (now) =>
        askJson({ question, ...answered, sources: prompt.sources, millis: now - started })
      )
    if (prompt.sources.length === 0) {
      // Nothing to answer from: the model is not asked.
      const answered: Answered = {
        text: NO_SOURCES_ANSWER,
        citations: [],
        usage: { input: undefined, output: undefined }
      }
      if (input.json) yield* Console.log(JSON.stringify(yield* done(answered)))
      else yield* Console.log(answered.text)
      return
    }
    const chosen = yield* chatChoice(input)
    if (chosen === undefined) return yield* new ChatModelMissing()
    let text = ""
    let usage: AnswerUsage = { input: undefined, output: undefined }
    const pieces = answerParts(prompt).pipe(
      Stream.filterMap((part) => {
        if (part.type === "usage") usage = part.usage
        else text += part.text
        return part.type === "text" ? Result.succeed(part.text) : Result.failVoid
      })
    )
    if (input.json)
      yield* Stream.runDrain(pieces).pipe(
        Effect.provide(chosen.layer),
        Effect.catchTag("AiError", (e) => Effect.fail(new AnswerFailed({ reason: describe(e) })))
      )
    else {
      const stdio = yield* Stdio.Stdio
      yield* Stream.run(pieces, stdio.stdout({ endOnDone: false })).pipe(
        Effect.provide(chosen.layer),
        Effect.catchTag("AiError", (e) => Effect.fail(new AnswerFailed({ reason: describe(e) })))
      )
      yield* Console.log("")
    }
    const answered = yield* done({ text, usage, citations: resolveCitations(text, prompt.sources) })
    if (input.json) {
      yield* Console.log(JSON.stringify(answered))
      return
    }
    yield* Console.log("\nSources:")
    for (const s of prompt.sources) {
      const words = s.text.split(" ").slice(0, 12).join(" ")
      yield* Console.log(
        `[${s.number}] ${s.docId}${s.title === "" ? "" : ` "${s.title}"`}  [${s.start}, ${s.end})  ${words}…`
      )
    }
    for (const c of answered.citations) {
      if (!c.known) yield* Console.error(`note: the answer cites [${c.number}], which is not one of the sources`)
    }
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
