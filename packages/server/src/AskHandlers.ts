/**
 * `POST /v1/ask`: the question's chunks from the served snapshot, the prompt made from them, and the server's chat
 * model's answer, whole as JSON or, for `Accept: text/event-stream`, as it comes. A client that goes away ends the
 * answer's stream, which closes the model's request: nothing is paid for that nobody reads.
 */

import { type AskEvent, askJson } from "@funcpipe/domain/Ask"
import type { RetrievalMode } from "@funcpipe/domain/Config"
import { AskDisabled, ChatModelFailed, DEFAULT_ASK_TOP_K, FuncPipeApi } from "@funcpipe/domain/http/Api"
import type { Rule } from "@funcpipe/domain/Rule"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { describe } from "@funcpipe/pipeline/models/openai/OpenAiFailures"
import {
  type AnswerUsage,
  answerParts,
  completeAnswer,
  prepareFromSnapshot,
  resolveCitations
} from "@funcpipe/pipeline/programs/Answer"
import { Clock, Effect, Option, Path, Stream } from "effect"
import { type AiError, LanguageModel } from "effect/ai"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { apiError } from "./Failures.ts"
import { LiveIndex } from "./LiveIndex.ts"

/** The model's failure as the API reports it. */
const modelFailed = (error: AiError.AiError) =>
  new ChatModelFailed({ message: describe(error), reason: error.reason._tag })

/** Whether the client asked for the answer as server-sent events. */
const wantsEvents = (accept: string | undefined) => accept !== undefined && /\btext\/event-stream\b/i.test(accept)

/** How often a quiet stream says it is still there (a comment line), so that proxies do not close it. */
const KEEP_ALIVE = "15 seconds"

/**
 * Events as a server-sent-events answer, each `data` one JSON object. It is not to be cached or held back by a proxy,
 * and while the model thinks a comment line every 15 s keeps the connection from looking idle.
 */
const eventStream = (events: Stream.Stream<AskEvent>) =>
  HttpServerResponse.stream(
    events.pipe(
      Stream.map((event) => `data: ${JSON.stringify(event)}\n\n`),
      Stream.merge(
        Stream.map(Stream.tick(KEEP_ALIVE), () => ": waiting\n\n"),
        { haltStrategy: "left" }
      ),
      Stream.encodeText
    ),
    { contentType: "text/event-stream", headers: { "cache-control": "no-cache", "x-accel-buffering": "no" } }
  )

/**
 * Prepares questions against the served snapshot: the chunks `/v1/query` would retrieve (in any mode, with `where`),
 * and the prompt made from them. Needs the `LiveIndex` and the index's `Embedder` where it is made.
 */
export const questionPreparer = Effect.gen(function* () {
  const live = yield* LiveIndex
  const embedder = yield* Embedder
  const path = yield* Path.Path
  return (
    question: string,
    options: { readonly top_k?: number; readonly mode?: RetrievalMode; readonly where?: Rule }
  ) =>
    live
      .use((loaded) =>
        prepareFromSnapshot(loaded.snapshot, live.location, question, options.top_k ?? DEFAULT_ASK_TOP_K, {
          ...(options.mode === undefined ? {} : { mode: options.mode }),
          ...(options.where === undefined ? {} : { where: options.where })
        })
      )
      .pipe(Effect.provideService(Embedder, embedder), Effect.provideService(Path.Path, path))
})

/**
 * The answers group. Its `LanguageModel` is optional: without one (`serve` without `--llm`), a question is answered
 * with 501 and nothing is sent anywhere.
 */
export const AnswersHandlers = HttpApiBuilder.group(
  FuncPipeApi,
  "answers",
  Effect.fn(function* (handlers) {
    const prepare = yield* questionPreparer
    const model = yield* Effect.serviceOption(LanguageModel.LanguageModel)
    return handlers.handle("ask", ({ payload, request }) =>
      Effect.gen(function* () {
        if (Option.isNone(model)) {
          return yield* new AskDisabled({
            message:
              "this server has no chat model to answer with; start it with --llm openai:<model> (see docs/answers.md)"
          })
        }
        const started = yield* Clock.currentTimeMillis
        const { prompt } = yield* prepare(payload.text, payload).pipe(Effect.mapError((e) => apiError(e)))
        const finished = (answered: { text: string; usage: AnswerUsage }) =>
          Effect.map(Clock.currentTimeMillis, (now) =>
            askJson({
              question: payload.text,
              text: answered.text,
              usage: answered.usage,
              citations: resolveCitations(answered.text, prompt.sources),
              sources: prompt.sources,
              millis: now - started
            })
          )
        if (!wantsEvents(request.headers["accept"])) {
          const answered = yield* completeAnswer(prompt).pipe(
            Effect.provideService(LanguageModel.LanguageModel, model.value),
            Effect.mapError(modelFailed)
          )
          return yield* finished(answered)
        }
        if (prompt.sources.length === 0) {
          const answered = yield* completeAnswer(prompt).pipe(
            Effect.provideService(LanguageModel.LanguageModel, model.value),
            Effect.mapError(modelFailed)
          )
          const event: AskEvent = { type: "done", ...(yield* finished(answered)) }
          return eventStream(Stream.succeed(event))
        }
        let text = ""
        let usage: AnswerUsage = { input: undefined, output: undefined }
        const tokens = answerParts(prompt).pipe(
          Stream.flatMap((part): Stream.Stream<AskEvent> => {
            if (part.type === "usage") {
              usage = part.usage
              return Stream.empty
            }
            text += part.text
            return Stream.succeed({ type: "token", text: part.text })
          }),
          Stream.provideService(LanguageModel.LanguageModel, model.value)
        )
        const done = Stream.fromEffect(
          Effect.suspend(() => finished({ text, usage })).pipe(
            Effect.map((json): AskEvent => ({ type: "done", ...json }))
          )
        )
        return eventStream(
          Stream.concat(tokens, done).pipe(
            Stream.catch((e) => {
              const failed = modelFailed(e)
              return Stream.succeed<AskEvent>({ type: "error", message: failed.message, reason: failed.reason })
            })
          )
        )
      })
    )
  })
)
