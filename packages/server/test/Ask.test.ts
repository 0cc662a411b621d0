/**
 * `POST /v1/ask` over a real loopback socket, with a scripted fake chat service: a JSON answer, a server-sent-events
 * stream of tokens then the answer, failures of the model as 502 or an `error` event, no model as 501, auth and bad
 * input as `/v1/query`, and a client that goes away closing the model's request.
 */

import { request as httpRequest } from "node:http"
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { defaultChatSettings, layerChatModel } from "@funcpipe/pipeline/models/openai/OpenAiChat"
import { NO_SOURCES_ANSWER } from "@funcpipe/pipeline/programs/Answer"
import { chunkEvent, fakeChatService } from "@funcpipe/test-kit/FakeChat"
import { Effect, Layer, Redacted } from "effect"
import { baseUrl, fixtureIndex, send, serverOver, TOKEN } from "./Fixture.ts"

const KEY = "sk-served-secret-42"

/** The chat model at a fake service, as `serve --llm` would build it. */
const chatAt = (url: string) =>
  layerChatModel("test-chat", { ...defaultChatSettings(url, Redacted.make(KEY)), retries: 1, backoffMillis: 5 }).pipe(
    Layer.provide(NodeHttpClient.layerNodeHttp)
  )

/** The events of a server-sent-events body, each `data` parsed. */
// biome-ignore lint/suspicious/noExplicitAny: events of the stream, explored by each test's assertions
const eventsOf = (body: string): Array<any> =>
  body
    .split("\n\n")
    // Blocks of comment lines only (": waiting") keep a quiet connection alive; they are no events.
    .filter((block) => block.split("\n").some((line) => line.startsWith("data:")))
    .map((block) =>
      JSON.parse(
        block
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).trimStart())
          .join("\n")
      )
    )

const streamed = { accept: "text/event-stream" }

