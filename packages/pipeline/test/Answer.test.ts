/** Answers with sources as a program: retrieval, the prompt made from it, and the model's streamed, cited answer. */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { chunkEvent, fakeChatService } from "@funcpipe/test-kit/FakeChat"
import { Effect, FileSystem, Layer, Redacted, Stream } from "effect"
import { citationsOf } from "../src/analysis/Prompt.ts"
import { Embedder } from "../src/models/Embedder.ts"
import { defaultChatSettings, layerChatModel } from "../src/models/openai/OpenAiChat.ts"
import { NO_SOURCES_ANSWER, prepareAnswer, streamAnswer } from "../src/programs/Answer.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

const Base = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer, NodeHttpClient.layerNodeHttp)

/** An index of two Markdown notes; its file. */
const notesIndex = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-answer-" })
  yield* fs.makeDirectory(`${dir}/notes`)
  yield* fs.writeFileString(`${dir}/notes/moon.md`, "# The Moon\n\nThe Moon is about 384,000 km from the Earth.\n")
  yield* fs.writeFileString(`${dir}/notes/bread.md`, "# Bread\n\nLet the dough rise slowly in a cool kitchen.\n")
  const file = `${dir}/index.db`
  yield* indexPaths([`${dir}/notes`]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), DocumentSource.layer)))
  return file
})

describe("answers with sources", () => {
  it.live("retrieves, prompts with the documents' own words, and streams the model's cited answer", () =>
    Effect.gen(function* () {
      const file = yield* notesIndex
      const { found, prompt } = yield* prepareAnswer("How far away is the Moon?", 3).pipe(
        Effect.provide(layerSqlite(file))
      )
      assert.strictEqual(found.results[0]!.chunk.docId, "moon.md")
      assert.strictEqual(prompt.sources[0]!.docId, "moon.md")
      // The passage as written (capitals, no Markdown), not the cleaned, lower-cased chunk text.
      assert.include(prompt.user, "[1] The Moon (moon.md)\nThe Moon The Moon is about 384,000 km from the Earth.")
      const fake = yield* fakeChatService(() => ({
        events: [chunkEvent("About 384,000 km "), chunkEvent("[1]."), "[DONE]"]
      }))
      const model = layerChatModel("test-chat", defaultChatSettings(fake.baseUrl, Redacted.make("sk-x")))
      const pieces = yield* Stream.runCollect(streamAnswer(prompt)).pipe(Effect.provide(model))
      const text = pieces.join("")
      assert.strictEqual(text, "About 384,000 km [1].")
      assert.deepStrictEqual(citationsOf(text, prompt.sources), [{ number: 1, known: true }])
      const sent = fake.seen[0]!.body["messages"] as ReadonlyArray<{ role: string; content: string }>
      assert.deepStrictEqual(
        sent.map((m) => m.role),
        ["system", "user"]
      )
      assert.strictEqual(sent[1]!.content, prompt.user)
    }).pipe(Effect.scoped, Effect.provide(Base))
  )

  it.live("gives no sources when nothing matches, so no model is asked", () =>
    Effect.gen(function* () {
      const file = yield* notesIndex
      const { prompt } = yield* prepareAnswer("quasar spectroscopy", 3).pipe(Effect.provide(layerSqlite(file)))
      assert.deepStrictEqual(prompt.sources, [])
      assert.include(NO_SOURCES_ANSWER, "do not say")
    }).pipe(Effect.scoped, Effect.provide(Base))
  )
})
