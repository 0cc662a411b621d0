/**
 * Answers with sources, as a program other Effect code composes: retrieve the chunks of a question from the index
 * (`querySnapshot`, in any mode, with `where`), build the prompt from them (`buildPrompt`, each merged passage taken as
 * the document has it), then ask the `LanguageModel` for a streamed answer. When nothing is retrieved there is no
 * prompt worth sending: `prepareAnswer` gives no sources, and `NO_SOURCES_ANSWER` is the answer, without the model.
 */

import { Effect, Result, Stream } from "effect"
import { type AiError, LanguageModel, Prompt } from "effect/ai"
import { chunkViewer, type DocumentText } from "../analysis/Display.ts"
import { buildPrompt, citationsOf, type PromptMessages, type PromptSource } from "../analysis/Prompt.ts"
import { IndexStore, readSnapshot, type Snapshot } from "../store/IndexStore.ts"
import { openSnapshot, type QueryOptions, querySnapshot } from "./QueryIndex.ts"

/** What `ask` says when the index holds nothing for the question (the model is not asked). */
export const NO_SOURCES_ANSWER = "The documents do not say: nothing in the index matches the question."

export interface AnswerOptions extends QueryOptions {
  /** The most tokens (estimated) the sources may take (see `buildPrompt`). */
  readonly contextTokens?: number
  /** The system message in place of the default one. */
  readonly system?: string
}

/** The question's results from `snapshot`, and the prompt made from them (with each merged passage as written). */
export const prepareFromSnapshot = Effect.fn("prepareFromSnapshot")(function* (
  snapshot: Snapshot,
  location: string,
  question: string,
  topK: number,
  options: AnswerOptions = {}
) {
  const found = yield* querySnapshot(snapshot, location, question, topK, options)
  const chunks = found.results.map((r) => ({
    docId: r.chunk.docId,
    title: found.titles.get(r.chunk.docId) ?? "",
    start: r.chunk.start,
    end: r.chunk.end,
    text: r.chunk.text
  }))
  // A merged span's passage as the document has it, through the same viewer results are shown with.
  const viewers = new Map<string, ((start: number, end: number) => { readonly passage: string }) | undefined>()
  const passageOf = (docId: string, start: number, end: number) => {
    if (!viewers.has(docId)) {
      const text: DocumentText | undefined = snapshot.documentText(docId)
      viewers.set(docId, text === undefined ? undefined : chunkViewer(text, snapshot.manifest.cleaner))
    }
    return viewers.get(docId)?.(start, end).passage
  }
  const prompt = yield* readSnapshot(location, () =>
    buildPrompt(question, chunks, {
      passageOf,
      ...(options.contextTokens === undefined ? {} : { contextTokens: options.contextTokens }),
      ...(options.system === undefined ? {} : { system: options.system })
    })
  )
  return { found, prompt }
})

/**
 * The question's results from one snapshot of the index, and the prompt made from them. Needs the index and its
 * model, as `queryIndex` does.
 */
export const prepareAnswer = Effect.fn("prepareAnswer")(function* (
  question: string,
  topK: number,
  options: AnswerOptions = {}
) {
  const store = yield* IndexStore
  return yield* Effect.scoped(
    Effect.flatMap(openSnapshot(), (snapshot) => prepareFromSnapshot(snapshot, store.location, question, topK, options))
  )
})

/** The prompt's messages as the model takes them: the system message, then the sources and the question. */
export const promptOf = (messages: PromptMessages): Prompt.Prompt =>
  Prompt.make([
    { role: "system", content: messages.system },
    { role: "user", content: messages.user }
  ])

/** The tokens the model counted for an answer, where it said (`undefined` where it did not). */
export interface AnswerUsage {
  readonly input: number | undefined
  readonly output: number | undefined
}

/** A piece of a streamed answer: its next text, or (last) what it cost. */
export type AnswerPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "usage"; readonly usage: AnswerUsage }

/** The model's answer to `messages`, as it arrives: its text in pieces, then its usage. */
export const answerParts = (
  messages: PromptMessages
): Stream.Stream<AnswerPart, AiError.AiError, LanguageModel.LanguageModel> =>
  Stream.unwrap(
    Effect.map(LanguageModel.LanguageModel, (model) =>
      model.streamText({ prompt: promptOf(messages) }).pipe(
        Stream.filterMap((part): Result.Result<AnswerPart, void> => {
          if (part.type === "text-delta") return Result.succeed({ type: "text", text: part.delta })
          if (part.type === "finish")
            return Result.succeed({
              type: "usage",
              usage: { input: part.usage.inputTokens.total, output: part.usage.outputTokens.total }
            })
          return Result.failVoid
        })
      )
    )
  )

/** The model's answer to `messages`, as it arrives: its text in pieces. */
export const streamAnswer = (messages: PromptMessages) =>
  answerParts(messages).pipe(
    Stream.filterMap((part) => (part.type === "text" ? Result.succeed(part.text) : Result.failVoid))
  )

/** A whole answer: its text, the sources it cites (unknown numbers flagged), and what it cost. */
export interface Answered {
  readonly text: string
  readonly citations: ReadonlyArray<Citation>
  readonly usage: AnswerUsage
}

/** A number an answer cites: whether the prompt gave such a source, and the source. */
export interface Citation {
  readonly number: number
  readonly known: boolean
  readonly source: PromptSource | undefined
}

/** The citations of `text` against the prompt's sources, each resolved to its source where there is one. */
export const resolveCitations = (text: string, sources: ReadonlyArray<PromptSource>): ReadonlyArray<Citation> =>
  citationsOf(text, sources).map((c) => ({ ...c, source: sources.find((s) => s.number === c.number) }))

/**
 * The model's whole answer to a prepared prompt; `NO_SOURCES_ANSWER` without asking the model when the prompt has no
 * sources.
 */
export const completeAnswer = (
  prompt: PromptMessages
): Effect.Effect<Answered, AiError.AiError, LanguageModel.LanguageModel> =>
  prompt.sources.length === 0
    ? Effect.succeed({ text: NO_SOURCES_ANSWER, citations: [], usage: { input: undefined, output: undefined } })
    : Effect.map(
        Stream.runFold(
          answerParts(prompt),
          () => ({ text: "", usage: { input: undefined, output: undefined } as AnswerUsage }),
          (acc, part) => (part.type === "text" ? { ...acc, text: acc.text + part.text } : { ...acc, usage: part.usage })
        ),
        ({ text, usage }) => ({ text, usage, citations: resolveCitations(text, prompt.sources) })
      )

/**
 * Answers `question` from the index with the `LanguageModel`: retrieve its `topK` best chunks, prompt with them, and
 * collect the model's cited answer. Needs the index (`IndexStore`, and the `Embedder` of its model for vector and
 * hybrid modes) and a `LanguageModel`; the model is not asked when nothing matches.
 */
export const answer = Effect.fn("answer")(function* (question: string, topK: number, options: AnswerOptions = {}) {
  const { found, prompt } = yield* prepareAnswer(question, topK, options)
  const answered = yield* completeAnswer(prompt)
  return { ...answered, found, prompt }
})
