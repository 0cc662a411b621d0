/** `funcpipe serve`: answer queries over HTTP from the index, opened once and kept current. */

import { layerIndexStore, showIndex } from "@funcpipe/pipeline/programs/IndexLocation"
import { layerIndexModel } from "@funcpipe/pipeline/programs/IndexModel"
import { watchIndex } from "@funcpipe/pipeline/programs/Watch"
import { IndexStore } from "@funcpipe/pipeline/store/IndexStore"
import { isPostgresUrl } from "@funcpipe/pipeline/store/postgres/PgUrl"
import { Console, Duration, Effect, Layer, Option, Queue, Schema, Stream } from "effect"
import { Command, Flag } from "effect/cli"
import { chatChoice, llmFlags } from "../flags/Chat.ts"
import { indexPath, serviceFlags, withServiceFlags } from "../flags/Flags.ts"
import { keepHeapNearLiveData } from "../Heap.ts"
import { watchingLine, watchRunLine } from "../output/Format.ts"
import { version } from "../Version.ts"
import { guardFlags, guardSettingsOf, Hangups, reloadOnHangup } from "./ServeReload.ts"

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

/**
 * `serve --watch`: keeps the served index mirroring `paths` (see `watchIndex`), a line per run; the server's look for a
 * newer state (`--poll`) swaps to each. Each run uses the index's own settings (cleaning, chunking, analysis, keep
 * rule; the defaults for a new index), as the server has no flags of its own for them. A failure the watch cannot go
 * past is reported, and the server goes on serving the index as it is.
 */
const keepCurrent = (paths: ReadonlyArray<string>, location: string, report: (line: string) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const manifest = yield* IndexStore.use((store) => store.manifest)
    const options = Option.match(manifest, {
      onNone: () => ({}),
      onSome: (m) => ({
        cleaner: m.cleaner,
        chunker: m.chunker,
        analyzer: m.analyzer,
        ...(m.keep === undefined ? {} : { keep: m.keep })
      })
    })
    yield* watchIndex(paths, options).pipe(
      Stream.runForEach((run) =>
        Effect.andThen(
          report(watchRunLine(run, location)),
          run.first ? report(watchingLine(paths.length, run.folders)) : Effect.void
        )
      )
    )
  }).pipe(
    Effect.catch((error) =>
      report(
        `watch: stopped: ${error._tag === "SettingsChanged" ? "the index's settings changed under the server (run funcpipe index --rebuild, then restart it)" : error.message}; still serving the index as the last run left it`
      )
    )
  )

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
    ...guardFlags,
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
    logFormat: Flag.Literals("log-format", ["text", "json"] as const).pipe(
      Flag.withMetavar("FORMAT"),
      Flag.withDescription(
        "json: also log each answer as one JSON object a line on stderr (request id, method, route, status, " +
          "duration_ms, and for a query its mode and result count); text (the default): only the server's own lines"
      ),
      Flag.withDefault("text" as const)
    ),
    watch: Flag.String("watch").pipe(
      Flag.withMetavar("PATH"),
      Flag.withDescription(
        "Keep the index current with these files or folders (repeat for more): indexed at start, then again at each " +
          "change (as index --watch does), each run a line on stderr; the server swaps to each new state"
      ),
      Flag.atLeast(0)
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
    // SIGHUP from the start to the very end (after the last request is answered): one that comes before the server is
    // ready is applied once it is, and none ends the process meanwhile (see ServeReload.ts).
    const hangups = yield* (yield* Hangups).subscribe
    if (input.cluster) {
      yield* Effect.forkScoped(
        Effect.forever(
          Effect.andThen(Queue.take(hangups), Console.error("SIGHUP: a runner has no configuration to read again"))
        )
      )
      return yield* runCluster(input)
    }
    // The server and its HTTP modules load only here, so every other command starts without them.
    const { checkBinding, GuardCell, HttpServer, layer } = yield* Effect.promise(
      () => import("@funcpipe/server/Server")
    )
    const report = (line: string) => Console.error(line)
    const chat = yield* chatChoice(input)
    const guarded = guardSettingsOf(input)
    // What guards each request, which a SIGHUP may change (see ServeReload.ts).
    const cell = new GuardCell(guarded)
    const server = layer({
      version,
      chat: chat?.layer,
      host: input.host,
      port: input.port,
      ...guarded,
      guardCell: cell,
      writable: input.writable,
      linkSources: input.linkSources,
      ...(input.logFormat === "json" ? { accessLog: (entry: object) => Console.error(JSON.stringify(entry)) } : {}),
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
        yield* reloadOnHangup(hangups, cell, input, report, (token) => checkBinding({ host: input.host, token }))
        if (input.watch.length > 0) yield* Effect.forkScoped(keepCurrent(input.watch, showIndex(input.index), report))
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
  }, Effect.scoped)
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
