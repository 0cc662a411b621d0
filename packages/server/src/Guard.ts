/**
 * What every request passes before and after its handler: the bearer token, the body size limit, and the mapping of
 * failures outside the handlers (bad JSON, schema failures, unknown routes, bugs) to JSON answers without internals.
 */

import { createHash, timingSafeEqual } from "node:crypto"
import {
  ByteSize,
  Cause,
  Clock,
  Context,
  Effect,
  Exit,
  Metric,
  Option,
  Redacted,
  References,
  Result,
  SchemaIssue,
  Tracer
} from "effect"
import {
  Headers,
  HttpIncomingMessage,
  HttpRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import { HttpApiError } from "effect/http-api"
import { type AccessEntry, RequestDetails, requestIdOf, traceparentOf } from "./AccessLog.ts"
import { type ConcurrencyLimit, concurrencyLimiter, type RateLimit, type Refusal, rateLimiter } from "./Limits.ts"
import { inFlight, recordAnswer, refused, routeOf } from "./Metrics.ts"

/** How the guard is set up. */
export interface GuardOptions {
  /** The token every request must bear (`Authorization: Bearer <token>`), or none. */
  readonly token: Redacted.Redacted<string> | undefined
  /** The largest request body accepted, in bytes. */
  readonly maxBodyBytes: number
  /** Where bugs are reported (their details never reach the client). */
  readonly reportDefect: (cause: Cause.Cause<unknown>) => Effect.Effect<void>
  /** Requests a second per client (by remote address), if limited. */
  readonly rateLimit?: RateLimit | undefined
  /** Requests answered at once and waiting, if limited. */
  readonly concurrency?: ConcurrencyLimit | undefined
  /** Where each answer's log line goes (`--log-format json`), if anywhere. */
  readonly accessLog?: ((entry: AccessEntry) => Effect.Effect<void>) | undefined
  /** Whether a query's text goes into its log line (`--log-queries`). */
  readonly logQueries?: boolean
}

/** The guard's settings that may change while the server runs (`serve` reloads them on SIGHUP). */
export type GuardSettings = Pick<GuardOptions, "token" | "maxBodyBytes" | "rateLimit" | "concurrency" | "logQueries">

/**
 * The guard's changeable settings, read by every request as it arrives: `set` changes them for the requests after
 * (those being answered finish under the settings they came in with).
 */
export class GuardCell {
  private settings: GuardSettings
  private derived: Derived
  constructor(settings: GuardSettings) {
    this.settings = settings
    this.derived = derive(settings, undefined)
  }
  get current(): GuardSettings {
    return this.settings
  }
  /** What requests arriving from now on are guarded with. */
  get state(): Derived {
    return this.derived
  }
  set(settings: GuardSettings): void {
    this.derived = derive(settings, { settings: this.settings, derived: this.derived })
    this.settings = settings
  }
}

/** What the guard works with, made from its settings. */
interface Derived {
  readonly expected: Buffer | undefined
  readonly limit: ByteSize.ByteSize
  readonly maxBodyBytes: number
  readonly logQueries: boolean
  readonly rates: ReturnType<typeof rateLimiter> | undefined
  readonly turns: ReturnType<typeof concurrencyLimiter> | undefined
}

/** The guard's working state for `settings`; a limit that has not changed keeps its state (buckets, turns). */
const derive = (
  settings: GuardSettings,
  before: { readonly settings: GuardSettings; readonly derived: Derived } | undefined
): Derived => {
  const same = <A>(a: A | undefined, b: A | undefined) => JSON.stringify(a) === JSON.stringify(b)
  return {
    expected: settings.token === undefined ? undefined : digest(Redacted.value(settings.token)),
    limit: ByteSize.bytes(settings.maxBodyBytes),
    maxBodyBytes: settings.maxBodyBytes,
    logQueries: settings.logQueries === true,
    rates:
      before !== undefined && same(before.settings.rateLimit, settings.rateLimit)
        ? before.derived.rates
        : settings.rateLimit === undefined
          ? undefined
          : rateLimiter(settings.rateLimit),
    turns:
      before !== undefined && same(before.settings.concurrency, settings.concurrency)
        ? before.derived.turns
        : settings.concurrency === undefined
          ? undefined
          : concurrencyLimiter(settings.concurrency)
  }
}

/** Paths open without the token: the search page (it holds no data, and asks for the token), and the liveness and
 * readiness probes (load balancers send no token; they say only whether the process runs and has an index loaded). */
const OPEN_PATHS: ReadonlySet<string> = new Set(["/", "/healthz", "/readyz"])

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/** Whether an `Authorization` header bears the token; compares digests in constant time, so timing reveals nothing. */
export const bearsToken = (header: string | undefined, expected: Buffer): boolean => {
  const match = header === undefined ? null : /^Bearer[ \t]+(.+)$/i.exec(header.trim())
  // The comparison runs whether or not the header is well formed, against a digest of the same length.
  const given = digest(match?.[1] ?? "")
  return timingSafeEqual(given, expected) && match !== null
}

const json = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers })

