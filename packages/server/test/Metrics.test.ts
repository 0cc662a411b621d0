/**
 * `GET /metrics` over a real socket: Prometheus' text format, behind the token, counting answers by route and status,
 * refusals by reason, and the served index's figures.
 */

import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { checkMetrics, promtoolChecks, sample, total } from "@funcpipe/test-kit/PrometheusText"
import { Effect, Redacted } from "effect"
import { fixtureIndex, send, serverOver, TOKEN } from "./Fixture.ts"

describe("GET /metrics", () => {
  it.live("counts answers by route and status, refusals by reason, and gives the index's figures", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const bearer = { authorization: `Bearer ${Redacted.value(TOKEN)}` }
      yield* Effect.gen(function* () {
        const before = (yield* send("GET", "/metrics", undefined, bearer)).body as string
        const answered = sample(before, "funcpipe_http_requests_total", { route: "/v1/query", status: "200" }) ?? 0
        const lexical = sample(before, "funcpipe_query_stage_seconds_count", { stage: "postings" }) ?? 0
        const fetched = sample(before, "funcpipe_query_stage_seconds_count", { stage: "fetch" }) ?? 0
        const unauthorized = sample(before, "funcpipe_http_requests_refused_total", { reason: "unauthorized" }) ?? 0
        for (let i = 0; i < 3; i++) yield* send("POST", "/v1/query", { text: "Saturn rings" }, bearer)
        assert.strictEqual((yield* send("POST", "/v1/query", { text: "moon" })).status, 401)
        // The scrape itself needs the token, as the API does.
        assert.strictEqual((yield* send("GET", "/metrics")).status, 401)
        const scraped = yield* send("GET", "/metrics", undefined, bearer)
        assert.strictEqual(scraped.status, 200)
        assert.match(scraped.headers["content-type"] ?? "", /^text\/plain; version=0\.0\.4/)
        const text = scraped.body as string
        assert.strictEqual(
          sample(text, "funcpipe_http_requests_total", { route: "/v1/query", status: "200" }),
          answered + 3
        )
        assert.strictEqual(
          sample(text, "funcpipe_http_requests_refused_total", { reason: "unauthorized" }),
          unauthorized + 2
        )
        assert.include(text, "# TYPE funcpipe_http_request_duration_seconds histogram")
        assert.isAtLeast(
          total(text, "funcpipe_http_request_duration_seconds_count", { route: "/v1/query" }),
          answered + 3
        )
        assert.strictEqual(sample(text, "funcpipe_index_documents"), 4)
        // The queries' stages: each lexical query scored its postings once and fetched its results once.
        assert.strictEqual(sample(text, "funcpipe_query_stage_seconds_count", { stage: "postings" }), lexical + 3)
        assert.strictEqual(sample(text, "funcpipe_query_stage_seconds_count", { stage: "fetch" }), fetched + 3)
        assert.include(text, "# TYPE funcpipe_chunk_cache_lookups_total counter")
        // Query latency by mode too; the index's size on disk and how many states were served.
        assert.isAtLeast(
          sample(text, "funcpipe_http_request_duration_seconds_count", { route: "/v1/query", mode: "lexical" }) ?? 0,
          3
        )
        assert.isAbove(sample(text, "funcpipe_index_bytes") ?? 0, 4096)
        assert.isAtLeast(sample(text, "funcpipe_snapshot_generation") ?? 0, 1)
        assert.strictEqual(sample(text, "funcpipe_ready"), 1)
        assert.isAtLeast(sample(text, "funcpipe_http_requests_in_flight") ?? -1, 0)
      }).pipe(Effect.provide(serverOver(file, { token: TOKEN })))
    }).pipe(Effect.scoped)
  )
  it.live.skipIf(!promtoolChecks)("passes promtool check metrics (Prometheus' own reading of the format)", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        yield* send("POST", "/v1/query", { text: "Saturn rings" })
        yield* send("POST", "/v1/query", { text: "" })
        const text = (yield* send("GET", "/metrics")).body as string
        const checked = checkMetrics(text)
        assert.strictEqual(checked.status, 0, checked.output)
        assert.strictEqual(checked.output.trim(), "")
      }).pipe(Effect.provide(serverOver(file)))
    }).pipe(Effect.scoped)
  )
  it.live("names in its Grafana dashboard only metrics the server gives", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const dashboard = readFileSync(
        fileURLToPath(new URL("../../../docs/operations/grafana-dashboard.json", import.meta.url)),
        "utf8"
      )
      const named = new Set(
        [...dashboard.matchAll(/funcpipe_[a-z_]+/g)].map(([name]) => name.replace(/_(bucket|sum|count)$/, ""))
      )
      assert.isAtLeast(named.size, 6)
      yield* Effect.gen(function* () {
        yield* send("POST", "/v1/query", { text: "Saturn rings" })
        // A refusal, so that the refusals' counter has a sample to show.
        yield* send("POST", "/v1/query", '{"text":"x"}', { origin: "https://elsewhere.example" })
        const text = (yield* send("GET", "/metrics")).body as string
        for (const name of named) assert.include(text, `# TYPE ${name} `, `the dashboard's ${name}`)
      }).pipe(Effect.provide(serverOver(file)))
    }).pipe(Effect.scoped)
  )
})
