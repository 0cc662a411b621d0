/**
 * The FuncPipe HTTP server: the API (`FuncPipeApi`), its OpenAPI document and Scalar page, and the search page, over
 * the `LiveIndex` of an `IndexStore`, served by Node.
 */

import { createServer, type IncomingMessage, type Server } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { FuncPipeApi } from "@funcpipe/domain/http/Api"
import { Cause, Context, Duration, Effect, Layer, Redacted, Schema, type Scope, Tracer } from "effect"
import type { LanguageModel } from "effect/ai"
import { HttpMiddleware, HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import type { AccessEntry } from "./AccessLog.ts"
import { type GuardCell, guard } from "./Guard.ts"
import { handlersLayer } from "./Handlers.ts"
import type { ConcurrencyLimit, RateLimit } from "./Limits.ts"
import { type ListenFailed, listenFailed } from "./Listen.ts"
import { LiveIndex } from "./LiveIndex.ts"
import { layerHttp as mcpLayerHttp } from "./Mcp.ts"
import { scrape } from "./Metrics.ts"
import { searchPage } from "./Page.ts"

/**
 * effect's `HttpServer` module, for a caller that loads this module on demand (the CLI's `serve`): importing the
 * `effect/http` barrel dynamically would keep every HTTP module in the CLI's start-up bundle.
 */
export { HttpServer } from "effect/http"
export { GuardCell, type GuardSettings } from "./Guard.ts"

/** How a server is run. */
export interface ServerOptions {
  readonly host: string
  /** 0 picks a free port (see `HttpServer.HttpServer`'s address). */
  readonly port: number
  /** The bearer token every request must carry; required to listen beyond loopback. */
  readonly token: Redacted.Redacted<string> | undefined
  /** Whether `PUT` and `DELETE /v1/documents` may change the index. */
  readonly writable: boolean
  /** Whether results link to their documents' text (`GET /v1/documents/{id}/text`). */
  readonly linkSources?: boolean
  /** The largest request body, in bytes (larger ones get 413 before they are read). */
  readonly maxBodyBytes: number
  /** How often to look for a newer state of the index file, in milliseconds (0: never; tests refresh by hand). */
  readonly pollMillis: number
  /** Where reloads, failed reloads and bugs are reported (stderr in the CLI). */
  readonly report: (line: string) => Effect.Effect<void>
  /** How long a client may take (default `DEFAULT_LIMITS`; tests shorten them). */
  readonly limits?: ServerLimits
  /** Where each answer's log line goes (`--log-format json`), if anywhere. */
  readonly accessLog?: ((entry: AccessEntry) => Effect.Effect<void>) | undefined
  /** Whether a query's text goes into its log line (`--log-queries`). */
  readonly logQueries?: boolean
  /** Requests a second per client, if limited (`--rate-limit`, `--burst`). */
  readonly rateLimit?: RateLimit | undefined
  /** Requests answered at once and waiting, if limited (`--max-in-flight`, `--queue`). */
  readonly concurrency?: ConcurrencyLimit | undefined
  /** The version the MCP endpoint (`/mcp`) reports to agents. */
  readonly version?: string
  /** The chat model `POST /v1/ask` answers with (`--llm`); without one, questions get 501. */
  readonly chat?: Layer.Layer<LanguageModel.LanguageModel> | undefined
  /**
   * Where the token, body limit, rate and concurrency limits and `logQueries` are read from at every request, so that
   * they can change while the server runs (`GuardCell.set`); without one, they are these options' own, for good.
   */
  readonly guardCell?: GuardCell | undefined
}

/** How long a client may take, in milliseconds. */
export interface ServerLimits {
  /** To send its request's headers. */
  readonly headersMs: number
  /** To send its whole request, body included. */
  readonly requestMs: number
  /** For its answer to be sent once the server is asked to stop. */
  readonly shutdownMs: number
}

/** The limits docs/cli.md states: headers within 10 s, the whole request within 30 s, 5 s to finish when stopping. */
export const DEFAULT_LIMITS: ServerLimits = { headersMs: 10_000, requestMs: 30_000, shutdownMs: 5_000 }

/** The server is asked to listen beyond this machine without a token. */
export class TokenRequired extends Schema.TaggedError<TokenRequired>()("TokenRequired", {
  host: Schema.String
}) {
  override get message(): string {
    return (
      `listening on ${this.host} lets other machines reach the index, so it needs a token: pass --token or set ` +
      `FUNCPIPE_TOKEN (clients then send Authorization: Bearer <token>), or listen on 127.0.0.1`
    )
  }
}

/** The token given is one no client could send: empty, or with white space at either end. */
export class TokenBlank extends Schema.TaggedError<TokenBlank>()("TokenBlank", {}) {
  override get message(): string {
    return (
      `the token given by --token or FUNCPIPE_TOKEN is empty or starts or ends with white space, which no client ` +
      `can send in Authorization: Bearer <token>; give a token of visible characters (e.g. from openssl rand -hex 32)`
    )
  }
}

/** Whether a host name or address only accepts connections from this machine. */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host)

/** Refuses to listen beyond loopback without a token, and anywhere with a token no client could send. */
export const checkBinding = (
  options: Pick<ServerOptions, "host" | "token">
): Effect.Effect<void, TokenRequired | TokenBlank> => {
  if (options.token !== undefined) {
    const token = Redacted.value(options.token)
    return token === "" || token.trim() !== token ? Effect.fail(new TokenBlank()) : Effect.void
  }
  return isLoopback(options.host) ? Effect.void : Effect.fail(new TokenRequired({ host: options.host }))
}

/**
 * Every route: the API and `/openapi.json`, the Scalar page at `/docs`, the search page at `/`, behind the guard.
 * Needs `LiveIndex`, `IndexStore` and `Embedder`.
 */
