/**
 * Request ids and access logs over a real socket: an id for every answer (the client's, its trace id, or a new one),
 * and with a log, one JSON entry per answer that leaves the query's text out unless asked.
 */

import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Tracer } from "effect"
import { HttpClient, HttpServerResponse } from "effect/http"
import { type AccessEntry, requestIdOf } from "../src/AccessLog.ts"
import { remoteParent, spanOutcome } from "../src/Guard.ts"
import { fixtureIndex, send, serverOver } from "./Fixture.ts"

describe("request ids and access logs", () => {
  it("reads the client's span from a W3C traceparent, and nothing from a malformed one", () => {
    const parent = remoteParent(" 00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01")
    assert.deepInclude(parent, {
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      sampled: true
    })
    assert.isFalse(remoteParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled)
    for (const bad of [
      undefined,
      "",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", // no flags
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // a version that is no version
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // no trace
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // no span
      "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01" // a digit short
    ])
      assert.isUndefined(remoteParent(bad), bad)
  })

  it("ends a request's span failed for a 5xx, an interruption (499) or a defect, and not for a client's mistake", () => {
    const ended = (status: number) => spanOutcome(Exit.succeed(HttpServerResponse.empty({ status })))
    assert.deepInclude(ended(200), { status: 200, errorType: undefined })
    assert.strictEqual(ended(404).exit._tag, "Success")
    assert.deepInclude(ended(503), { status: 503, errorType: "503" })
    assert.strictEqual(ended(503).exit._tag, "Failure")
    const interrupted = spanOutcome(Exit.failCause(Cause.interrupt()))
    assert.deepInclude(interrupted, { status: 499, errorType: "499" })
    assert.strictEqual(interrupted.exit._tag, "Failure")
    assert.deepInclude(spanOutcome(Exit.die(new Error("bug"))), { status: 500, errorType: "500" })
  })

  it.live("where traces are exported, each request is a server span, the client's span its parent", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const ended: Array<Tracer.Span> = []
      const recording = Tracer.make({
        span: (options) => {
          const span = Tracer.nativeTracer.span(options)
          const end = span.end.bind(span)
          span.end = (time, exit) => {
            end(time, exit)
            ended.push(span)
          }
          return span
        }
      })
      const [joined, alone, unsampled, bad] = yield* Effect.all([
        send(
          "POST",
          "/v1/query",
          { text: "Saturn rings", top_k: 2 },
          {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
          }
        ),
        send("GET", "/healthz"),
        send(
          "POST",
          "/v1/query",
          { text: "Saturn rings" },
          {
            traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
          }
        ),
        send("POST", "/v1/query", { text: "  " })
      ]).pipe(
        Effect.provideService(HttpClient.TracerPropagationEnabled, false),
        Effect.provide(serverOver(file).pipe(Layer.provide(Layer.succeed(Tracer.Tracer, recording))))
      )
      const requests = ended.filter((span) => span.kind === "server")
      assert.deepStrictEqual(
        requests.map((span) => span.name),
        ["POST /v1/query", "GET /healthz", "POST /v1/query", "POST /v1/query"]
      )
      const [first, second, third, fourth] = requests
      // Joined to the client's trace, its id the request's id; the query's span its child.
      assert.strictEqual(first!.traceId, "4bf92f3577b34da6a3ce929d0e0e4736")
      assert.strictEqual(Option.getOrUndefined(first!.parent)?.spanId, "00f067aa0ba902b7")
      assert.strictEqual(joined.headers["x-request-id"], first!.traceId)
      assert.deepInclude(Object.fromEntries(first!.attributes), {
        "http.request.method": "POST",
        "http.route": "/v1/query",
        "http.response.status_code": 200,
        "http.request.id": first!.traceId
      })
      const query = ended.find((span) => span.name === "querySnapshot" && span.traceId === first!.traceId)
      assert.strictEqual(Option.getOrUndefined(query!.parent)?.spanId, first!.spanId)
      // Without a traceparent, a trace of its own; a client's unsampled trace stays unsampled.
      assert.isTrue(Option.isNone(second!.parent))
      assert.strictEqual(alone.headers["x-request-id"], second!.traceId)
      assert.isFalse(third!.sampled)
      assert.strictEqual(unsampled.headers["x-request-id"], "0af7651916cd43dd8448eb211c80319c")
      // A client's mistake (400) is no failure of the server's span.
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(fourth!.attributes.get("http.response.status_code"), 400)
      assert.strictEqual(fourth!.status._tag === "Ended" && fourth!.status.exit._tag, "Success")
    })
  )

  it("draws a new id for each request without one: 32 hexadecimal digits, never the same twice", () => {
    // More than one pool of random bytes (256 ids) is drawn.
    const ids = Array.from({ length: 1000 }, () => requestIdOf({}))
    for (const id of ids) assert.match(id, /^[0-9a-f]{32}$/)
    assert.strictEqual(new Set(ids).size, ids.length)
  })

  it.live(
    "every answer carries its request's id, and the log has one line per answer, the query's text only if asked",
    () =>
      Effect.gen(function* () {
        const file = yield* fixtureIndex
        const lines: Array<AccessEntry> = []
        const accessLog = (entry: AccessEntry) => Effect.sync(() => void lines.push(entry))
        yield* Effect.gen(function* () {
          const given = yield* send(
            "POST",
            "/v1/query",
            { text: "Saturn rings", top_k: 2 },
            { "x-request-id": "req-42" }
          )
          assert.strictEqual(given.headers["x-request-id"], "req-42")
          // (Without propagation off, the test's own client would send a traceparent of its own.)
          const traced = yield* send("GET", "/healthz", undefined, {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
          }).pipe(Effect.provideService(HttpClient.TracerPropagationEnabled, false))
          assert.strictEqual(traced.headers["x-request-id"], "4bf92f3577b34da6a3ce929d0e0e4736")
          const fresh = yield* send("GET", "/healthz")
          assert.match(fresh.headers["x-request-id"] ?? "", /^[0-9a-f]{32}$/)
          const bad = yield* send("POST", "/v1/query", { text: "  " })
          assert.strictEqual(bad.status, 400)
        }).pipe(Effect.provide(serverOver(file, { accessLog })))
        assert.strictEqual(lines.length, 4)
        const [query, , , refused] = lines
        assert.deepInclude(query, {
          request_id: "req-42",
          method: "POST",
          route: "/v1/query",
          status: 200,
          mode: "lexical"
        })
        assert.strictEqual(query!.results, 2)
        assert.isUndefined(query!.query, "a query's text is not logged unless asked")
        assert.isAtLeast(query!.duration_ms, 0)
        assert.deepInclude(refused, { route: "/v1/query", status: 400 })
        yield* Effect.gen(function* () {
          yield* send("POST", "/v1/query", { text: "Saturn rings" })
        }).pipe(Effect.provide(serverOver(file, { accessLog, logQueries: true })))
        assert.strictEqual(lines.at(-1)!.query, "Saturn rings")
      }).pipe(Effect.scoped)
  )
})