/** The path of a schema issue as a client writes it: `queries[2].top_k`. */
const pathText = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join("")

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** A request whose parts fail the endpoint's schema: 400 with each problem and where it is. */
const invalidRequest = (error: HttpApiError.HttpApiSchemaError) => {
  const issues = formatter(error.cause.issue).issues.map((issue) => {
    const path = pathText((issue.path ?? []).map((p) => (typeof p === "object" ? p.key : p)))
    // The schema's wording names its own types ("Expected QueryRequest") or what it expects rather than what is wrong.
    const message =
      issue.message === "Expected no excess property"
        ? "not a field of this request"
        : /^Expected [A-Z]\w*$/.test(issue.message)
          ? "expected a JSON object"
          : issue.message
    return { path, message }
  })
  const first = issues[0]
  const where = error.kind === "Payload" ? "body" : error.kind === "Params" ? "path" : error.kind.toLowerCase()
  const message =
    first === undefined
      ? `invalid request ${where}`
      : `invalid request ${where}: ${first.path === "" ? "" : `${first.path}: `}${first.message}` +
        (issues.length > 1 ? ` (and ${issues.length - 1} more)` : "")
  return json(400, { _tag: "InvalidRequest", message, issues })
}

const tooLarge = (limit: number) =>
  json(
    413,
    { _tag: "PayloadTooLarge", message: `the request body is larger than the limit of ${limit} bytes` },
    {
      connection: "close"
    }
  )

/** Turns a failure no handler answered into a JSON answer; a bug is reported and answered without its details. */
const answerFailure =
  (options: Pick<GuardOptions, "maxBodyBytes" | "reportDefect">, request: HttpServerRequest.HttpServerRequest) =>
  (cause: Cause.Cause<unknown>) => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
    const defect = Cause.findDefect(cause)
    const failure = Option.orElse(
      Cause.findErrorOption(cause),
      (): Option.Option<unknown> => (Result.isSuccess(defect) ? Option.some(defect.success) : Option.none())
    )
    if (Option.isSome(failure)) {
      const error = failure.value
      if (HttpApiError.HttpApiSchemaError.is(error) && error.kind !== "Body" && error.kind !== "ResponseHeaders") {
        return Effect.succeed(invalidRequest(error))
      }
      if (HttpServerError.isHttpServerError(error)) {
        if (error.reason._tag === "RouteNotFound") {
          return Effect.succeed(
            json(404, {
              _tag: "NotFound",
              message: `there is no ${request.method} ${request.url.split("?")[0]}; the endpoints are listed at /docs`
            })
          )
        }
        if (error.reason._tag === "RequestParseError") {
          return Effect.succeed(
            error.reason.reason === "BodyTooLarge"
              ? tooLarge(options.maxBodyBytes)
              : json(400, { _tag: "InvalidRequest", message: "the request body could not be read", issues: [] })
          )
        }
      }
    }
    return Effect.as(
      options.reportDefect(cause),
      json(500, { _tag: "InternalError", message: "internal error; the server's log has the details" })
    )
  }

/** The path of a document's text as written (`GET /v1/documents/{id}/text`). */
const DOCUMENT_TEXT = /^\/v1\/documents\/[^/]+\/text$/

/** Methods that change nothing, which any page may send. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

/** Whether `origin` is this server's own, as the request's host (or a proxy's forwarded host) names it. */
const sameSite = (origin: string, headers: Headers.Headers): boolean => {
  const hosts = [headers["host"], headers["x-forwarded-host"]].filter((h): h is string => h !== undefined)
  return hosts.some((host) => origin === `http://${host}` || origin === `https://${host}`)
}

/**
 * The guard as a global router middleware. With a `cell`, its token, body limit, rate and concurrency limits and
 * `logQueries` are the cell's, read as each request arrives; without one, the options' own.
 */
