/**
 * Answers with sources in a program of its own: the notes indexed into a temporary index, then `answer` (retrieve,
 * prompt, ask the model, resolve the citations). `answer` needs an index and a `LanguageModel`, any of them: with
 * FUNCPIPE_LLM=openai:<model> (and FUNCPIPE_LLM_URL, FUNCPIPE_LLM_KEY) it is a real chat service; without, a small
 * model of this file's own that quotes the best source, so the example runs offline.
 */
import { NodeHttpClient, NodeRuntime, NodeServices } from "@effect/platform-node"
import { RawDoc } from "@funcpipe/domain"
import { answer, defaultChatSettings, Embedder, layerChatModel, layerSqlite, putDocuments } from "@funcpipe/pipeline"
import { Config, Console, Effect, FileSystem, Layer, Option, Path, Schema, Stream } from "effect"
import { LanguageModel, type Prompt, type Response } from "effect/ai"
import { notes } from "./notes.ts"

const question = "How far away is the Moon?"

/** The last message's text: FuncPipe's prompt puts the numbered sources and the question there. */
const lastText = (prompt: Prompt.Prompt): string => {
  const content = prompt.content.at(-1)?.content ?? ""
  return typeof content === "string"
    ? content
    : content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("")
}

/** The first sentence of source [1], cited: what an extractive answer would say. */
const quoteFirstSource = (prompt: Prompt.Prompt): string => {
  const lines = lastText(prompt).split("\n")
  const passage = lines[lines.findIndex((line) => line.startsWith("[1] ")) + 1] ?? ""
  const sentence = /^.*?[.!?](?=\s|$)/.exec(passage)?.[0] ?? passage
  return `${sentence} [1]`
}

/** A `LanguageModel` without a network: it answers with the first sentence of the best source. */
const quotingModel = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({
    generateText: (options) =>
      Effect.succeed<Array<Response.PartEncoded>>([
        { type: "text", text: quoteFirstSource(options.prompt) },
        { type: "finish", reason: "stop", usage: noUsage }
      ]),
    streamText: (options) =>
      Stream.fromIterable<Response.StreamPartEncoded>([
        { type: "text-start", id: "0" },
        { type: "text-delta", id: "0", delta: quoteFirstSource(options.prompt) },
        { type: "text-end", id: "0" },
        { type: "finish", reason: "stop", usage: noUsage }
      ])
  })
)

const noUsage = {
  inputTokens: { total: undefined, uncached: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: undefined, text: undefined, reasoning: undefined }
}

/** The chat model FUNCPIPE_LLM names at an OpenAI-compatible service, else the quoting one. */
const chatModel = Effect.gen(function* () {
  const named = yield* Config.option(Config.String("FUNCPIPE_LLM"))
  const model = Option.isSome(named) ? /^openai:(.+)$/.exec(named.value)?.[1] : undefined
  if (model === undefined) return quotingModel
  const url = yield* Config.withDefault(Config.String("FUNCPIPE_LLM_URL"), "https://api.openai.com/v1")
  const key = yield* Config.option(Config.Redacted("FUNCPIPE_LLM_KEY"))
  return layerChatModel(model, defaultChatSettings(url, Option.getOrUndefined(key))).pipe(
    Layer.provide(NodeHttpClient.layerNodeHttp)
  )
})

const main = Effect.gen(function* () {
  const docs = yield* Schema.decodeUnknownEffect(Schema.Array(RawDoc))(notes)
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const folder = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-ask-example-" })
  const index = Layer.mergeAll(layerSqlite(path.join(folder, "index.db")), Embedder.layerLocalSha256)
  const model = yield* chatModel

  const answered = yield* Effect.gen(function* () {
    yield* putDocuments(docs, "notes")
    return yield* answer(question, 4)
  }).pipe(Effect.provide(Layer.merge(index, model)))

  yield* Console.log(`${question}\n${answered.text}\n\nSources:`)
  for (const source of answered.prompt.sources) {
    yield* Console.log(`[${source.number}] ${source.docId} "${source.title}" [${source.start}, ${source.end})`)
  }
  for (const citation of answered.citations) {
    if (!citation.known) yield* Console.log(`(the answer cites [${citation.number}], which is not a source)`)
  }
})

main.pipe(Effect.scoped, Effect.provide(NodeServices.layer), NodeRuntime.runMain)
