/** `funcpipe serve`: refuses to listen beyond loopback without a token, and stops gracefully on SIGTERM. */

import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DocumentSource } from "@funcpipe/pipeline/services/DocumentSource"
import { Models } from "@funcpipe/pipeline/services/Models"
import { DEFAULT_MAX_BODY_BYTES as SERVER_MAX_BODY_BYTES } from "@funcpipe/server/Server"
import { Effect, FileSystem, Layer } from "effect"
import { Command } from "effect/cli"
import { cli, version } from "../src/Cli.ts"
import { DEFAULT_MAX_BODY_BYTES } from "../src/commands/Serve.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })
const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/**
 * Starts `funcpipe serve` in its own process, waits for the line with its address, asks one query, sends SIGTERM
 * and waits for it to exit.
 */
const serveThenStop = (index: string) =>
  Effect.promise(
    () =>
      // biome-ignore lint/suspicious/noExplicitAny: the answer is JSON the assertions explore field by field
      new Promise<{ readonly code: number | null; readonly stderr: string; readonly answer: any }>(
        (resolve, reject) => {
          const child = spawn(process.execPath, [bin, "serve", "--index", index, "--port", "0"], {
            stdio: ["ignore", "pipe", "pipe"]
          })
          let stderr = ""
          // biome-ignore lint/suspicious/noExplicitAny: JSON, explored by the assertions
          let answer: any
          child.stderr.on("data", (data: Buffer) => {
            const before = stderr
            stderr += data.toString()
            const url = /listening on (http:\/\/\S+) /.exec(stderr)?.[1]
            if (url === undefined || /listening on/.test(before)) return
            fetch(`${url}/v1/query`, { method: "POST", body: JSON.stringify({ text: "interstellar", top_k: 1 }) })
              .then((response) => response.json())
              .then((json) => {
                answer = json
                child.kill("SIGTERM")
              }, reject)
          })
          child.on("exit", (code) => resolve({ code, stderr, answer }))
        }
      )
  )

describe("funcpipe serve", () => {
  it.effect("refuses to listen beyond this machine without a token", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(run(["serve", "--host", "0.0.0.0", "--index", "/nonexistent/index.db"]))
      assert.strictEqual(error._tag, "TokenRequired")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect(
    "answers over HTTP and stops on SIGTERM, closing the index",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-serve-" })
        const index = `${dir}/index.db`
        yield* run(["index", sample, "--index", index])
        const { answer, code, stderr } = yield* serveThenStop(index)
        assert.strictEqual(answer.results[0].doc_id, "voyager-1")
        assert.match(stderr, /serving .*index\.db: 17 documents, 17 chunks/)
        assert.match(stderr, /stopping: answering the requests in flight, then closing the index/)
        assert.strictEqual(code, 0, stderr)
      }).pipe(Effect.provide(TestLayer)),
    30_000
  )

  it("shows the server's own body limit as the default of --max-body", () => {
    assert.strictEqual(DEFAULT_MAX_BODY_BYTES, SERVER_MAX_BODY_BYTES)
  })
})

describe("funcpipe serve --cluster and query --shards", () => {
  it.effect("need an index in PostgreSQL, and say so", () =>
    Effect.gen(function* () {
      const runner = yield* Effect.flip(run(["serve", "--cluster", "--index", "/tmp/not-a-database.db"]))
      assert.strictEqual(runner._tag, "ClusterNeedsPostgres")
      assert.match(runner.message, /--cluster serves an index in PostgreSQL/)
      const query = yield* Effect.flip(run(["query", "moon", "--shards", "2", "--index", "/tmp/not-a-database.db"]))
      assert.strictEqual(query._tag, "ShardedQueryUnsupported")
      assert.match(query.message, /--shards cannot be used without a postgres:\/\/ --index/)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("refuse what needs the whole index in one place", () =>
    Effect.gen(function* () {
      const index = "postgres://nobody@127.0.0.1:1/none"
      const error = yield* Effect.flip(run(["query", "moon", "--shards", "2", "--explain", "--index", index]))
      assert.strictEqual(error._tag, "ShardedQueryUnsupported")
      assert.match(error.message, /with --explain or --expand/)
    }).pipe(Effect.provide(TestLayer))
  )
})
