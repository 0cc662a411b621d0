/**
 * The documented scrape config (docs/operations/prometheus.yml) against a real Prometheus: Debian's `prometheus` on
 * 127.0.0.1 scrapes a running server with the token and answers PromQL about it. Prometheus hands its first targets to
 * its scrapers on a 5-second tick, so the test takes 6 to 7 s: it runs with `npm run test:cluster` (CI runs it).
 */

import { spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Redacted } from "effect"
import { HttpClient } from "effect/http"
import { baseUrl, fixtureIndex, send, serverOver, TOKEN } from "./Fixture.ts"

// CI installs Debian's prometheus package (.ci/run) and must run this test; elsewhere it is skipped without it.
const prometheus = "/usr/bin/prometheus"
const runs = existsSync(prometheus) || process.env["CI"] !== undefined

const QUERIES = 3
const DEADLINE_MILLIS = 60_000

/** A loopback port free a moment ago. */
const freePort = Effect.callback<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as { port: number }).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** docs/operations/prometheus.yml with a 1 s interval, the token read from `tokenFile` and `target` to scrape. */
const scrapeConfig = (tokenFile: string, target: string): string => {
  const documented = readFileSync(
    fileURLToPath(new URL("../../../docs/operations/prometheus.yml", import.meta.url)),
    "utf8"
  )
  return [
    ["scrape_interval: 15s", "scrape_interval: 1s"],
    ["/etc/prometheus/funcpipe-token", tokenFile],
    ["127.0.0.1:7700", target]
  ].reduce((config, [from, to]) => {
    assert.include(config, from!, "the documented scrape config changed: update this test")
    return config.replace(from!, to!)
  }, documented)
}

/** Prometheus on a free loopback port with the config and storage in `dir`; killed (and awaited) with the scope. */
const startPrometheus = (dir: string) =>
  Effect.gen(function* () {
    const port = yield* freePort
    const args = [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn"
    ]
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(prometheus, args, { stdio: ["ignore", "ignore", "pipe"] })),
      (proc) =>
        Effect.callback<void>((resume) => {
          if (proc.exitCode !== null || proc.signalCode !== null) return resume(Effect.void)
          proc.on("exit", () => resume(Effect.void))
          proc.kill("SIGKILL")
        })
    )
    let log = ""
    proc.stderr.on("data", (chunk) => (log += String(chunk)))
    proc.on("error", (error) => (log += String(error)))
    return { url: `http://127.0.0.1:${port}`, exited: () => proc.exitCode !== null, log: () => log }
  })

type Prometheus = Effect.Success<ReturnType<typeof startPrometheus>>

/** The values of an instant query's answer (`/api/v1/query`), one per series. */
const instant = (prom: Prometheus, expr: string) =>
  Effect.gen(function* () {
    const http = yield* HttpClient.HttpClient
    const response = yield* http.get(`${prom.url}/api/v1/query`, { urlParams: { query: expr } })
    const body = (yield* response.json) as { data?: { result?: ReadonlyArray<{ value: [number, string] }> } }
    return (body.data?.result ?? []).map(({ value }) => Number(value[1]))
  })

/**
 * Asks Prometheus `expr` until its answer is the one series `expected`, and fails after DEADLINE_MILLIS. Polled rather
 * than slept on: Prometheus starts listening at once but scrapes first after ~6 s, later on a busy machine.
 */
const answers = (prom: Prometheus, expr: string, expected: number) =>
  Effect.gen(function* () {
    const deadline = Date.now() + DEADLINE_MILLIS
    for (;;) {
      // Not listening yet (or already gone) reads as no answer yet.
      const values = yield* instant(prom, expr).pipe(Effect.orElseSucceed(() => undefined))
      if (values?.length === 1 && values[0] === expected) return
      if (prom.exited() || Date.now() > deadline) {
        assert.fail(`${expr}: wanted [${expected}], last answer ${JSON.stringify(values)}; Prometheus: ${prom.log()}`)
      }
      yield* Effect.sleep(250)
    }
  })

/** The value of `funcpipe_http_requests_total` for the route and status in the server's own /metrics text. */
const served = (text: string, route: string, status: string): number | undefined => {
  const line = text
    .split("\n")
    .find(
      (line) =>
        line.startsWith("funcpipe_http_requests_total{") &&
        line.includes(`route="${route}"`) &&
        line.includes(`status="${status}"`)
    )
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1))
}

describe("Prometheus", () => {
  it.live.skipIf(!runs)(
    "scrapes a running server with the documented config and answers PromQL about it",
    () =>
      Effect.gen(function* () {
        const file = yield* fixtureIndex
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-prometheus-" })
        const bearer = { authorization: `Bearer ${Redacted.value(TOKEN)}` }
        yield* Effect.gen(function* () {
          const target = new URL(yield* baseUrl).host
          yield* fs.writeFileString(`${dir}/token`, Redacted.value(TOKEN))
          yield* fs.writeFileString(`${dir}/prometheus.yml`, scrapeConfig(`${dir}/token`, target))
          const prom = yield* startPrometheus(dir)
          // The queries go while Prometheus starts; its first scrape comes seconds later.
          for (let i = 0; i < QUERIES; i++) {
            assert.strictEqual((yield* send("POST", "/v1/query", { text: "Saturn rings" }, bearer)).status, 200)
          }
          // The server's own count (other tests' servers in this process may have counted before): no query follows,
          // so Prometheus' latest sample must come to exactly this.
          const count = served((yield* send("GET", "/metrics", undefined, bearer)).body as string, "/v1/query", "200")
          assert.isAtLeast(count ?? 0, QUERIES)
          const series = `job="funcpipe",instance="${target}"`
          // Scraped with the token: a refused scrape would leave up at 0 and no funcpipe_ series.
          yield* answers(prom, `up{${series}}`, 1)
          yield* answers(prom, `funcpipe_http_requests_total{${series},route="/v1/query",status="200"}`, count!)
          yield* answers(prom, `funcpipe_index_documents{${series}}`, 4)
        }).pipe(Effect.scoped, Effect.provide(serverOver(file, { token: TOKEN })))
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    DEADLINE_MILLIS * 2
  )
})
