/**
 * The Chat Completions provider against a scripted fake service on 127.0.0.1: streamed and whole answers, usage,
 * retries that honour Retry-After, failures by status, answers that break off or send garbage, and the key kept out of
 * every error.
 */
import { createServer } from "node:net"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { chunkEvent, fakeChatService } from "@funcpipe/test-kit/FakeChat"
import { Effect, Layer, Redacted, Stream } from "effect"
import type { LanguageModel } from "effect/ai"
import { defaultChatSettings, makeChatModel, shownAddress } from "../src/models/openai/OpenAiChat.ts"
import { describe as describeFailure } from "../src/models/openai/OpenAiFailures.ts"

const KEY = "sk-test-secret-key-1234"

const chunk = chunkEvent
const usage = JSON.stringify({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 3 } })

const modelAt = (baseUrl: string) =>
  makeChatModel("test-chat", {
    ...defaultChatSettings(baseUrl, Redacted.make(KEY)),
    retries: 2,
    backoffMillis: 5,
    maxBackoffMillis: 20
  })

const HttpLayer = Layer.merge(NodeHttpClient.layerNodeHttp, NodeServices.layer)

/** The text parts and the finish part of a streamed answer. */
const streamed = (model: LanguageModel.LanguageModel, prompt: string) =>
  Effect.map(Stream.runCollect(model.streamText({ prompt })), (parts) => ({
    text: parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join(""),
    usage: parts.flatMap((p) => (p.type === "finish" ? [p.usage] : []))[0]
  }))

/** The text pieces of a streamed answer that fails, and its failure. */
const brokenAnswer = (model: LanguageModel.LanguageModel) =>
  Effect.gen(function* () {
    const texts: Array<string> = []
    const broke = yield* Effect.flip(
      Stream.runForEach(model.streamText({ prompt: "Q?" }), (part) =>
        Effect.sync(() => void (part.type === "text-delta" && texts.push(part.delta)))
      )
    )
    return { broke, texts }
  })

