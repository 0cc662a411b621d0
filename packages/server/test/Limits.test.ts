/**
 * The server's load limits over a real socket: a client past its rate gets 429 with Retry-After, requests past the
 * concurrency limit and its queue get 503 at once, and the probes are never limited.
 */

import { request as httpRequest } from "node:http"
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { defaultChatSettings, layerChatModel } from "@funcpipe/pipeline/models/openai/OpenAiChat"
import { fakeChatService } from "@funcpipe/test-kit/FakeChat"
import { Effect, Layer } from "effect"
import { baseUrl, fixtureIndex, send, serverOver } from "./Fixture.ts"

const query = () => send("POST", "/v1/query", { text: "Saturn rings" })

describe("load limits", () => {
  it.live("a client past its rate gets 429 with Retry-After; the probes are not counted", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        // Three at once, then one a minute: the fourth in a row is refused, whatever the machine's speed.
        const statuses: Array<number> = []
        for (let i = 0; i < 4; i++) statuses.push((yield* query()).status)
        assert.deepStrictEqual(statuses, [200, 200, 200, 429])
        const refused = yield* query()
        assert.strictEqual(refused.body._tag, "RateLimited")
        assert.isAtLeast(Number(refused.headers["retry-after"]), 1)
        assert.strictEqual((yield* send("GET", "/healthz")).status, 200)
        assert.strictEqual((yield* send("GET", "/readyz")).status, 200)
      }).pipe(Effect.provide(serverOver(file, { rateLimit: { perSecond: 1 / 60, burst: 3 } })))
    }).pipe(Effect.scoped)
  )

  it.live("past the requests in flight and the queue, a request gets 503 at once, and a turn freed is taken", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      // A model that never answers holds its question's turn for as long as its client waits.
      const silent = yield* fakeChatService(() => ({ silent: true }))
      const chat = layerChatModel("test-chat", defaultChatSettings(silent.baseUrl)).pipe(
        Layer.provide(NodeHttpClient.layerNodeHttp)
      )
      yield* Effect.gen(function* () {
        const url = new URL(`${yield* baseUrl}/v1/ask`)
        const held = httpRequest(url, { method: "POST", headers: { "content-type": "application/json" } })
        held.on("error", () => undefined)
        held.end(JSON.stringify({ text: "Saturn rings" }))
        // The question holds the one turn once the model has it.
        yield* Effect.sleep(10).pipe(Effect.repeat({ until: () => silent.seen.length === 1 }))
        const shed = yield* query()
        assert.deepStrictEqual([shed.status, shed.body._tag, shed.headers["retry-after"]], [503, "Overloaded", "1"])
        assert.strictEqual((yield* send("GET", "/healthz")).status, 200)
        // The client gives up: its turn is freed, and the next query is answered.
        held.destroy()
        yield* Effect.sleep(10).pipe(
          Effect.andThen(query()),
          Effect.repeat({ until: (answer) => answer.status === 200 })
        )
      }).pipe(Effect.provide(serverOver(file, { chat, concurrency: { inFlight: 1, queue: 0 } })))
    }).pipe(Effect.scoped)
  )
})
