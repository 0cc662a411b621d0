/** funcpipe index and query with an `openai:` model served by a fake OpenAI-compatible service on 127.0.0.1. */

import { createServer } from "node:http"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { listenOnLoopback } from "@funcpipe/test-kit/Loopback"
import { ConfigProvider, Effect, FileSystem, Layer, Path } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, version } from "../src/Cli.ts"
import { embedUsageLine } from "../src/output/Format.ts"

const KEY = "sk-e2e-7d1f0c-must-not-leak"
const DIMENSIONS = 8

/** A bag-of-words vector: each lowercased word adds 1 to one of 8 components chosen by a hash of the word. */
const vectorOf = (text: string): Array<number> => {
  const vector = new Array<number>(DIMENSIONS).fill(0)
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    let h = 7
    for (let i = 0; i < word.length; i++) h = (h * 31 + word.charCodeAt(i)) >>> 0
    vector[h % DIMENSIONS]! += 1
  }
  return vector
}

/** A fake `/v1/embeddings` that wants `Bearer KEY` (its 401 repeats the key it got, as some services do). */
const fakeService = Effect.gen(function* () {
  const requests: Array<ReadonlyArray<string>> = []
  const server = createServer((req, res) => {
    let raw = ""
    req
      .on("data", (chunk) => (raw += chunk))
      .on("end", () => {
        const { input } = JSON.parse(raw) as { input: ReadonlyArray<string> }
        if (req.headers.authorization !== `Bearer ${KEY}`) {
          res.writeHead(401, { "content-type": "application/json" })
          const message = `Incorrect API key provided: ${req.headers.authorization}`
          return void res.end(JSON.stringify({ error: { message } }))
        }
        requests.push(input)
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            data: input.map((text, index) => ({ index, embedding: vectorOf(text) })),
            usage: { prompt_tokens: input.reduce((n, text) => n + text.split(" ").length, 0) }
          })
        )
      })
  })
  const port = yield* listenOnLoopback(server)
  return { baseUrl: `http://127.0.0.1:${port}/v1`, requests }
})

const environment = (vars: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnvRecord(vars))

const TestLayer = Layer.mergeAll(
  DocumentSource.layer,
  Models.layer.pipe(Layer.provide(NodeHttpClient.layerNodeHttpOptions({ keepAlive: true }))),
  environment({ FUNCPIPE_EMBED_KEY: KEY })
).pipe(Layer.provideMerge(NodeServices.layer))

const run = Command.runWith(cli, { version })

/** Runs a command; returns what it printed on stdout and stderr. */
const output = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const [out, err] = [(yield* TestConsole.logLines).length, (yield* TestConsole.errorLines).length]
    yield* run(args)
    return {
      stdout: (yield* TestConsole.logLines).slice(out).map(String).join("\n"),
      stderr: (yield* TestConsole.errorLines).slice(err).map(String).join("\n")
    }
  })

describe("an openai: model", () => {
  it("reports its usage in words, and a local model's not at all", () => {
    const model = "openai:m"
    assert.strictEqual(
      embedUsageLine(1234, { model, requests: 17, inputTokens: 45678 }),
      "embedded 1,234 chunks with openai:m: 17 requests, 45,678 tokens"
    )
    assert.strictEqual(
      embedUsageLine(1, { model, requests: 1, inputTokens: undefined }),
      "embedded 1 chunk with openai:m: 1 request, tokens not reported by the service"
    )
    assert.strictEqual(embedUsageLine(5, { model: "local-sha256", requests: 0, inputTokens: undefined }), undefined)
  })

  it.effect("indexes and queries through the service, reports usage, and never shows or stores the key", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const service = yield* fakeService
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-openai-" })
      const corpus = path.join(dir, "notes")
      const index = path.join(dir, "index", "index.db")
      yield* fs.makeDirectory(corpus)
      yield* fs.writeFileString(path.join(corpus, "saturn.md"), "Saturn has rings of ice and rock.\n")
      yield* fs.writeFileString(path.join(corpus, "moon.md"), "The Moon orbits the Earth every month.\n")
      yield* fs.writeFileString(path.join(corpus, "mars.md"), "Mars is a red and dusty planet.\n")

      const model = ["--model", "openai:fake-model", "--embed-url", service.baseUrl]
      const built = yield* output(["index", corpus, "--index", index, ...model])
      assert.match(built.stdout, /^added 3, updated 0, unchanged 0, deleted 0; 3 chunks written/)
      // One request probes the vector length, one embeds the three chunks.
      assert.match(built.stderr, /^embedded 3 chunks with openai:fake-model: 2 requests, \d+ tokens$/m)
      assert.strictEqual(service.requests.length, 2)

      const status = yield* output(["status", "--index", index])
      assert.include(status.stdout, `model      openai:fake-model (${DIMENSIONS} dimensions)`)

      // The query embeds with the index's model; the address comes from the flag, or from the environment.
      const question = ["query", "icy rings of Saturn", "--index", index, "--json"]
      const byFlag = yield* output([...question, "--embed-url", service.baseUrl])
      const answer = JSON.parse(byFlag.stdout)
      assert.strictEqual(answer.mode, "hybrid")
      assert.strictEqual(answer.results[0].doc_id, "saturn.md")
      const byEnv = yield* output([...question, "--mode", "vector"]).pipe(
        Effect.provide(environment({ FUNCPIPE_EMBED_KEY: KEY, FUNCPIPE_EMBED_URL: service.baseUrl }))
      )
      assert.strictEqual(JSON.parse(byEnv.stdout).results[0].doc_id, "saturn.md")

      // Another address means other settings of the model (with the length given, nothing is asked of it): refused.
      const other = yield* Effect.flip(
        run([...question, "--embed-url", service.baseUrl.replace("127.0.0.1", "127.0.0.2"), "--dimensions", "8"])
      )
      assert.strictEqual(other._tag, "ModelMismatch")
      assert.include(other.message, "openai:fake-model with other settings")

      // A refused key: one line naming the variable; the key the service repeated is blanked out.
      const refused = yield* Effect.flip(
        run(["index", corpus, "--index", index, ...model, "--rebuild"]).pipe(
          Effect.provide(environment({ FUNCPIPE_EMBED_KEY: `${KEY}-old` }))
        )
      )
      assert.strictEqual(refused._tag, "ModelUnavailable")
      assert.include(refused.message, "check the key in FUNCPIPE_EMBED_KEY")
      assert.include(refused.message, "Incorrect API key provided: Bearer [the key]")

      const printed = [...(yield* TestConsole.logLines), ...(yield* TestConsole.errorLines)].map(String).join("\n")
      assert.notInclude(printed + refused.message + other.message, KEY)
      for (const file of yield* fs.readDirectory(path.dirname(index))) {
        const bytes = yield* fs.readFile(path.join(path.dirname(index), file))
        assert.isFalse(Buffer.from(bytes).includes(KEY), `${file} holds the key`)
      }
    }).pipe(Effect.provide(TestLayer))
  )
})