export const routes = (options: ServerOptions) =>
  outsideSpans(
    Layer.mergeAll(
      HttpApiBuilder.layer(FuncPipeApi, { openapiPath: "/openapi.json" }),
      // Scalar's own fonts come from its servers: the page uses the system's, so that it works offline.
      HttpApiScalar.layer(FuncPipeApi, { path: "/docs", scalar: { withDefaultFonts: false } }),
      HttpRouter.add("GET", "/", HttpServerResponse.text(searchPage, { contentType: "text/html; charset=utf-8" })),
      // Prometheus' scrape, behind the guard's token as the API is.
      Layer.unwrap(
        Effect.map(Effect.service(LiveIndex), (live) =>
          HttpRouter.add(
            "GET",
            "/metrics",
            Effect.map(scrape(live), (text) =>
              HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
            )
          )
        )
      ),
      // Agents' tools over MCP's streamable HTTP, behind the same guard (the token) as the API.
      mcpLayerHttp({
        version: options.version ?? "0.0.0",
        chat: options.chat,
        wholeDocuments: options.linkSources === true
      }),
      guard(
        {
          token: options.token,
          maxBodyBytes: options.maxBodyBytes,
          rateLimit: options.rateLimit,
          concurrency: options.concurrency,
          accessLog: options.accessLog,
          logQueries: options.logQueries === true,
          reportDefect: (cause) => options.report(`internal error while answering a request:\n${Cause.pretty(cause)}`)
        },
        options.guardCell
      )
    ).pipe(
      Layer.provide(
        handlersLayer({ writable: options.writable, linkSources: options.linkSources === true, chat: options.chat })
      )
    )
  )

/**
 * Builds `layer` without the span it is built in (`serve`'s, say): the API's handlers run in the context they were
 * built in, and a parent span kept there would pull every request's spans out of the request's own trace.
 */
const outsideSpans = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.effectContext(
    Effect.updateContext(
      Layer.build(layer),
      (context: Context.Context<R | Scope.Scope>) =>
        Context.omit(Tracer.ParentSpan)(context) as Context.Context<R | Scope.Scope>
    )
  )

/**
 * A Node HTTP server where slow clients cannot hold a connection forever (headers within `headersMs`, the whole
 * request within `requestMs`, checked ten times as often as the shorter limit, at least every second: Node checks
 * every 30 s unless told), and where shutting down waits for no one who is not being answered: `close` closes the
 * idle keep-alive connections and those whose request is still arriving (a stalled upload), and each connection
 * whose request was in flight is closed as soon as its answer has been sent.
 */
const nodeServer = (limits: ServerLimits, arriving: Set<IncomingMessage>) => (): Server => {
  const server = createServer({
    headersTimeout: limits.headersMs,
    requestTimeout: limits.requestMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(limits.headersMs / 10)))
  })
  let closing = false
  server.on("request", (request, response) => {
    arriving.add(request)
    request.once("close", () => arriving.delete(request))
    response.on("finish", () => {
      if (closing) setImmediate(() => server.closeIdleConnections())
    })
  })
  const close = server.close.bind(server)
  server.close = (callback) => {
    closing = true
    dropArriving(arriving)
    return close(callback)
  }
  return server
}

/** What the Node HTTP server's layer provides. */
type NodeServerServices = Layer.Success<ReturnType<typeof NodeHttpServer.layer>>

/** A layer that fails to build with `error`, in place of one providing `ROut`. */
const failedServer = <ROut>(error: ListenFailed): Layer.Layer<ROut, ListenFailed> =>
  Layer.effectContext(Effect.fail(error) as Effect.Effect<Context.Context<ROut>, ListenFailed>)

/**
 * The server on a Node HTTP server at `host:port`, answering from the `IndexStore`'s index, which it opens once and
 * swaps when the file changes. Also provides the `LiveIndex` and the `HttpServer` (for its address). Closing the
 * layer stops accepting connections, lets requests in flight finish, and then closes the index.
 */
export const layer = (options: ServerOptions) => {
  /** Requests in flight: those whose body has not all arrived are dropped first when the server stops (`dropArriving`). */
  const arriving = new Set<IncomingMessage>()
  // Released before the HTTP server, whose release waits (up to the shutdown limit) for the requests being handled.
  const dropOnStop = Layer.effectDiscard(Effect.addFinalizer(() => Effect.sync(() => dropArriving(arriving))))
  return Layer.unwrap(
    Effect.as(
      checkBinding(options),
      Layer.merge(HttpRouter.serve(routes(options), { disableLogger: true, disableListenLog: true }), dropOnStop).pipe(
        // The guard makes each request's span (a lighter one than effect's, which this turns off).
        Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen, () => true)),
        Layer.provideMerge(LiveIndex.layer({ pollMillis: options.pollMillis, report: options.report })),
        Layer.provideMerge(
          NodeHttpServer.layer(nodeServer(options.limits ?? DEFAULT_LIMITS, arriving), {
            host: options.host,
            port: options.port,
            gracefulShutdownTimeout: Duration.millis((options.limits ?? DEFAULT_LIMITS).shutdownMs)
          }).pipe(
            Layer.catchTag("ServeError", (error) =>
              failedServer<NodeServerServices>(listenFailed(options.host, options.port, error.cause))
            )
          )
        )
      )
    )
  )
}

/**
 * Closes the connections of requests still arriving (not all of their body received: no answer could be sent to
 * them); the requests that have arrived are answered.
 */
const dropArriving = (arriving: Set<IncomingMessage>): void => {
  for (const request of arriving) if (!request.complete) request.socket.destroy()
  arriving.clear()
}
