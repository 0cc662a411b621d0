/**
 * `/mcp` on the server, driven by a client nobody here wrote: the official MCP SDK's, over streamable HTTP. It lists
 * the tools with their input schemas and calls each; bad arguments and unknown documents come back as errors an agent
 * can read; the token guards `/mcp` as it guards the API.
 */

import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { defaultChatSettings, layerChatModel } from "@funcpipe/pipeline/models/openai/OpenAiChat"
import { chunkEvent, fakeChatService } from "@funcpipe/test-kit/FakeChat"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Layer, Redacted } from "effect"
import { baseUrl, fixtureIndex, serverOver, TOKEN } from "./Fixture.ts"

/** An SDK client connected to the server's `/mcp`, closed with the scope. */
const connect = (headers: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const url = new URL(`${yield* baseUrl}/mcp`)
    const client = new Client({ name: "funcpipe-test", version: "1.0.0" })
    const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } })
    yield* Effect.acquireRelease(
      Effect.tryPromise(() => client.connect(transport)),
      () => Effect.promise(() => client.close())
    )
    return client
  })

// biome-ignore lint/suspicious/noExplicitAny: a tool's structured result, explored by the assertions
const structured = (result: unknown): any => (result as { readonly structuredContent?: unknown }).structuredContent

describe("/mcp with the official MCP SDK client", () => {
  it.live("lists search, read and status with their schemas, and answers each from the served index", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const client = yield* connect()
        assert.strictEqual(client.getServerVersion()?.name, "funcpipe")
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.deepStrictEqual(tools.map((t) => t.name).sort(), ["read", "search", "status"])
        const search = tools.find((t) => t.name === "search")!
        assert.deepStrictEqual(Object.keys(search.inputSchema.properties ?? {}).sort(), [
          "mode",
          "query",
          "top_k",
          "where"
        ])
        assert.deepStrictEqual(search.inputSchema.required, ["query"])

        const found = yield* Effect.promise(() =>
          client.callTool({ name: "search", arguments: { query: "Saturn rings", top_k: 2 } })
        )
        assert.notStrictEqual(found.isError, true)
        const results = structured(found).results
        assert.deepStrictEqual(
          results.map((r: { doc_id: string }) => r.doc_id),
          ["cassini", "voyager-1"]
        )
        const [first] = results
        const filtered = yield* Effect.promise(() =>
          client.callTool({ name: "search", arguments: { query: "Saturn", where: 'doc_id = "voyager-1"' } })
        )
        assert.deepStrictEqual(
          structured(filtered).results.map((r: { doc_id: string }) => r.doc_id),
          ["voyager-1"]
        )

        const whole = structured(
          yield* Effect.promise(() => client.callTool({ name: "read", arguments: { doc_id: "cassini" } }))
        )
        assert.strictEqual(whole.title, "Cassini")
        assert.strictEqual(whole.text, "Cassini orbited Saturn for thirteen years and studied its rings and moons.")
        assert.isFalse(whole.truncated)
        const near = structured(
          yield* Effect.promise(() =>
            client.callTool({ name: "read", arguments: { doc_id: "cassini", start: first.start, end: first.end } })
          )
        )
        assert.deepStrictEqual(near.chunks, [{ start: first.start, end: first.end, text: first.passage }])
        assert.isNull(near.text)

        const status = structured(yield* Effect.promise(() => client.callTool({ name: "status", arguments: {} })))
        assert.strictEqual(status.manifest.documents, 4)
        assert.strictEqual(status.manifest.model, "local-sha256")

        // Mistakes come back as errors an agent can read, in the words the API uses.
        const missing = yield* Effect.promise(() => client.callTool({ name: "read", arguments: { doc_id: "pluto" } }))
        assert.isTrue(missing.isError)
        assert.include(JSON.stringify(missing.content), 'there is no document \\"pluto\\" in the index')
        const blank = yield* Effect.promise(() =>
          client.callTool({ name: "search", arguments: { query: "   " } }).then(
            (result) => JSON.stringify(result),
            (error: Error) => error.message
          )
        )
        assert.include(blank, "the query is blank")
      }).pipe(Effect.provide(serverOver(file, { linkSources: true })))
    }).pipe(Effect.scoped)
  )

  it.live("offers ask with the server's chat model, and keeps /mcp behind the server's token", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const fake = yield* fakeChatService(() => ({ events: [chunkEvent("Thirteen years [1]."), "[DONE]"] }))
      const chat = layerChatModel("test-chat", defaultChatSettings(fake.baseUrl)).pipe(
        Layer.provide(NodeHttpClient.layerNodeHttp)
      )
      yield* Effect.gen(function* () {
        const refused = yield* Effect.flip(Effect.scoped(connect()))
        assert.include(String(refused.cause), "needs the header Authorization: Bearer <token>")
        const client = yield* connect({ authorization: `Bearer ${Redacted.value(TOKEN)}` })
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.deepStrictEqual(tools.map((t) => t.name).sort(), ["ask", "read", "search", "status"])
        const answered = structured(
          yield* Effect.promise(() =>
            client.callTool({ name: "ask", arguments: { question: "How long did Cassini orbit Saturn?" } })
          )
        )
        assert.strictEqual(answered.answer, "Thirteen years [1].")
        assert.strictEqual(answered.sources[0].doc_id, "cassini")
        // Without --link-sources, whole documents are not handed out here either (chunks at a span are).
        const whole = yield* Effect.promise(() => client.callTool({ name: "read", arguments: { doc_id: "cassini" } }))
        assert.isTrue(whole.isError)
        assert.include(JSON.stringify(whole.content), "--link-sources")
        const span = yield* Effect.promise(() =>
          client.callTool({ name: "read", arguments: { doc_id: "cassini", end: 1 } })
        )
        assert.strictEqual(structured(span).chunks[0].start, 0)
      }).pipe(Effect.provide(serverOver(file, { chat, token: TOKEN })))
    }).pipe(Effect.scoped)
  )
})
