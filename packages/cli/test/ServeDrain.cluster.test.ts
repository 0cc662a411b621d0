/**
 * `funcpipe serve` stopped with SIGTERM while it answers: every request it had accepted gets its whole answer before
 * the process exits, with 0.
 */

import { spawn } from "node:child_process"
import { createServer, request as httpRequest, type ServerResponse } from "node:http"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { chunkEvent } from "@funcpipe/test-kit/FakeChat"
import { listenOnLoopback } from "@funcpipe/test-kit/Loopback"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Result } from "effect"
import { sampleIndex } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))

/** Questions in flight when the signal comes. */
const N = 20
const ANSWER = "Voyager 1 is in interstellar space [1]."

/**
 * A fake chat service that holds every answer until `release()`, then answers at once (the ones held and any later);
 * `arrived` is done once `n` questions have reached it. It counts the answers whose client went away first.
 */
const heldChatService = (n: number) =>
  Effect.gen(function* () {
    const arrived = Deferred.makeUnsafe<void>()
    const held: Array<ServerResponse> = []
    const state = { seen: 0, released: false, abandoned: 0 }
    const answer = (res: ServerResponse) =>
      res.writeHead(200, { "content-type": "text/event-stream" }).end(`data: ${chunkEvent(ANSWER)}\n\ndata: [DONE]\n\n`)
    const server = createServer((req, res) => {
      res.on("close", () => {
        if (!res.writableFinished) state.abandoned++
      })
      req.resume()
      req.on("end", () => {
        if (++state.seen >= n) Deferred.doneUnsafe(arrived, Exit.void)
        if (state.released) answer(res)
        else held.push(res)
      })
    })
    const port = yield* listenOnLoopback(server)
    return {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      arrived,
      release: () => {
        state.released = true
        for (const res of held.splice(0)) answer(res)
      },
      state
    }
  })

/** `funcpipe serve` in a process of its own for the scope (killed at its end if it still runs). */
const served = (index: string, chatUrl: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(
        process.execPath,
        [bin, "serve", "--index", index, "--port", "0", "--llm", "openai:test-chat", "--llm-url", chatUrl],
        { stdio: ["ignore", "ignore", "pipe"] }
      )
      const output = { stderr: "" }
      child.stderr.on("data", (data: Buffer) => void (output.stderr += data.toString()))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, output, exited }
    }),
    ({ child }) =>
      Effect.sync(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      })
  )

/** The first match of `pattern` in what `process` has written to stderr, once it has; fails if it exits first. */
const written = (process: Effect.Success<ReturnType<typeof served>>, pattern: RegExp) =>
  Effect.callback<RegExpExecArray, Error>((resume) => {
    const check = () => {
      const match = pattern.exec(process.output.stderr)
      if (match !== null) resume(Effect.succeed(match))
    }
    const exit = (code: number | null) =>
      resume(Effect.fail(new Error(`exited (${code}) before writing ${pattern}:\n${process.output.stderr}`)))
    process.child.stderr.on("data", check)
    process.child.on("exit", exit)
    check()
    return Effect.sync(() => {
      process.child.stderr.off("data", check)
      process.child.off("exit", exit)
    })
  }).pipe(Effect.timeout(Duration.seconds(30)))

/** Whether a new connection to `url` is refused (a probe on a connection of its own, closed after its answer). */
const refused = (url: string) =>
  Effect.callback<boolean>((resume) => {
    const probe = httpRequest(`${url}/healthz`, { agent: false }, (response) => {
      response.resume()
      response.on("end", () => resume(Effect.succeed(false)))
    })
    probe.on("error", () => resume(Effect.succeed(true)))
    probe.end()
    return Effect.sync(() => probe.destroy())
  })

/** A question's status and whole JSON answer. */
const ask = (url: string) =>
  Effect.tryPromise(async () => {
    const response = await fetch(`${url}/v1/ask`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "Where is Voyager 1 now?", top_k: 2 })
    })
    // biome-ignore lint/suspicious/noExplicitAny: JSON, explored by the assertions
    return { status: response.status, body: (await response.json()) as any }
  })

describe("funcpipe serve stopped with SIGTERM", () => {
  it.live(
    "answers every request it had accepted, whole, then exits with 0",
    () =>
      Effect.gen(function* () {
        const index = yield* sampleIndex()
        const chat = yield* heldChatService(N)
        const server = yield* served(index, chat.baseUrl)
        const url = (yield* written(server, /listening on (http:\/\/\S+) /))[1]!
        const questions = yield* Effect.forkChild(
          Effect.forEach(Array.from({ length: N }), () => Effect.result(ask(url)), { concurrency: "unbounded" })
        )
        // Every question has been accepted and is being answered: each has reached the model, which holds them.
        yield* Deferred.await(chat.arrived).pipe(Effect.timeout(Duration.seconds(30)))
        server.child.kill("SIGTERM")
        yield* written(server, /stopping: answering the requests in flight/)
        // The server has stopped taking connections, with the questions still in flight; then the model answers.
        yield* Effect.sleep(10).pipe(
          Effect.andThen(refused(url)),
          Effect.repeat({ until: (gone) => gone }),
          Effect.timeout(Duration.seconds(30))
        )
        chat.release()
        const answers = yield* Fiber.join(questions)
        for (const answer of answers) {
          if (Result.isFailure(answer)) assert.fail(`a question got no answer: ${String(answer.failure.cause)}`)
          assert.strictEqual(answer.success.status, 200, JSON.stringify(answer.success.body))
          assert.strictEqual(answer.success.body.answer, ANSWER)
          assert.isAtLeast(answer.success.body.sources.length, 1)
        }
        assert.strictEqual(answers.length, N)
        assert.strictEqual(chat.state.seen, N)
        assert.strictEqual(chat.state.abandoned, 0, "no model request was cut off")
        const code = yield* Effect.promise(() => server.exited)
        assert.strictEqual(code, 0, server.output.stderr)
      }).pipe(Effect.scoped, Effect.provide(TestLayer)),
    60_000
  )
})
