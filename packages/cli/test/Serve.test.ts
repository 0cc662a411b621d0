/** `funcpipe serve`: refuses to listen beyond loopback without a token, stops gracefully on SIGTERM, and (from the launcher) runs in a process that ends with it. */

import { spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer } from "effect"
import { Command } from "effect/cli"
import { cli, version } from "../src/Cli.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })
const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const launcher = fileURLToPath(new URL("../bin/funcpipe.mjs", import.meta.url))
const bundle = fileURLToPath(new URL("../dist/funcpipe.mjs", import.meta.url))
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/**
 * Starts `funcpipe serve` in its own process, waits for the line with its address, asks one query, sends SIGTERM
 * and waits for it to exit.
 */
const serveThenStop = (index: string, entry = bin, signal: NodeJS.Signals = "SIGTERM") =>
  Effect.promise(
    () =>
      new Promise<{
        readonly code: number | null
        readonly stderr: string
        // biome-ignore lint/suspicious/noExplicitAny: the answer is JSON the assertions explore field by field
        readonly answer: any
        /** The processes `entry` had started when it answered (the launcher starts the server as one). */
        readonly children: ReadonlyArray<number>
      }>((resolve, reject) => {
        const child = spawn(process.execPath, [entry, "serve", "--index", index, "--port", "0"], {
          stdio: ["ignore", "pipe", "pipe"]
        })
        let children: ReadonlyArray<number> = []
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
              const listed = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim()
              children = listed === "" ? [] : listed.split(" ").map(Number)
              child.kill(signal)
            }, reject)
        })
        child.on("exit", (code) => resolve({ code, stderr, answer, children }))
      })
  )

/** Whether a process is still running (a zombie counts as gone). */
const running = (pid: number): boolean => {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"))
  } catch {
    return false
  }
}

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

  it.effect.skipIf(process.platform !== "linux")(
    "run from the installed launcher, serves from a process of its own, which ends with the launcher",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        assert.isTrue(existsSync(bundle), "the CLI bundle is missing: run npm run build (npm ci does)")
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-serve-" })
        const index = `${dir}/index.db`
        yield* run(["index", sample, "--index", index])
        const stopped = yield* serveThenStop(index, launcher, "SIGTERM")
        assert.strictEqual(stopped.answer.results[0].doc_id, "voyager-1")
        assert.strictEqual(stopped.code, 0, stopped.stderr)
        assert.match(stopped.stderr, /stopping: answering the requests in flight/)
        assert.strictEqual(stopped.children.length, 1)
        const server = stopped.children[0]!
        assert.isFalse(running(server))
        // Killed outright, the launcher cannot pass anything on: the server sees its channel close and exits.
        const killed = yield* serveThenStop(index, launcher, "SIGKILL")
        assert.strictEqual(killed.children.length, 1)
        const orphan = killed.children[0]!
        yield* Effect.promise(async () => {
          for (let i = 0; i < 200 && running(orphan); i++) await new Promise((r) => setTimeout(r, 50))
        })
        assert.isFalse(running(orphan), "the server outlived its launcher")
      }).pipe(Effect.provide(TestLayer)),
    60_000
  )
})

/** The process ids a process has started, from Linux's `/proc`. */
const childrenOf = (pid: number): ReadonlyArray<number> => {
  try {
    const listed = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim()
    return listed === "" ? [] : listed.split(" ").map(Number)
  } catch {
    return []
  }
}

describe("funcpipe serve under a launcher such as npx", () => {
  it.effect.skipIf(process.platform !== "linux")(
    "stops when the program that started it is stopped with SIGTERM, which does not pass the signal on",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-npx-" })
        const index = `${dir}/index.db`
        yield* run(["index", sample, "--index", index])
        // As npx does: `npm exec` (here a node process whose command line says so) starts the command through
        // `sh -c`, and dies on SIGTERM without a word to it.
        const wrapper = spawn(
          process.execPath,
          [
            "-e",
            `require("node:child_process").spawn("sh", ["-c", ${JSON.stringify(`'${process.execPath}' '${launcher}' serve --index '${index}' --port 0`)}], { stdio: "inherit" }); setInterval(() => {}, 1000)`,
            "npm",
            "exec"
          ],
          { stdio: ["ignore", "pipe", "pipe"] }
        )
        const { launched, server } = yield* Effect.promise(
          () =>
            new Promise<{ readonly launched: number; readonly server: number }>((resolve) => {
              let stderr = ""
              wrapper.stderr.on("data", (data: Buffer) => {
                stderr += data.toString()
                if (!/listening on/.test(stderr)) return
                const shell = childrenOf(wrapper.pid!)[0]!
                const launched = childrenOf(shell)[0] ?? shell
                resolve({ launched, server: childrenOf(launched)[0]! })
              })
            })
        )
        wrapper.kill("SIGTERM")
        yield* Effect.promise(async () => {
          for (let i = 0; i < 400 && (running(launched) || running(server)); i++) {
            await new Promise((r) => setTimeout(r, 50))
          }
        })
        assert.isFalse(running(server), "the server outlived the program that started it")
        assert.isFalse(running(launched), "the launcher outlived the program that started it")
        // Left running on purpose by another program (`nohup funcpipe serve &` from a shell that exits), it runs on.
        const shellLike = spawn(
          process.execPath,
          [
            "-e",
            `require("node:child_process").spawn(process.execPath, ${JSON.stringify([launcher, "serve", "--index", index, "--port", "0"])}, { stdio: "inherit" }); setInterval(() => {}, 1000)`
          ],
          { stdio: ["ignore", "pipe", "pipe"] }
        )
        const kept = yield* Effect.promise(
          () =>
            new Promise<number>((resolve) => {
              let stderr = ""
              shellLike.stderr.on("data", (data: Buffer) => {
                stderr += data.toString()
                if (/listening on/.test(stderr)) resolve(childrenOf(shellLike.pid!)[0]!)
              })
            })
        )
        shellLike.kill("SIGTERM")
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 2_000)))
        assert.isTrue(running(kept), "a launcher not started by npm was stopped with its parent")
        process.kill(kept, "SIGTERM")
        yield* Effect.promise(async () => {
          for (let i = 0; i < 400 && running(kept); i++) await new Promise((r) => setTimeout(r, 50))
        })
      }).pipe(Effect.provide(TestLayer)),
    60_000
  )
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
      assert.match(error.message, /with --explain, --expand or --group doc/)
    }).pipe(Effect.provide(TestLayer))
  )
})
