/**
 * The server's metrics for Prometheus (`GET /metrics`, behind the same token as the API), named and in the units
 * Prometheus' conventions ask for: requests by route and status, their duration by route, requests in flight,
 * requests refused before an answer by reason, and the served index's size and snapshot.
 */

import { stat } from "node:fs/promises"
import { Clock, Effect, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import type { LiveIndex } from "./LiveIndex.ts"

export const requests = Metric.counter("funcpipe_http_requests_total", {
  description: "HTTP requests answered, by route and status"
})

export const duration = Metric.histogram("funcpipe_http_request_duration_seconds", {
  description:
    "Time from a request's arrival to its answer (before a streamed body), by route and, for a query, its mode " +
    "(lexical, vector, hybrid; none for other requests)",
  boundaries: Metric.exponentialBoundaries({ start: 0.0005, factor: 2, count: 16 }) // 0.5 ms … 16 s
})

export const inFlight = Metric.gauge("funcpipe_http_requests_in_flight", {
  description: "HTTP requests being answered now"
})

export const refused = Metric.counter("funcpipe_http_requests_refused_total", {
  description:
    "HTTP requests refused before their handler, by reason (unauthorized, cross_origin, too_large, rate_limited, overloaded)"
})

const documents = Metric.gauge("funcpipe_index_documents", { description: "Documents in the served snapshot" })
const chunks = Metric.gauge("funcpipe_index_chunks", { description: "Chunks in the served snapshot" })
const snapshotAge = Metric.gauge("funcpipe_snapshot_age_seconds", {
  description: "Seconds since the served snapshot was opened"
})
const ready = Metric.gauge("funcpipe_ready", { description: "1 while an index is loaded to answer from, else 0" })
const indexBytes = Metric.gauge("funcpipe_index_bytes", {
  description: "Bytes of the served index file, its write-ahead log included (SQLite indexes only)"
})

/** The route a path counts under: the API's own, with document ids left out, or `other`. */
export const routeOf = (path: string): string => {
  if (path.startsWith("/v1/documents/")) return path.endsWith("/text") ? "/v1/documents/:id/text" : "/v1/documents/:id"
  return KNOWN_ROUTES.has(path) ? path : "other"
}

const KNOWN_ROUTES = new Set([
  "/",
  "/healthz",
  "/readyz",
  "/metrics",
  "/mcp",
  "/docs",
  "/openapi.json",
  "/v1/query",
  "/v1/query/batch",
  "/v1/ask",
  "/v1/status",
  "/v1/documents"
])

/** Counts a request answered with `status` after `seconds`, under its route and (for a query) its mode. */
export const recordAnswer = (route: string, status: number, seconds: number, mode: string | undefined) =>
  Effect.andThen(
    Metric.update(Metric.withAttributes(requests, { route, status: String(status) }), 1),
    Metric.update(Metric.withAttributes(duration, { route, mode: mode ?? "none" }), seconds)
  )

/** The size of an index file and its write-ahead log, or undefined for an index that is not a file. */
const fileBytes = (location: string) =>
  Effect.promise(async () => {
    if (/^postgres(ql)?:\/\//.test(location)) return undefined
    const sizes = await Promise.all(
      [location, `${location}-wal`].map((file) =>
        stat(file).then(
          (s) => s.size,
          () => 0
        )
      )
    )
    return sizes[0] === 0 ? undefined : sizes[0]! + sizes[1]!
  })

/** The body of `GET /metrics`: the index's figures brought up to date, then every metric in Prometheus' format. */
export const scrape = (live: LiveIndex["Service"]) =>
  Effect.gen(function* () {
    const { loaded } = yield* live.state
    const now = yield* Clock.currentTimeMillis
    yield* Metric.update(ready, loaded === undefined ? 0 : 1)
    if (loaded !== undefined) {
      yield* Metric.update(documents, loaded.snapshot.manifest.documents)
      yield* Metric.update(chunks, loaded.snapshot.manifest.chunks)
      yield* Metric.update(snapshotAge, (now - loaded.loadedAt) / 1000)
    }
    const bytes = yield* fileBytes(live.location)
    if (bytes !== undefined) yield* Metric.update(indexBytes, bytes)
    return yield* PrometheusMetrics.format()
  })
