/** Bad requests and limits over a real socket: schema failures, unknown routes, large bodies, tokens, raw bytes. */

import { createHash } from "node:crypto"
import { connect } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { MAX_BATCH } from "@funcpipe/domain/http/Api"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { putDocuments } from "@funcpipe/pipeline/programs/DocumentWrites"
import { layerSqlite } from "@funcpipe/pipeline/store/sqlite/SqliteIndexStore"
import { Effect, Layer, Redacted } from "effect"
import { bearsToken } from "../src/Guard.ts"
import { baseUrl, DOCS, fixtureIndex, send, serverOver, TOKEN } from "./Fixture.ts"

/** Writes raw bytes to the server and resolves with everything it answers until it closes the connection. */
const raw = (url: string, chunks: ReadonlyArray<string>) =>
  Effect.callback<string>((resume) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname)
    let answer = ""
    socket.on("data", (data) => (answer += data.toString("latin1")))
    socket.on("close", () => resume(Effect.succeed(answer)))
    socket.on("error", () => resume(Effect.succeed(answer)))
    socket.on("connect", () => {
      for (const chunk of chunks) socket.write(chunk)
    })
    return Effect.sync(() => socket.destroy())
  })

/** Writes raw bytes and hangs up as soon as they are written, like a client that gives up mid-request. */
const abandon = (url: string, bytes: string) =>
  Effect.callback<void>((resume) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname, () =>
      socket.write(bytes, () => {
        socket.destroy()
        resume(Effect.void)
      })
    )
    socket.on("error", () => resume(Effect.void))
  })

const post = (body: unknown) => send("POST", "/v1/query", body)