describe("POST /v1/ask", () => {
  it.live("answers with the model from the served index, as JSON or as a stream of tokens then the answer", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const fake = yield* fakeChatService(() => ({
        events: [chunkEvent("Cassini orbited Saturn "), chunkEvent("for thirteen years [1]."), "[DONE]"]
      }))
      yield* Effect.gen(function* () {
        const whole = yield* send("POST", "/v1/ask", { text: "How long did Cassini orbit Saturn?", top_k: 2 })
        assert.strictEqual(whole.status, 200)
        assert.strictEqual(whole.body.answer, "Cassini orbited Saturn for thirteen years [1].")
        assert.strictEqual(whole.body.sources[0].doc_id, "cassini")
        assert.deepStrictEqual(whole.body.citations, [
          { number: 1, known: true, doc_id: "cassini", start: 0, end: whole.body.sources[0].end }
        ])
        const sent = fake.seen[0]!.body["messages"] as ReadonlyArray<{ role: string; content: string }>
        assert.include(sent[1]!.content, "[1] Cassini (cassini)")

        const live = yield* send("POST", "/v1/ask", { text: "How long did Cassini orbit Saturn?" }, streamed)
        assert.strictEqual(live.status, 200)
        assert.match(live.headers["content-type"] ?? "", /^text\/event-stream/)
        assert.strictEqual(live.headers["cache-control"], "no-cache")
        const events = eventsOf(live.body)
        assert.deepStrictEqual(
          events.map((e) => e.type),
          ["token", "token", "done"]
        )
        assert.strictEqual(
          events
            .slice(0, 2)
            .map((e) => e.text)
            .join(""),
          whole.body.answer
        )
        const done = events[2]
        assert.strictEqual(done.answer, whole.body.answer)
        assert.deepStrictEqual(done.sources, whole.body.sources)

        // Nothing matches: the documents do not say, and the model is not asked.
        const before = fake.seen.length
        const none = yield* send("POST", "/v1/ask", { text: "quasar spectroscopy" }, streamed)
        assert.deepStrictEqual(
          eventsOf(none.body).map((e) => [e.type, e.answer]),
          [["done", NO_SOURCES_ANSWER]]
        )
        assert.strictEqual(fake.seen.length, before)
      }).pipe(Effect.provide(serverOver(file, { chat: chatAt(fake.baseUrl) })))
    }).pipe(Effect.scoped)
  )

  it.live("reports the model's failures (502, or an error event after the tokens) without its key", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const refusing = yield* fakeChatService(() => ({
        status: 401,
        body: `{"error":{"message":"Incorrect API key provided: ${KEY}"}}`
      }))
      yield* Effect.gen(function* () {
        const refused = yield* send("POST", "/v1/ask", { text: "Saturn rings" })
        assert.strictEqual(refused.status, 502)
        assert.strictEqual(refused.body._tag, "ChatModelFailed")
        assert.strictEqual(refused.body.reason, "AuthenticationError")
        assert.notInclude(JSON.stringify(refused.body), KEY)
      }).pipe(Effect.provide(serverOver(file, { chat: chatAt(refusing.baseUrl) })))
      const dropping = yield* fakeChatService(() => ({ events: [chunkEvent("Cassini ")], drop: true }))
      yield* Effect.gen(function* () {
        const broke = yield* send("POST", "/v1/ask", { text: "Saturn rings" }, streamed)
        const events = eventsOf(broke.body)
        assert.deepStrictEqual(
          events.map((e) => e.type),
          ["token", "error"]
        )
        assert.strictEqual(events[1].reason, "NetworkError")
        assert.include(events[1].message, "broke off its answer")
      }).pipe(Effect.provide(serverOver(file, { chat: chatAt(dropping.baseUrl) })))
    }).pipe(Effect.scoped)
  )

  it.live("answers 501 without a model, and keeps /v1/query's auth and request checks", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const disabled = yield* send("POST", "/v1/ask", { text: "Saturn rings" })
        assert.strictEqual(disabled.status, 501)
        assert.strictEqual(disabled.body._tag, "AskDisabled")
        assert.include(disabled.body.message, "--llm")
      }).pipe(Effect.provide(serverOver(file)))
      const fake = yield* fakeChatService(() => ({ events: [chunkEvent("x"), "[DONE]"] }))
      yield* Effect.gen(function* () {
        const anonymous = yield* send("POST", "/v1/ask", { text: "Saturn rings" })
        assert.strictEqual(anonymous.status, 401)
        const bearer = { authorization: `Bearer ${Redacted.value(TOKEN)}` }
        const blank = yield* send("POST", "/v1/ask", { text: "  " }, bearer)
        assert.strictEqual(blank.status, 400)
        assert.strictEqual(blank.body.issues[0].path, "text")
        const tooMany = yield* send("POST", "/v1/ask", { text: "Saturn", top_k: 101 }, bearer)
        assert.strictEqual(tooMany.status, 400)
        assert.include(tooMany.body.message, "top_k must be an integer from 1 to 100")
        const misspelt = yield* send("POST", "/v1/ask", { text: "Saturn", topk: 3 }, bearer)
        assert.strictEqual(misspelt.status, 400)
        // A page of another site cannot make the server ask the model (a simple POST needs no preflight).
        const crossSite = yield* send("POST", "/v1/ask", '{"text":"Saturn"}', {
          ...bearer,
          origin: "https://evil.example",
          "content-type": "text/plain"
        })
        assert.strictEqual(crossSite.status, 403)
        assert.strictEqual(crossSite.body._tag, "CrossOrigin")
        assert.strictEqual(fake.seen.length, 0)
      }).pipe(Effect.provide(serverOver(file, { chat: chatAt(fake.baseUrl), token: TOKEN })))
    }).pipe(Effect.scoped)
  )

  it.live("closes the model's request when the client goes away mid-answer", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      // The model sends one piece, then nothing more, its connection open: only the client's leaving ends it.
      const stalled = yield* fakeChatService(() => ({ events: [chunkEvent("Cassini ")], stall: true }))
      yield* Effect.gen(function* () {
        const url = new URL(`${yield* baseUrl}/v1/ask`)
        yield* Effect.callback<void>((resume) => {
          const req = httpRequest(url, { method: "POST", headers: { ...streamed, "content-type": "application/json" } })
          req.on("response", (res) => {
            res.once("data", () => {
              // The first token has come: the client leaves.
              req.destroy()
              resume(Effect.void)
            })
          })
          req.on("error", () => undefined)
          req.end(JSON.stringify({ text: "Saturn rings" }))
        })
        // Waits for the fake to see its answer's client go (the test's own time limit bounds the wait).
        yield* Effect.sleep(10).pipe(Effect.repeat({ until: () => stalled.abandoned === 1 }))
        assert.strictEqual(stalled.seen.length, 1)
      }).pipe(Effect.provide(serverOver(file, { chat: chatAt(stalled.baseUrl) })))
    }).pipe(Effect.scoped)
  )
})