export const guard = (options: GuardOptions, cell: GuardCell = new GuardCell(options)) => {
  /** Responses of load shedding, told apart from other 503s for the refusals' count. */
  const overloaded = new WeakSet<HttpServerResponse.HttpServerResponse>()
  const refusedWith = (refusal: Refusal) => {
    const response = json(refusal.status, refusal.body, refusal.headers)
    if (refusal.status === 503) overloaded.add(response)
    return response
  }
  /** A refusal before the handler, counted by its reason. */
  const refusal = (reason: string, response: HttpServerResponse.HttpServerResponse) =>
    Effect.as(Metric.modify(Metric.withAttributes(refused, { reason }), 1), response)
  return HttpRouter.middleware<{ handles: unknown }>()(
    (httpEffect) => {
      const checked = (state: Derived) =>
        Effect.gen(function* () {
          const { expected, limit, maxBodyBytes } = state
          const request = yield* HttpServerRequest.HttpServerRequest
          const open = OPEN_PATHS.has(request.url.split("?")[0]!)
          if (expected !== undefined && !open && !bearsToken(request.headers["authorization"], expected)) {
            const message = "this server needs the header Authorization: Bearer <token>"
            return yield* refusal(
              "unauthorized",
              json(401, { _tag: "Unauthorized", message }, { "www-authenticate": "Bearer" })
            )
          }
          // A web page of another site may send a simple POST here without asking first (its script cannot read the
          // answer, but the request would run: a question costs the chat service's price). Browsers name the page's
          // site in Origin; a request from another one is refused. Clients other than browsers send no Origin.
          const origin = request.headers["origin"]
          if (origin !== undefined && !SAFE_METHODS.has(request.method) && !sameSite(origin, request.headers)) {
            const message = `this server does not take ${request.method} requests from web pages of other sites (Origin: ${origin})`
            return yield* refusal("cross_origin", json(403, { _tag: "CrossOrigin", message }))
          }
          // Refused before a byte of the body is read; a body without a length is cut off at the limit as it streams in.
          const declared = request.headers["content-length"]
          if (declared !== undefined && Number(declared) > maxBodyBytes)
            return yield* refusal("too_large", tooLarge(maxBodyBytes))
          // Every body of this API is JSON: one sent as another type (`curl -d` says form data) is read as JSON too.
          const type = request.headers["content-type"]
          const asJson =
            type === undefined || type.toLowerCase().startsWith("application/json")
              ? request
              : request.modify({ headers: Headers.set(request.headers, "content-type", "application/json") })
          const path = request.url.split("?")[0]!
          // (The request is provided again only when changed: each service added to a request's context costs it, and
          // past eight of them the next one copies every service the server has.)
          const handled =
            asJson === request
              ? httpEffect
              : Effect.provideService(httpEffect, HttpServerRequest.HttpServerRequest, asJson)
          return yield* handled.pipe(
            Effect.provideService(HttpIncomingMessage.MaxBodySize, limit),
            Effect.catchCause(answerFailure({ maxBodyBytes, reportDefect: options.reportDefect }, request)),
            // No response is to be read as another type than it says; a document's text (which anyone allowed to write
            // may have filled with HTML) is shown as text, without scripts, whatever a browser makes of it.
            Effect.map((response) =>
              HttpServerResponse.setHeaders(response, {
                "x-content-type-options": "nosniff",
                ...(DOCUMENT_TEXT.test(path) ? { "content-security-policy": "sandbox" } : {})
              })
            )
          )
        })
      const limited = (state: Derived) =>
        Effect.gen(function* () {
          const { rates, turns } = state
          const request = yield* HttpServerRequest.HttpServerRequest
          // The probes and the page are never limited: a busy server is still alive, and says whether it is ready.
          if (OPEN_PATHS.has(request.url.split("?")[0]!)) return yield* checked(state)
          if (rates !== undefined) {
            const refused = yield* rates.take(Option.getOrElse(request.remoteAddress, () => "unknown"))
            if (refused !== undefined) return yield* refusal("rate_limited", refusedWith(refused))
          }
          return yield* turns === undefined ? checked(state) : turns(checked(state), refusedWith)
        })
      // Every answer counted by route and status, with its time; the requests being answered, as they come and go.
      const answer = (request: HttpServerRequest.HttpServerRequest, span: Tracer.Span | undefined) =>
        Effect.gen(function* () {
          const started = yield* Clock.currentTimeNanos
          // Where traces are exported, the request's span names the trace its id joins.
          const id = requestIdOf(request.headers, span?.traceId)
          if (span?.sampled === true) span.attribute("http.request.id", id)
          const details: RequestDetails["Service"] = { mode: undefined, results: undefined, query: undefined }
          yield* Metric.modify(inFlight, 1)
          const state = cell.state
          const answered = yield* limited(state).pipe(
            Effect.provideService(RequestDetails, details),
            Effect.ensuring(Metric.modify(inFlight, -1))
          )
          const response = HttpServerResponse.setHeader(answered, "x-request-id", id)
          const seconds = Number((yield* Clock.currentTimeNanos) - started) / 1e9
          const route = routeOf(request.url.split("?")[0]!)
          if (options.accessLog !== undefined) {
            const entry: AccessEntry = {
              time: new Date(Number(started / 1_000_000n)).toISOString(),
              request_id: id,
              method: request.method,
              route,
              status: response.status,
              duration_ms: Math.round(seconds * 1e6) / 1e3,
              ...(details.mode === undefined ? {} : { mode: details.mode }),
              ...(details.results === undefined ? {} : { results: details.results }),
              ...(state.logQueries && details.query !== undefined ? { query: details.query } : {})
            }
            yield* options.accessLog(entry)
          }
          // `answered` is the refusal itself; `response` is a copy (with the request id), which the set does not know.
          if (response.status === 503 && overloaded.has(answered))
            yield* Metric.modify(Metric.withAttributes(refused, { reason: "overloaded" }), 1)
          yield* recordAnswer(route, response.status, seconds, details.mode)
          return response
        })
      return Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        if ((yield* Effect.tracer) === Tracer.nativeTracer) return yield* answer(request, undefined)
        return yield* traced(request, answer)
      })
    },
    { global: true }
  )
}

