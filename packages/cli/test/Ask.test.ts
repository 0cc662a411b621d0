/** `funcpipe ask` over the sample corpus, with a fake OpenAI-compatible chat service on 127.0.0.1. */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { chunkEvent, fakeChatService } from "@funcpipe/test-kit/FakeChat"
import { Effect, FileSystem, Layer, Path } from "effect"
import { printed, run } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/** An index of the sample corpus in a fresh folder. */
const sampleIndex = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-ask-" })
  const index = path.join(dir, "index.db")
  yield* run(["index", sample, "--index", index])
  return index
})

describe("funcpipe ask", () => {
  it.effect("answers from the index with the model, citing its sources, in --json", () =>
    Effect.gen(function* () {
      const index = yield* sampleIndex
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
      assert.deepStrictEqual(answer.citations, [
        { number: 1, known: true },
        { number: 9, known: false }
      ])
      assert.strictEqual(answer.sources[0].doc_id, "voyager-1")
      const sent = fake.seen[0]!.body["messages"] as ReadonlyArray<{ role: string; content: string }>
      assert.include(sent[1]!.content, "[1] Voyager 1 (voyager-1)")
      assert.strictEqual(fake.seen[0]!.body["model"], "test-chat")
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )

  it.effect("prints the prompt with --show-prompt and sends nothing; says how to name a model without one", () =>
    Effect.gen(function* () {
      const index = yield* sampleIndex
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
      const index = yield* sampleIndex
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
})
