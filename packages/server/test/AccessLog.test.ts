/**
 * Request ids and access logs over a real socket: an id for every answer (the client's, its trace id, or a new one),
 * and with a log, one JSON entry per answer that leaves the query's text out unless asked.
 */

import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { HttpClient } from "effect/http"
import type { AccessEntry } from "../src/AccessLog.ts"
import { fixtureIndex, send, serverOver } from "./Fixture.ts"

describe("request ids and access logs", () => {
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
