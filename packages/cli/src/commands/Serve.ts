/** `funcpipe serve`: answer queries over HTTP from the index, opened once and kept current. */

import { DEFAULT_MAX_BODY_BYTES } from "@funcpipe/domain/Config"
import { layerIndexStore } from "@funcpipe/pipeline/programs/IndexLocation"
import { layerIndexModel } from "@funcpipe/pipeline/programs/IndexModel"
import { isPostgresUrl } from "@funcpipe/pipeline/store/postgres/PgUrl"
import { Config, Console, Duration, Effect, Layer, Option, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import { chatChoice, llmFlags } from "../flags/Chat.ts"
import { indexPath, serviceFlags, withServiceFlags } from "../flags/Flags.ts"
import { keepHeapNearLiveData } from "../Heap.ts"
import { version } from "../Version.ts"

/**
 * Set once the server has stopped and closed the index, so the process entry exits with 0 rather than the 130 of an
 * interrupted command: stopping is how a server ends normally.
 */
export const serveStopped = { value: false }

const Port = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 }, { message: "a port is 0 to 65535" }))
const Positive = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "must be at least 1" }))
const NonNegative = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "must be 0 or more" }))

/** `serve --cluster`: a runner hosting shard entities until stopped. */
const runCluster = Effect.fn("serve.cluster")(function* (input: {
  readonly index: string
  readonly host: string
  readonly runnerPort: number
  readonly lockExpiry: number
}) {
  if (!isPostgresUrl(input.index)) {
    return yield* new ClusterNeedsPostgres({ index: input.index })
  }
  const { layerRunner, showCluster } = yield* Effect.promise(() => import("@funcpipe/server/Cluster"))
  const options = {
    index: input.index,
    host: input.host,
    port: input.runnerPort,
    lockExpiration: Duration.seconds(input.lockExpiry)
  }
  const report = (line: string) => Console.error(line)
  yield* Effect.scoped(
    Effect.gen(function* () {
      yield* Layer.build(layerRunner(options))
      yield* report(
        `runner on ${input.host}:${input.runnerPort} for ${showCluster(options)}; ` +
          "shards load on first query; stop with Ctrl-C"
      )
      return yield* Effect.never
    })
  ).pipe(
    Effect.onInterrupt(() =>
      Effect.andThen(
        report("stopped"),
        Effect.sync(() => (serveStopped.value = true))
      )
    )
  )
})

/** `--cluster` needs an index in PostgreSQL: runners on other machines read their shards from it. */
export class ClusterNeedsPostgres extends Schema.TaggedError<ClusterNeedsPostgres>()("ClusterNeedsPostgres", {
  index: Schema.String
}) {
  override get message(): string {
    return `--cluster serves an index in PostgreSQL (--index postgres://…), not ${this.index}`
  }
}

