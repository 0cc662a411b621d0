/**
 * A real `funcpipe index` of a paid remote model killed with SIGKILL while embedding: the index stays as it was, and
 * the run again asks the service only for the texts it had not embedded.
 */

import { type ChildProcess, spawn } from "node:child_process"
import { createServer, type ServerResponse } from "node:http"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { listenOnLoopback } from "@funcpipe/test-kit/Loopback"
import { Effect, FileSystem } from "effect"
import { launcher } from "./support/Launcher.ts"

/** A deterministic 4-component vector per text. */
const vectorOf = (text: string): Array<number> => {
  const vector = [1, 0, 0, 0]
  for (let i = 0; i < text.length; i++) vector[i % 4]! += text.charCodeAt(i) % 7
  return vector
}

/**
 * A fake `/v1/embeddings` that answers the first `answered` requests and then holds the next one open, calling
 * `onHeld`; every request's texts are recorded. `answered` can be raised between runs.
 */
const fakeService = (onHeld: () => void) =>
  Effect.gen(function* () {
    const state = {
      answered: Infinity,
      requests: [] as Array<ReadonlyArray<string>>,
      held: [] as Array<ServerResponse>
    }
    const server = createServer((req, res) => {
      let raw = ""
      req
        .on("data", (chunk) => (raw += chunk))
        .on("end", () => {
          const { input } = JSON.parse(raw) as { input: ReadonlyArray<string> }
          state.requests.push(input)
          if (state.requests.length > state.answered) {
            state.held.push(res)
            return onHeld()
          }
          res.writeHead(200, { "content-type": "application/json" }).end(
            JSON.stringify({
              data: input.map((text, index) => ({ index, embedding: vectorOf(text) })),
              usage: { prompt_tokens: input.length }
            })
          )
        })
    })
    const port = yield* listenOnLoopback(server)
    return { url: `http://127.0.0.1:${port}/v1`, state }
  })

/** Runs the CLI; resolves with its exit code or signal and its stderr. */
const funcpipe = (args: ReadonlyArray<string>, env: Record<string, string>, started?: (proc: ChildProcess) => void) =>
  Effect.callback<{ readonly code: number | null; readonly signal: string | null; readonly stderr: string }>(
    (resume) => {
      const proc = spawn(process.execPath, [launcher, ...args], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "ignore", "pipe"]
      })
      let stderr = ""
      proc.stderr!.on("data", (data: Buffer) => void (stderr += data.toString()))
      proc.on("exit", (code, signal) => resume(Effect.succeed({ code, signal, stderr })))
      started?.(proc)
    }
  )

describe("a paid model's run killed while embedding", () => {
  it.live(
    "leaves the index as it was, and the next run pays only for what it had not embedded",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-killed-" })
        const corpus = Array.from({ length: 300 }, (_, i) =>
          JSON.stringify({ id: `d${i}`, text: `Note ${i}: the probe ${i % 13} saw ${i % 5} moons.` })
        ).join("\n")
        yield* fs.writeFileString(`${dir}/notes.jsonl`, corpus)
        let child: ChildProcess | undefined
        const service = yield* fakeService(() => child?.kill("SIGKILL"))
        const env = { FUNCPIPE_EMBED_URL: service.url, FUNCPIPE_EMBED_KEY: "sk-test", FUNCPIPE_EMBED_DIMENSIONS: "4" }
        const args = ["index", `${dir}/notes.jsonl`, "--index", `${dir}/index.db`, "--model", "openai:fake-model"]

        // Two batches of documents are embedded and answered; the third request is held, and the run killed then.
        service.state.answered = 2
        const killed = yield* funcpipe(args, env, (proc) => (child = proc))
        assert.strictEqual(killed.signal, "SIGKILL", killed.stderr)
        assert.isFalse(yield* fs.exists(`${dir}/index.db`), "the killed run wrote no index")
        const paid = service.state.requests.slice(0, 2).flat()
        assert.isAbove(paid.length, 0)

        service.state.answered = Infinity
        service.state.requests.length = 0
        const again = yield* funcpipe(args, env)
        assert.strictEqual(again.code, 0, again.stderr)
        const asked = service.state.requests.flat()
        assert.deepStrictEqual(
          asked.filter((text) => paid.includes(text)),
          [],
          "nothing embedded before was asked again"
        )
        assert.strictEqual(new Set([...paid, ...asked]).size, 300, "between them the runs embedded every note once")
      }).pipe(Effect.provide(NodeServices.layer)),
    60_000
  )
})
