/**
 * Answers with sources, as a program other Effect code composes: retrieve the chunks of a question from the index
 * (`querySnapshot`, in any mode, with `where`), build the prompt from them (`buildPrompt`, each merged passage taken as
 * the document has it), then ask the `LanguageModel` for a streamed answer. When nothing is retrieved there is no
 * prompt worth sending: `prepareAnswer` gives no sources, and `NO_SOURCES_ANSWER` is the answer, without the model.
 */

import { Effect, Result, Stream } from "effect"
import { LanguageModel, Prompt } from "effect/ai"
import { chunkViewer, type DocumentText } from "../analysis/Display.ts"
import { buildPrompt, type PromptMessages } from "../analysis/Prompt.ts"
import { IndexStore, readSnapshot } from "../store/IndexStore.ts"
import { openSnapshot, type QueryOptions, querySnapshot } from "./QueryIndex.ts"

/** What `ask` says when the index holds nothing for the question (the model is not asked). */
export const NO_SOURCES_ANSWER = "The documents do not say: nothing in the index matches the question."

export interface AnswerOptions extends QueryOptions {
  /** The most tokens (estimated) the sources may take (see `buildPrompt`). */
  readonly contextTokens?: number
  /** The system message in place of the default one. */
  readonly system?: string
}

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
    Effect.flatMap(openSnapshot(), (snapshot) =>
      Effect.gen(function* () {
        const found = yield* querySnapshot(snapshot, store.location, question, topK, options)
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
        const prompt = yield* readSnapshot(store.location, () =>
          buildPrompt(question, chunks, {
            passageOf,
            ...(options.contextTokens === undefined ? {} : { contextTokens: options.contextTokens }),
            ...(options.system === undefined ? {} : { system: options.system })
          })
        )
        return { found, prompt }
      })
    )
  )
})

/** The prompt's messages as the model takes them: the system message, then the sources and the question. */
export const promptOf = (messages: PromptMessages): Prompt.Prompt =>
  Prompt.make([
    { role: "system", content: messages.system },
    { role: "user", content: messages.user }
  ])

/** The model's answer to `messages`, as it arrives: its text in pieces. */
export const streamAnswer = (messages: PromptMessages) =>
  Stream.unwrap(
    Effect.map(LanguageModel.LanguageModel, (model) =>
      model
        .streamText({ prompt: promptOf(messages) })
        .pipe(Stream.filterMap((part) => (part.type === "text-delta" ? Result.succeed(part.delta) : Result.failVoid)))
    )
  )
