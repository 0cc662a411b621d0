/** `funcpipe ask` over the sample corpus, with a fake OpenAI-compatible chat service on 127.0.0.1. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { chunkEvent, fakeChatService } from "@funcpipe/test-kit/FakeChat"
import { ConfigProvider, Effect, FileSystem, Layer } from "effect"
import { TestConsole } from "effect/testing"
import { printed, run, sampleIndex } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))

describe("funcpipe ask", () => {
  it.effect("answers from the index with the model, citing its sources, in --json", () =>
    Effect.gen(function* () {
      const index = yield* sampleIndex()
      const fake = yield* fakeChatService(() => ({
        events: [chunkEvent("Voyager 1 is in interstellar space [1]"), chunkEvent(", see also [9]."), "[DONE]"]
      }))
      const out = yield* printed([
        "ask",
        "Which probe reached interstellar space?",
        "--index",
        index,
        "--llm",
        "openai:test-chat",
        "--llm-url",
        fake.baseUrl,
        "--json"
      ])
      const answer = JSON.parse(out)
      assert.strictEqual(answer.answer, "Voyager 1 is in interstellar space [1], see also [9].")
      const first = answer.sources[0]
      assert.strictEqual(first.doc_id, "voyager-1")
      // Citations resolve to their source's span; one naming no source is kept, flagged.
      assert.deepStrictEqual(answer.citations, [
        { number: 1, known: true, doc_id: "voyager-1", start: first.start, end: first.end },
        { number: 9, known: false, doc_id: null, start: null, end: null }
      ])
      assert.deepStrictEqual(Object.keys(answer).sort(), [
        "answer",
        "citations",
        "millis",
        "question",
        "sources",
        "usage"
      ])
      const sent = fake.seen[0]!.body["messages"] as ReadonlyArray<{ role: string; content: string }>
      assert.include(sent[1]!.content, "[1] Voyager 1 (voyager-1)")
      assert.strictEqual(fake.seen[0]!.body["model"], "test-chat")
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )

  it.effect("prints the prompt with --show-prompt and sends nothing; says how to name a model without one", () =>
    Effect.gen(function* () {
      const index = yield* sampleIndex()
      const fake = yield* fakeChatService(() => ({ status: 500, body: "{}" }))
      const shown = yield* printed(["ask", "How far away is the Moon?", "--index", index, "--show-prompt"])
      assert.match(shown, /^system:\nYou answer questions from the numbered sources/)
      assert.include(shown, "\n\nuser:\nSources:\n\n[1] ")
      assert.include(shown, "Question: How far away is the Moon?")
      assert.strictEqual(fake.seen.length, 0)
      const missing = yield* Effect.flip(run(["ask", "How far away is the Moon?", "--index", index]))
      assert.strictEqual(missing._tag, "ChatModelMissing")
      assert.include(missing.message, "--llm openai:<model>")
      const unknown = yield* Effect.flip(run(["ask", "Moon?", "--index", index, "--llm", "gpt-4"]))
      assert.strictEqual(unknown._tag, "ChatModelUnknown")
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )

  it.effect("answers that the documents do not say when nothing matches, without asking the model", () =>
    Effect.gen(function* () {
      const index = yield* sampleIndex()
      const fake = yield* fakeChatService(() => ({ status: 500, body: "{}" }))
      const out = yield* printed([
        "ask",
        "quasar spectroscopy",
        "--index",
        index,
        "--llm",
        "openai:test-chat",
        "--llm-url",
        fake.baseUrl
      ])
      assert.include(out, "The documents do not say")
      assert.strictEqual(fake.seen.length, 0)
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )

  it.effect("sends the key only as the bearer token: never in what it prints, its errors, or the index", () =>
    Effect.gen(function* () {
      const KEY = "sk-ask-secret-0123456789"
      const fs = yield* FileSystem.FileSystem
      const index = yield* sampleIndex()
      const fake = yield* fakeChatService((n) =>
        n === 1
          ? { events: [chunkEvent("Voyager 1 [1]."), "[DONE]"] }
          : { status: 401, body: `{"error":{"message":"Incorrect API key provided: ${KEY}"}}` }
      )
      const env = ConfigProvider.layer(ConfigProvider.fromEnvRecord({ FUNCPIPE_LLM_KEY: KEY }))
      const args = ["ask", "Which probe reached interstellar space?", "--index", index, "--llm", "openai:m"]
      const out = yield* printed([...args, "--llm-url", fake.baseUrl, "--json"]).pipe(Effect.provide(env))
      assert.strictEqual(JSON.parse(out).answer, "Voyager 1 [1].")
      assert.strictEqual(fake.seen[0]!.auth, `Bearer ${KEY}`)
      const refused = yield* Effect.flip(run([...args, "--llm-url", fake.baseUrl]).pipe(Effect.provide(env)))
      assert.strictEqual(refused._tag, "AnswerFailed")
      assert.include(refused.message, "refused")
      const said = [out, refused.message, ...(yield* TestConsole.errorLines).map(String)].join("\n")
      assert.notInclude(said, KEY)
      const stored = Buffer.from(yield* fs.readFile(index)).toString("latin1")
      assert.notInclude(stored, KEY)
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )
})