describe("bad input", () => {
  it.effect("every schema failure is a 400 naming the field and the problem", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [unknown, string, RegExp]> = [
          [{ text: "moon", top_k: "three" }, "top_k", /number/],
          [{ text: "moon", top_k: 0 }, "top_k", /from 1 to 1000/],
          [{ text: "moon", top_k: 1001 }, "top_k", /from 1 to 1000/],
          [{ text: "moon", top_k: 2.5 }, "top_k", /integer/],
          [{ text: "   " }, "text", /blank/],
          [{ top_k: 3 }, "text", /Missing key/],
          [{ text: "moon", mode: "fuzzy" }, "mode", /vector.*lexical.*hybrid/],
          [{ text: "moon", group: "document" }, "group", /chunk.*doc/],
          [{ text: "moon", b: 2 }, "b", /between 0 and 1/],
          [{ text: "moon", where: "title ^^ y" }, "where", /column \d+/],
          [{ text: "moon", fusion: "max" }, "fusion", /linear.*rrf/],
          [{ text: "moon", expand: "rm4" }, "expand", /bo1.*rm3/],
          [{ text: "moon", alpha: 1.5 }, "alpha", /between 0 and 1/],
          [{ text: "moon", topk: 3 }, "topk", /not a field/],
          [{ text: "x".repeat(10_001) }, "text", /longer than/],
          [[1, 2], "", /JSON object/],
          ["{not json", "", /valid JSON/]
        ]
        for (const [body, path, problem] of cases) {
          const answer = yield* post(body)
          assert.strictEqual(answer.status, 400, JSON.stringify(body).slice(0, 80))
          assert.strictEqual(answer.body._tag, "InvalidRequest")
          const issue = answer.body.issues.find((i: { path: string }) => i.path === path)
          assert.isDefined(issue, `${JSON.stringify(body).slice(0, 80)}: ${JSON.stringify(answer.body)}`)
          assert.match(issue.message, problem)
          assert.notMatch(JSON.stringify(answer.body), /at .*\.ts:\d+|node_modules/, "no stack trace")
        }
        const several = yield* post({ text: " ", top_k: 0, mode: "x" })
        assert.deepStrictEqual(
          several.body.issues.map((i: { path: string }) => i.path),
          ["text", "top_k", "mode"]
        )

        const batch = yield* send("POST", "/v1/query/batch", {
          queries: [{ text: "moon" }, { text: "moon", top_k: -1 }]
        })
        assert.strictEqual(batch.body.issues[0].path, "queries[1].top_k")
        const tooMany = yield* send("POST", "/v1/query/batch", {
          queries: Array.from({ length: MAX_BATCH + 1 }, () => ({ text: "moon" }))
        })
        assert.strictEqual(tooMany.status, 400)
        assert.match(tooMany.body.message, /at most 100 queries/)
      }).pipe(Effect.provide(serverOver(file)))
    })
  )

  it.effect("unknown routes are a JSON 404, a missing index a 503 with the CLI's message", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const unknown = yield* send("GET", "/v2/nothing")
        assert.deepStrictEqual([unknown.status, unknown.body._tag], [404, "NotFound"])
        const wrongMethod = yield* send("GET", "/v1/query")
        assert.strictEqual(wrongMethod.status, 404)
        const ready = yield* send("GET", "/readyz")
        assert.deepStrictEqual([ready.status, ready.body.status], [200, "ready"])
      }).pipe(Effect.provide(serverOver(file)))
      yield* Effect.gen(function* () {
        const missing = yield* post({ text: "moon" })
        assert.deepStrictEqual([missing.status, missing.body.reason], [503, "IndexMissing"])
        assert.match(missing.body.message, /there is no index at .* yet; build one with: funcpipe index/)
        const status = yield* send("GET", "/v1/status")
        assert.deepStrictEqual([status.status, status.body.ready, status.body.manifest], [200, false, null])
        assert.match(status.body.reload_error.message, /there is no index/)
        // Alive, but not ready: a load balancer sends it no queries yet.
        assert.strictEqual((yield* send("GET", "/healthz")).status, 200)
        const notReady = yield* send("GET", "/readyz")
        assert.deepStrictEqual([notReady.status, notReady.body.reason], [503, "IndexMissing"])
      }).pipe(Effect.provide(serverOver(`${file}.absent`)))
    })
  )

  it.effect("an index of another embedding model is a 409 with the CLI's message", () =>
    Effect.gen(function* () {
      const file = `${yield* fixtureIndex}.other-model.db`
      const other = Layer.succeed(
        Embedder,
        Embedder.of({
          model: ModelLabel.make("other-model"),
          dimensions: 16,
          fingerprint: "other-model",
          usage: Effect.succeed({ requests: 0, inputTokens: undefined }),
          embedMany: (texts) =>
            Effect.succeed(
              texts.map(
                () =>
                  new Embedding({
                    vector: [0.5, ...Array<number>(15).fill(0.5)],
                    model: ModelLabel.make("other-model")
                  })
              )
            )
        })
      )
      yield* putDocuments(DOCS, "test").pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), other)))
      yield* Effect.gen(function* () {
        const answer = yield* post({ text: "moon" })
        assert.deepStrictEqual(
          [answer.status, answer.body._tag, answer.body.reason],
          [409, "IndexConflict", "ModelMismatch"]
        )
        assert.match(
          answer.body.message,
          /the index was built with the model "other-model" but the query was embedded with "local-sha256"/
        )
      }).pipe(Effect.provide(serverOver(file)))
    })
  )

  it.effect("a body over the limit is a 413 before it is read, with or without a declared length", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const url = yield* baseUrl
        const big = JSON.stringify({ text: "moon ".repeat(400) })
        const declared = yield* post(big)
        assert.strictEqual(declared.status, 413)
        assert.match(declared.body.message, /larger than the limit of 1024 bytes/)
        // Chunked: no length up front, so the limit cuts the body off as it arrives.
        const chunk = big.slice(0, 1500)
        const chunked = yield* raw(url, [
          "POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
          `${chunk.length.toString(16)}\r\n${chunk}\r\n`,
          `${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`
        ])
        assert.match(chunked, /^HTTP\/1\.1 413/)
        const fine = yield* post({ text: "moon" })
        assert.strictEqual(fine.status, 200, "the server still answers")
      }).pipe(Effect.provide(serverOver(file, { maxBodyBytes: 1024 })))
    })
  )

  it.effect("garbage bytes and a client that stops mid-request do not stop the server", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const url = yield* baseUrl
        const garbage = yield* raw(url, ["\u0000\u0001 not http at all\r\n\r\n"])
        assert.match(garbage, /^HTTP\/1\.1 400/)
        // Headers promise 100 bytes, 10 arrive, then the client goes away.
        yield* abandon(
          url,
          'POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"text":"m'
        )
        const fine = yield* post({ text: "saturn" })
        assert.deepStrictEqual([fine.status, fine.body.results[0].doc_id], [200, "cassini"])
      }).pipe(Effect.provide(serverOver(file)))
    })
  )
})