/**
 * A request answered in a server span of its own (where traces are exported), named by its method and route, the
 * child of the client's span when it sent a W3C `traceparent`, with OpenTelemetry's HTTP attributes, and failed for
 * a 5xx answer as OpenTelemetry asks. This takes the place of effect's own request span (turned off in `Server`),
 * which cost a server about a fifteenth of a short query, half of what tracing every request cost in all.
 */
const traced = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  answer: (
    request: HttpServerRequest.HttpServerRequest,
    span: Tracer.Span | undefined
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  // Made from the fiber directly, with as few steps as a span can take: this runs on every request of a server that
  // exports traces, sampled or not.
  Effect.withFiber((fiber) => {
    if (!fiber.getRef(References.TracerEnabled)) return answer(request, undefined)
    const path = request.url.split("?")[0]!
    const route = routeOf(path)
    const parent = remoteParent(request.headers["traceparent"])
    const clock = fiber.getRef(Clock.Clock)
    const span = fiber.getRef(Tracer.Tracer).span({
      // OpenTelemetry's name for a server span: the method and the route, or the method alone off the routes.
      name: route === "other" ? request.method : `${request.method} ${route}`,
      // Without the client's span, a request starts a trace of its own, whatever span the server runs in.
      parent: parent === undefined ? Option.none() : Option.some(parent),
      annotations: Context.empty(),
      links: [],
      startTime: clock.currentTimeNanosUnsafe(),
      kind: "server",
      root: parent === undefined,
      sampled: parent?.sampled ?? true
    })
    if (span.sampled) {
      span.attribute("http.request.method", request.method)
      if (route !== "other") span.attribute("http.route", route)
      span.attribute("url.path", path)
      span.attribute("url.scheme", "http")
      if (Option.isSome(request.remoteAddress)) span.attribute("client.address", request.remoteAddress.value)
    }
    // (Not `withParentSpan`, which captures the call site's stack with an `Error` on every request.)
    return answer(request, span).pipe(
      Effect.provideService(Tracer.ParentSpan, span),
      Effect.onExit((exit) => {
        const outcome = spanOutcome(exit)
        if (span.sampled) {
          span.attribute("http.response.status_code", outcome.status)
          if (outcome.errorType !== undefined) span.attribute("error.type", outcome.errorType)
        }
        span.end(clock.currentTimeNanosUnsafe(), outcome.exit)
        return Effect.void
      })
    )
  })

/**
 * How a request's span ends, as OpenTelemetry asks of a server span: with the answer's status, failed for a 5xx (with
 * `error.type` the status) or when the request did not end in an answer; a request interrupted (its client gone)
 * has the status 499, as effect gives it.
 */
export const spanOutcome = (
  exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>
): { readonly status: number; readonly exit: Exit.Exit<unknown, unknown>; readonly errorType: string | undefined } => {
  if (exit._tag === "Success") {
    const status = exit.value.status
    return status >= 500 && status < 600
      ? { status, exit: Exit.fail(`HTTP ${status}`), errorType: String(status) }
      : { status, exit: Exit.void, errorType: undefined }
  }
  const status = Cause.hasInterruptsOnly(exit.cause) ? 499 : 500
  return { status, exit, errorType: String(status) }
}

/** The client's span a W3C `traceparent` names (version 00 or a later one; all-zero ids are no span), if any. */
export const remoteParent = (header: string | undefined): Tracer.ExternalSpan | undefined => {
  const found = traceparentOf(header)
  if (found === undefined || found.version === "ff" || /^0+$/.test(found.traceId) || /^0+$/.test(found.spanId))
    return undefined
  return Tracer.externalSpan({
    traceId: found.traceId,
    spanId: found.spanId,
    sampled: (Number.parseInt(found.flags, 16) & 1) === 1
  })
}