export const serve = Command.make(
  "serve",
  {
    index: indexPath,
    host: Flag.String("host").pipe(
      Flag.withDescription("The address to listen on (default 127.0.0.1: this machine only; any other needs --token)"),
      Flag.withDefault("127.0.0.1")
    ),
    port: Flag.Int("port").pipe(
      Flag.withSchema(Port),
      Flag.withDescription("The port to listen on (default 7700; 0 picks a free one)"),
      Flag.withDefault(7700)
    ),
    token: Flag.Redacted("token").pipe(
      Flag.withDescription(
        "Require Authorization: Bearer <token> on every request (but the search page and /healthz); " +
          "also read from FUNCPIPE_TOKEN. Needed to listen beyond this machine"
      ),
      Flag.withFallbackConfig(Config.Redacted("FUNCPIPE_TOKEN")),
      Flag.optional
    ),
    writable: Flag.Boolean("writable").pipe(
      Flag.withDescription("Allow PUT /v1/documents and DELETE /v1/documents/{id} to change the index"),
      Flag.withDefault(false)
    ),
    linkSources: Flag.Boolean("link-sources").pipe(
      Flag.withDescription(
        "Link each result on the search page to its document's text as written (GET /v1/documents/{id}/text); " +
          "off by default, since it hands out whole documents"
      ),
      Flag.withDefault(false)
    ),
    maxBody: Flag.Int("max-body").pipe(
      Flag.withSchema(Positive),
      Flag.withDescription("The largest request body in bytes (default 1048576, 1 MiB); larger ones get 413"),
      Flag.withDefault(DEFAULT_MAX_BODY_BYTES)
    ),
    logFormat: Flag.Literals("log-format", ["text", "json"] as const).pipe(
      Flag.withMetavar("FORMAT"),
      Flag.withDescription(
        "json: also log each answer as one JSON object a line on stderr (request id, method, route, status, " +
          "duration_ms, and for a query its mode and result count); text (the default): only the server's own lines"
      ),
      Flag.withDefault("text" as const)
    ),
    logQueries: Flag.Boolean("log-queries").pipe(
      Flag.withDescription("With --log-format json: put each query's text into its line too (left out by default)"),
      Flag.withDefault(false)
    ),
    rateLimit: Flag.Int("rate-limit").pipe(
      Flag.withSchema(NonNegative),
      Flag.withMetavar("N"),
      Flag.withDescription(
        "Answer each client (by address) at most N requests a second on average, 429 with Retry-After past it " +
          "(default 0: no limit; the page, /healthz and /readyz are never limited)"
      ),
      Flag.withDefault(0)
    ),
    burst: Flag.Int("burst").pipe(
      Flag.withSchema(Positive),
      Flag.withMetavar("N"),
      Flag.withDescription("With --rate-limit: how many requests a client may send at once (default: twice the rate)"),
      Flag.optional
    ),
    maxInFlight: Flag.Int("max-in-flight").pipe(
      Flag.withSchema(NonNegative),
      Flag.withMetavar("N"),
      Flag.withDescription(
        "Answer at most N requests at once, the others waiting in a queue of --queue; past it, 503 at once rather " +
          "than ever slower answers (default 0: no limit)"
      ),
      Flag.withDefault(0)
    ),
    queue: Flag.Int("queue").pipe(
      Flag.withSchema(NonNegative),
      Flag.withMetavar("N"),
      Flag.withDescription("With --max-in-flight: how many requests may wait for a turn (default 64)"),
      Flag.withDefault(64)
    ),
    poll: Flag.Int("poll").pipe(
      Flag.withSchema(NonNegative),
      Flag.withDescription("How often to look for a newer index, in milliseconds (default 1000; 0 never)"),
      Flag.withDefault(1000)
    ),
    cluster: Flag.Boolean("cluster").pipe(
      Flag.withDescription(
        "Run a cluster runner instead of an HTTP server: host shards of the PostgreSQL --index for " +
          "`funcpipe query --shards N` (listens on --host:--runner-port; see docs/team.md)"
      ),
      Flag.withDefault(false)
    ),
    runnerPort: Flag.Int("runner-port").pipe(
      Flag.withSchema(Port),
      Flag.withDescription(
        "With --cluster: the port other runners and entry points reach this runner on (default 34431)"
      ),
      Flag.withDefault(34431)
    ),
    lockExpiry: Flag.Int("lock-expiry").pipe(
      Flag.withSchema(Positive),
      Flag.withDescription(
        "With --cluster: seconds a dead runner's shards stay locked before another runner takes them (default 10); " +
          "the same on every runner"
      ),
      Flag.withDefault(10)
    ),
    ...llmFlags,
    ...serviceFlags
  },
  Effect.fn("serve")(function* (input) {
    // A server allocates for every request, for hours: with V8's default growth, under steady load the resident size
    // grows 30-45 % in two minutes with 45 MB live. Growing by a fifth between full collections keeps it flat; they
    // come every few seconds and take 5-10 ms each (docs/decisions/0071-server-heap-kept-near-its-live-data.md).
    keepHeapNearLiveData(20)
    if (input.cluster) return yield* runCluster(input)
    // The server and its HTTP modules load only here, so every other command starts without them.
    const { HttpServer, layer } = yield* Effect.promise(() => import("@funcpipe/server/Server"))
    const report = (line: string) => Console.error(line)
    const chat = yield* chatChoice(input)
    const server = layer({
      version,
      chat: chat?.layer,
      host: input.host,
      port: input.port,
      token: Option.getOrUndefined(input.token),
      writable: input.writable,
      linkSources: input.linkSources,
      maxBodyBytes: input.maxBody,
      ...(input.logFormat === "json"
        ? { accessLog: (entry: object) => Console.error(JSON.stringify(entry)), logQueries: input.logQueries }
        : {}),
      rateLimit:
        input.rateLimit === 0
          ? undefined
          : { perSecond: input.rateLimit, burst: Option.getOrElse(input.burst, () => 2 * input.rateLimit) },
      concurrency: input.maxInFlight === 0 ? undefined : { inFlight: input.maxInFlight, queue: input.queue },
      pollMillis: input.poll,
      report
    })
    const announce = Layer.effectDiscard(
      Effect.gen(function* () {
        const address = HttpServer.formatAddress((yield* HttpServer.HttpServer).address)
        yield* report(
          `listening on ${address} (search page ${address}/, API docs ${address}/docs, MCP ${address}/mcp)` +
            `${input.writable ? ", writable" : ""}` +
            `${chat === undefined ? "" : `, answering questions with ${chat.model} at ${chat.baseUrl}`}; stop with Ctrl-C`
        )
        // Runs first when the server stops: requests in flight are answered, then the index is closed.
        yield* Effect.addFinalizer(() => report("stopping: answering the requests in flight, then closing the index"))
      })
    )
    // Queries are embedded with the model the index was built with (read once, when the server starts).
    const index = Layer.provideMerge(withServiceFlags(input)(layerIndexModel), layerIndexStore(input.index))
    yield* Layer.launch(announce.pipe(Layer.provide(server), Layer.provide(index))).pipe(
      Effect.onInterrupt(() =>
        Effect.andThen(
          report("stopped"),
          Effect.sync(() => (serveStopped.value = true))
        )
      )
    )
  })
).pipe(
  Command.withDescription("Answer queries over HTTP (JSON API, OpenAPI, a search page) from the index, kept current"),
  Command.withExamples([
    { command: "funcpipe serve", description: "Serve .funcpipe/index.db on http://127.0.0.1:7700" },
    {
      command: "FUNCPIPE_TOKEN=s3cret funcpipe serve --host 0.0.0.0 --port 8080",
      description: "Serve the network, with a token"
    },
    {
      command: "funcpipe serve --cluster --index postgres://fp@db/fp --host 10.0.0.5",
      description: "Run a runner hosting shards of a PostgreSQL index"
    }
  ])
)