describe("the Chat Completions provider", () => {
  it.live("streams an answer's text in order, with its usage, sending the model, messages and key", () =>
    Effect.gen(function* () {
      const fake = yield* fakeChatService(() => ({
        events: [chunk("The Moon "), chunk("is far [1]."), usage, "[DONE]"]
      }))
      const model = yield* modelAt(fake.baseUrl)
      const answer = yield* streamed(model, "How far is the Moon?")
      assert.strictEqual(answer.text, "The Moon is far [1].")
      assert.deepStrictEqual([answer.usage?.inputTokens.total, answer.usage?.outputTokens.total], [12, 3])
      assert.strictEqual(fake.seen[0]!.auth, `Bearer ${KEY}`)
      assert.deepStrictEqual(
        [fake.seen[0]!.body["model"], fake.seen[0]!.body["stream"], fake.seen[0]!.body["messages"]],
        ["test-chat", true, [{ role: "user", content: "How far is the Moon?" }]]
      )
    }).pipe(Effect.scoped, Effect.provide(HttpLayer))
  )

  it.live("gives a whole answer when not streaming", () =>
    Effect.gen(function* () {
      const body = JSON.stringify({
        choices: [{ message: { content: "Far [1]." } }],
        usage: { prompt_tokens: 5, completion_tokens: 2 }
      })
      const fake = yield* fakeChatService(() => ({ status: 200, body }))
      const model = yield* modelAt(fake.baseUrl)
      const answer = yield* model.generateText({ prompt: "How far?" })
      assert.strictEqual(answer.text, "Far [1].")
      assert.strictEqual(fake.seen[0]!.body["stream"], false)
    }).pipe(Effect.scoped, Effect.provide(HttpLayer))
  )

  it.live("waits at least what a 429's Retry-After asks, and retries a server error, then answers", () =>
    Effect.gen(function* () {
      const fake = yield* fakeChatService((n) =>
        n === 1
          ? { status: 429, headers: { "retry-after-ms": "120" }, body: '{"error":{"message":"slow down"}}' }
          : n === 2
            ? { status: 503, body: "overloaded" }
            : { events: [chunk("ok"), "[DONE]"] }
      )
      const model = yield* modelAt(fake.baseUrl)
      const started = Date.now()
      const answer = yield* streamed(model, "Q?")
      assert.strictEqual(answer.text, "ok")
      assert.strictEqual(fake.seen.length, 3)
      assert.isAtLeast(Date.now() - started, 120, "the wait the service asked for")
    }).pipe(Effect.scoped, Effect.provide(HttpLayer))
  )

  it.live("fails with typed errors that never show the key: a refused key at once, server errors after every try", () =>
    Effect.gen(function* () {
      const refusing = yield* fakeChatService(() => ({ status: 401, body: `{"error":{"message":"bad key ${KEY}"}}` }))
      const refused = yield* Effect.flip(streamed(yield* modelAt(refusing.baseUrl), "Q?"))
      assert.strictEqual(refused.reason._tag, "AuthenticationError")
      assert.strictEqual(refusing.seen.length, 1)
      const failing = yield* fakeChatService(() => ({ status: 500, body: `{"error":"broken, key ${KEY}"}` }))
      const failed = yield* Effect.flip(streamed(yield* modelAt(failing.baseUrl), "Q?"))
      assert.strictEqual(failed.reason._tag, "InternalProviderError")
      assert.strictEqual(failing.seen.length, 3, "the first try and two more")
      for (const error of [refused, failed]) {
        const shown = `${error.message} ${JSON.stringify(error)} ${String(error.reason)}`
        assert.notInclude(shown, KEY)
        assert.include(shown, "[the key]")
      }
    }).pipe(Effect.scoped, Effect.provide(HttpLayer))
  )

  it.live("reports an answer that breaks off, after the text that came, and an event that is not a chunk", () =>
    Effect.gen(function* () {
      const dropping = yield* fakeChatService(() => ({ events: [chunk("The Moon")], drop: true }))
      const model = yield* modelAt(dropping.baseUrl)
      const { broke, texts } = yield* brokenAnswer(model)
      assert.deepStrictEqual(texts, ["The Moon"])
      assert.strictEqual(broke.reason._tag, "NetworkError")
      assert.strictEqual(dropping.seen.length, 1, "an answer that began is not asked for again")
      const garbled = yield* fakeChatService(() => ({ events: [chunk("ok"), "{not json", "[DONE]"] }))
      const garbage = yield* Effect.flip(streamed(yield* modelAt(garbled.baseUrl), "Q?"))
      assert.strictEqual(garbage.reason._tag, "InvalidOutputError")
    }).pipe(Effect.scoped, Effect.provide(HttpLayer))
  )
  it.live("tries again when the first token is slow to come, and gives up on an answer that stalls midway", () =>
    Effect.gen(function* () {
      // The first request is never answered: its wait ends at the start timeout, and the next try answers.
      const slow = yield* fakeChatService((n) => (n === 1 ? { silent: true } : { events: [chunk("Late"), "[DONE]"] }))
      const quick = { ...defaultChatSettings(slow.baseUrl, Redacted.make(KEY)), timeoutMillis: 150, backoffMillis: 5 }
      const answered = yield* streamed(yield* makeChatModel("test-chat", quick), "Q?")
      assert.strictEqual(answered.text, "Late")
      assert.strictEqual(slow.seen.length, 2)
      // The request given up on is closed, not left open (the fake may see its close after the next request).
      yield* Effect.sleep(5).pipe(Effect.repeat({ until: () => slow.abandoned === 1 }))
      // An answer that starts and then sends nothing more (the connection still open) is lost after the idle limit.
      const stalled = yield* fakeChatService(() => ({ events: [chunk("The Moon")], stall: true }))
      const idle = { ...defaultChatSettings(stalled.baseUrl, Redacted.make(KEY)), idleMillis: 150 }
      const model = yield* makeChatModel("test-chat", idle)
      const { broke, texts } = yield* brokenAnswer(model)
      assert.deepStrictEqual(texts, ["The Moon"])
      assert.strictEqual(broke.reason._tag, "NetworkError")
      assert.include(broke.message, "stopped answering for 0.15 s")
      assert.notInclude(broke.message, KEY)
      // Headers at once, then nothing: the first words are waited for as long as the start, not the idle, limit.
      const mute = yield* fakeChatService(() => ({ events: [], stall: true }))
      const limits = { ...defaultChatSettings(mute.baseUrl), timeoutMillis: 150, idleMillis: 60_000 }
      const silent = yield* Effect.flip(streamed(yield* makeChatModel("test-chat", limits), "Q?"))
      assert.include(silent.message, "began no answer within 0.15 s")
    }).pipe(Effect.scoped, Effect.provide(HttpLayer))
  )
  it.live("says at once, without trying again, when nothing answers at the address", () =>
    Effect.gen(function* () {
      // A port that was free a moment ago and has nobody listening now.
      const port = yield* Effect.callback<number>((resume) => {
        const probe = createServer()
        probe.listen(0, "127.0.0.1", () => {
          const { port } = probe.address() as { readonly port: number }
          probe.close(() => resume(Effect.succeed(port)))
        })
      })
      const model = yield* modelAt(`http://127.0.0.1:${port}/v1`)
      const refused = yield* Effect.flip(streamed(model, "Q?"))
      assert.strictEqual(refused.reason._tag, "NetworkError")
      assert.include(refused.message, "nothing answering (connection refused). Is the service running")
      assert.notInclude(refused.message, "tries")
    }).pipe(Effect.provide(HttpLayer))
  )
  it.live(
    "does not wait when Retry-After asks for longer than the limit, and shows no credentials of the address",
    () =>
      Effect.gen(function* () {
        const fake = yield* fakeChatService(() => ({ status: 429, headers: { "retry-after": "3600" }, body: "{}" }))
        const limited = yield* Effect.flip(streamed(yield* modelAt(fake.baseUrl), "Q?"))
        assert.strictEqual(limited.reason._tag, "RateLimitError")
        assert.include(describeFailure(limited), "asks to wait 3600 s before the next request, longer than the 60 s")
        assert.strictEqual(fake.seen.length, 1)
        assert.strictEqual(shownAddress("https://me:s3cret@llm.example/v1"), "https://llm.example/v1")
        assert.strictEqual(shownAddress("http://127.0.0.1:11434/v1"), "http://127.0.0.1:11434/v1")
      }).pipe(Effect.scoped, Effect.provide(HttpLayer))
  )
})