describe("the token", () => {
  it("is compared in constant time on digests and only accepts the exact token", () => {
    const expected = createHash("sha256").update("abc").digest()
    assert.isTrue(bearsToken("Bearer abc", expected))
    assert.isTrue(bearsToken("bearer   abc", expected))
    assert.isFalse(bearsToken("Bearer abcd", expected))
    assert.isFalse(bearsToken("Basic abc", expected))
    assert.isFalse(bearsToken(undefined, expected))
  })

  it.effect("says why it cannot listen: a port in use (and by whom), an address not here, an unknown host", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const failure = (overrides: Parameters<typeof serverOver>[1]) =>
        Effect.flip(Effect.scoped(Effect.provide(Effect.void, serverOver(file, overrides))))
      yield* Effect.gen(function* () {
        const port = Number(new URL(yield* baseUrl).port)
        const inUse = yield* failure({ port })
        assert.strictEqual(inUse._tag, "ListenFailed")
        assert.match(
          inUse.message,
          new RegExp(`^cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use by pid ${process.pid} `)
        )
        assert.include(inUse.message, "pick another port with --port")
      }).pipe(Effect.provide(serverOver(file)))
      const elsewhere = yield* failure({ host: "192.0.2.1", token: Redacted.make("t") })
      assert.match(elsewhere.message, /192\.0\.2\.1 is not an address of this machine/)
      const unknown = yield* failure({ host: "nonexistent.invalid", token: Redacted.make("t") })
      assert.match(unknown.message, /the host name nonexistent\.invalid is unknown/)
    })
  )

  it.effect("refuses to start with a token no client can send: empty or with white space at an end", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      for (const [host, token] of [
        ["0.0.0.0", ""],
        ["0.0.0.0", " "],
        ["127.0.0.1", ""],
        ["0.0.0.0", " s3cret"]
      ] as const) {
        const refused = yield* Effect.flip(
          Effect.scoped(Effect.provide(Effect.void, serverOver(file, { host, token: Redacted.make(token) })))
        )
        assert.strictEqual(refused._tag, "TokenBlank", JSON.stringify(token))
        assert.match(refused.message, /empty or starts or ends with white space/)
      }
    })
  )

  it.effect("is required beyond loopback, and then on every request but the page and the health probe", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const refused = yield* Effect.flip(
        Effect.scoped(Effect.provide(Effect.void, serverOver(file, { host: "0.0.0.0" })))
      )
      assert.strictEqual(refused._tag, "TokenRequired")
      assert.match(refused.message, /needs a token: pass --token or set FUNCPIPE_TOKEN/)
      yield* Effect.gen(function* () {
        const without = yield* post({ text: "moon" })
        assert.deepStrictEqual([without.status, without.body._tag], [401, "Unauthorized"])
        assert.strictEqual(without.headers["www-authenticate"], "Bearer")
        const wrong = yield* send("POST", "/v1/query", { text: "moon" }, { authorization: "Bearer nope" })
        assert.strictEqual(wrong.status, 401)
        const spec = yield* send("GET", "/openapi.json")
        assert.strictEqual(spec.status, 401)
        const right = yield* send(
          "POST",
          "/v1/query",
          { text: "moon" },
          { authorization: `Bearer ${Redacted.value(TOKEN)}` }
        )
        assert.strictEqual(right.status, 200)
        assert.strictEqual((yield* send("GET", "/healthz")).status, 200)
        assert.strictEqual((yield* send("GET", "/readyz")).status, 200)
        assert.strictEqual((yield* send("GET", "/")).status, 200)
      }).pipe(Effect.provide(serverOver(file, { host: "0.0.0.0", token: TOKEN })))
    })
  )
})
