/**
 * OpenTelemetry export over OTLP/HTTP: the real command, run in its own process with `OTEL_EXPORTER_OTLP_ENDPOINT`
 * naming a fake collector on 127.0.0.1, sends the spans and metrics of an index run, of a query (its stages as child
 * spans) and of a server's request (joined to the client's `traceparent`, its id the request id), all before it exits.
 * The index run's are sent as OTLP/JSON (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`), the others as protobuf, the default.
 */

import { spawn } from "node:child_process"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { decodeMetricNames, decodeTraces, type Span } from "@funcpipe/test-kit/OtlpTraces"
import { Effect, FileSystem, Path } from "effect"
import { SAMPLE } from "./support/Run.ts"

const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))

/** What the fake collector received: spans with their service's name, and metrics' names. */
interface Received {
  readonly spans: Array<Span>
  readonly metrics: Set<string>
}

/** A fake OTLP/HTTP collector on 127.0.0.1: keeps what is posted to `/v1/traces` and `/v1/metrics`. */
const collector = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ readonly url: string; readonly received: Received; readonly close: () => void }>((resolve) => {
        const received: Received = { spans: [], metrics: new Set() }
        const server = createServer((request, response) => {
          const parts: Array<Buffer> = []
          request.on("data", (part: Buffer) => parts.push(part))
          request.on("end", () => {
            const body = new Uint8Array(Buffer.concat(parts))
            const type = request.headers["content-type"]
            if (request.url === "/v1/traces") received.spans.push(...decodeTraces(body, type))
            else if (request.url === "/v1/metrics")
              for (const name of decodeMetricNames(body, type)) received.metrics.add(name)
            response.writeHead(200, { "content-type": "application/json" }).end("{}")
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resolve({ url: `http://127.0.0.1:${port}`, received, close: () => server.close() })
        })
      })
  ),
  ({ close }) => Effect.sync(close)
)

/** Runs the CLI in its own process with telemetry sent to `endpoint`; its exit code and stderr. */
const runCli = (args: ReadonlyArray<string>, endpoint: string, extra: Record<string, string> = {}) =>
  Effect.promise(
    () =>
      new Promise<{ readonly code: number | null; readonly stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [bin, ...args], {
          stdio: ["ignore", "ignore", "pipe"],
          env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: "", ...extra }
        })
        let stderr = ""
        child.stderr.on("data", (data: Buffer) => void (stderr += data.toString()))
        child.on("exit", (code) => resolve({ code, stderr }))
      })
  )

/**
 * Starts `funcpipe serve` with telemetry sent to `endpoint`, sends one query with `headers`, stops the server with
 * SIGTERM; the answer's `X-Request-Id` and the exit code.
 */
const serveOnce = (index: string, endpoint: string, headers: Record<string, string>) =>
  Effect.promise(
    () =>
      new Promise<{ readonly code: number | null; readonly requestId: string | null; readonly stderr: string }>(
        (resolve, reject) => {
          const child = spawn(process.execPath, [bin, "serve", "--index", index, "--port", "0"], {
            stdio: ["ignore", "ignore", "pipe"],
            env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: "funcpipe-test" }
          })
          let stderr = ""
          let requestId: string | null = null
          child.stderr.on("data", (data: Buffer) => {
            const before = stderr
            stderr += data.toString()
            const url = /listening on (http:\/\/\S+) /.exec(stderr)?.[1]
            if (url === undefined || /listening on/.test(before)) return
            fetch(`${url}/v1/query`, { method: "POST", headers, body: JSON.stringify({ text: "interstellar" }) })
              .then(async (response) => {
                await response.arrayBuffer()
                requestId = response.headers.get("x-request-id")
                child.kill("SIGTERM")
              })
              .catch(reject)
          })
          child.on("exit", (code) => resolve({ code, requestId, stderr }))
        }
      )
  )

const attribute = (span: Span, key: string) => span.attributes.find((a) => a.key === key)?.value

describe("OpenTelemetry export (OTLP/HTTP)", () => {
  it.live(
    "sends an index run's, a query's and a served request's spans and metrics before the process exits",
    () =>
      Effect.gen(function* () {
        const { received, url } = yield* collector
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-otlp-" })
        const index = path.join(dir, "index.db")

        const indexed = yield* runCli(["index", SAMPLE, "--index", index], url, {
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/json"
        })
        assert.strictEqual(indexed.code, 0, indexed.stderr)
        const run = received.spans.find((s) => s.name === "indexPaths")
        assert.isDefined(run, "the index run's span")
        assert.strictEqual(run!.service, "funcpipe") // the default name, OTEL_SERVICE_NAME being empty
        assert.isAbove(Number(attribute(run!, "funcpipe.run.added")?.intValue), 0)
        for (const name of ["funcpipe_index_runs_total", "funcpipe_index_run_duration_seconds"])
          assert.isTrue(received.metrics.has(name), name)

        // Every stage a span of its own (by default only those of a millisecond or more are).
        const queried = yield* runCli(["query", "interstellar", "--index", index], url, {
          FUNCPIPE_TRACE_STAGE_MS: "0"
        })
        assert.strictEqual(queried.code, 0, queried.stderr)
        const query = received.spans.find((s) => s.name === "querySnapshot")
        assert.isDefined(query, "the query's span")
        const stages = received.spans.filter((s) => s.parentSpanId === query!.spanId).map((s) => s.name)
        for (const stage of ["query.analyze", "query.postings", "query.fetch"]) assert.include(stages, stage)
        assert.isTrue(received.metrics.has("funcpipe_query_stage_seconds"))

        // A request joined to the client's trace: the server's span is the child of the client's, and the trace id is
        // the request's id.
        const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
        const parent = "00f067aa0ba902b7"
        const served = yield* serveOnce(index, url, { traceparent: `00-${traceId}-${parent}-01` })
        assert.strictEqual(served.code, 0, served.stderr)
        assert.strictEqual(served.requestId, traceId)
        const request = received.spans.find((s) => s.kind === 2 && s.traceId === traceId)
        assert.isDefined(request, "the request's server span")
        assert.strictEqual(request!.service, "funcpipe-test")
        assert.strictEqual(request!.parentSpanId, parent)
        assert.strictEqual(attribute(request!, "http.request.id")?.stringValue, traceId)
        const answered = received.spans.filter((s) => s.traceId === traceId)
        const querySpan = answered.find((s) => s.name === "querySnapshot")
        assert.isDefined(querySpan, "the served query's span")
        assert.strictEqual(querySpan!.parentSpanId, request!.spanId)
        assert.strictEqual(request!.name, "POST /v1/query")
        // Every stage's time is an attribute of the query's span.
        for (const stage of ["analyze", "postings", "fetch"]) {
          const value = attribute(querySpan!, `funcpipe.stage.${stage}_ms`)
          assert.isAtLeast(Number(value?.["doubleValue"] ?? value?.["intValue"] ?? -1), 0, stage)
        }
        assert.isTrue(received.metrics.has("funcpipe_http_requests_total"))

        // Without a traceparent, the id a client gets is the trace id of the request's span.
        const alone = yield* serveOnce(index, url, {})
        assert.strictEqual(alone.code, 0, alone.stderr)
        assert.match(alone.requestId ?? "", /^[0-9a-f]{32}$/)
        assert.isTrue(received.spans.some((s) => s.kind === 2 && s.traceId === alone.requestId))
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    60_000
  )
})
