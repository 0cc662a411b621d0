/**
 * The shapes of answers with sources: what `funcpipe ask --json` prints, what `POST /v1/ask` answers, and the events
 * of its stream, as schemas, and the function that builds them. Like `Answer.ts`, no HTTP module is imported here.
 */

import { Schema } from "effect"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** A numbered source of the prompt: a passage of one document (chunks of it that overlap or touch, merged). */
export const AskSource = Schema.Struct({
  number: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({ description: "What the answer cites: [1]…" }),
  doc_id: Schema.String,
  title: Schema.String,
  start: Count.annotate({ description: "Where the passage starts in its document's cleaned text, in code points" }),
  end: Count,
  text: Schema.String.annotate({
    description: "The passage as the model was given it (the document's own words; cut at a word's end if `cut`)"
  }),
  cut: Schema.Boolean
}).annotate({ identifier: "AskSource" })
export type AskSource = typeof AskSource.Type

/** A number the answer cites, resolved to its source; `known: false` flags one that names no source. */
export const AskCitation = Schema.Struct({
  number: Count,
  known: Schema.Boolean,
  doc_id: Schema.NullOr(Schema.String),
  start: Schema.NullOr(Count),
  end: Schema.NullOr(Count)
}).annotate({ identifier: "AskCitation" })

/** The tokens the model reported for the answer (`null` where it reported none). */
export const AskUsage = Schema.Struct({
  input_tokens: Schema.NullOr(Count),
  output_tokens: Schema.NullOr(Count)
}).annotate({ identifier: "AskUsage" })

/** An answer with its sources. */
export const AskResponse = Schema.Struct({
  question: Schema.String,
  answer: Schema.String.annotate({
    description:
      "The model's answer, citing sources as [n]; without sources, a sentence saying the documents do not say"
  }),
  citations: Schema.Array(AskCitation).annotate({ description: "Every number the answer cites, in order first cited" }),
  sources: Schema.Array(AskSource).annotate({ description: "What the model was given, best first" }),
  usage: AskUsage,
  millis: Count.annotate({ description: "Time from the question to the answer's end, in milliseconds" })
}).annotate({
  identifier: "AskResponse",
  examples: [
    {
      question: "How far away is the Moon?",
      answer: "About 384,000 km [1].",
      citations: [{ number: 1, known: true, doc_id: "moon.md", start: 0, end: 52 }],
      sources: [
        {
          number: 1,
          doc_id: "moon.md",
          title: "The Moon",
          start: 0,
          end: 52,
          text: "The Moon The Moon is about 384,000 km from the Earth.",
          cut: false
        }
      ],
      usage: { input_tokens: 212, output_tokens: 9 },
      millis: 840
    }
  ]
})
export type AskResponse = typeof AskResponse.Type

/**
 * One event of a streamed answer (`POST /v1/ask` with `Accept: text/event-stream`, each event's `data` a JSON object):
 * `token` events carry the answer's text as it comes; then one `done` event carries the whole answer with its sources
 * and citations, or one `error` event says why the model stopped (the text sent before it stands).
 */
export const AskEvent = Schema.Union([
  Schema.Struct({ type: Schema.Literal("token"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("done"), ...AskResponse.fields }),
  Schema.Struct({ type: Schema.Literal("error"), message: Schema.String, reason: Schema.String })
]).annotate({ identifier: "AskEvent" })
export type AskEvent = typeof AskEvent.Type

/** A numbered source of a prompt: a passage of one document (`@funcpipe/pipeline`'s `PromptSource`). */
export interface SourcePassage {
  readonly number: number
  readonly docId: string
  readonly title: string
  /** The passage's span in its document's cleaned text, in code points. */
  readonly start: number
  readonly end: number
  readonly text: string
  /** Whether the passage was cut (at a word's end) to fit the budget. */
  readonly cut: boolean
}

/** An answer as the programs give it (`@funcpipe/pipeline`'s `Answered` and `PromptSource`). */
export interface AskView {
  readonly question: string
  readonly text: string
  readonly sources: ReadonlyArray<SourcePassage>
  readonly citations: ReadonlyArray<{
    readonly number: number
    readonly known: boolean
    readonly source: { readonly docId: string; readonly start: number; readonly end: number } | undefined
  }>
  readonly usage: { readonly input: number | undefined; readonly output: number | undefined }
  readonly millis: number
}

/** The JSON of an answer: `ask --json`'s and `/v1/ask`'s. */
export const askJson = (view: AskView): AskResponse => ({
  question: view.question,
  answer: view.text,
  citations: view.citations.map((c) => ({
    number: c.number,
    known: c.known,
    doc_id: c.source?.docId ?? null,
    start: c.source?.start ?? null,
    end: c.source?.end ?? null
  })),
  sources: view.sources.map((s) => ({
    number: s.number,
    doc_id: s.docId,
    title: s.title,
    start: s.start,
    end: s.end,
    text: s.text,
    cut: s.cut
  })),
  usage: { input_tokens: view.usage.input ?? null, output_tokens: view.usage.output ?? null },
  millis: view.millis
})
