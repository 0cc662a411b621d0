/**
 * `funcpipe mcp` as an agent runs it: a child process speaking MCP on stdin and stdout, driven by the official MCP
 * SDK's stdio client. Nothing but the protocol may reach stdout; the process ends when the agent closes stdin.
 */

import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Effect, Layer } from "effect"
import { sampleIndex } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))

// biome-ignore lint/suspicious/noExplicitAny: a tool's structured result, explored by the assertions
const structured = (result: unknown): any => (result as { readonly structuredContent?: unknown }).structuredContent

describe("funcpipe mcp", () => {
  it.live(
    "serves search, read and status to the SDK's stdio client, and exits when stdin closes",
    () =>
      Effect.gen(function* () {
        const index = yield* sampleIndex()
        const transport = new StdioClientTransport({
          command: process.execPath,
          args: [bin, "mcp", "--index", index],
          env: { ...process.env } as Record<string, string>,
          stderr: "pipe"
        })
        let stderr = ""
        transport.stderr?.on("data", (data: Buffer) => (stderr += data.toString()))
        const client = new Client({ name: "funcpipe-test", version: "1.0.0" })
        // Anything on stdout that is not the protocol reaches the client as an error.
        const garbled: Array<string> = []
        client.onerror = (error) => void garbled.push(error.message)
        const found = yield* Effect.promise(async () => {
          await client.connect(transport)
          const { tools } = await client.listTools()
          const search = await client.callTool({
            name: "search",
            arguments: { query: "Which probe reached interstellar space?", top_k: 1 }
          })
          const top = structured(search).results[0]
          const read = await client.callTool({
            name: "read",
            arguments: { doc_id: top.doc_id, start: top.start, end: top.end, neighbours: 0 }
          })
          const status = await client.callTool({ name: "status", arguments: {} })
          const pid = transport.pid
          await client.close()
          return {
            tools: tools.map((t) => t.name).sort(),
            top,
            read: structured(read),
            status: structured(status),
            pid
          }
        })
        assert.deepStrictEqual(found.tools, ["read", "search", "status"])
        assert.strictEqual(found.top.doc_id, "voyager-1")
        assert.deepStrictEqual(found.read.chunks, [
          { start: found.top.start, end: found.top.end, text: found.top.passage }
        ])
        assert.isAbove(found.status.manifest.documents, 0)
        assert.include(stderr, "MCP server for")
        assert.deepStrictEqual(garbled, [])
        // Closing the transport closes the child's stdin: the server ends with it.
        yield* Effect.sleep(20).pipe(
          Effect.repeat({
            until: () => {
              try {
                process.kill(found.pid!, 0)
                return false
              } catch {
                return true
              }
            }
          })
        )
      }).pipe(Effect.scoped, Effect.provide(TestLayer)),
    60_000
  )
})
