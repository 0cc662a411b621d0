#!/usr/bin/env node
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
/** Process entry: the only file that names the Node platform. */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import { layerWorkers } from "@funcpipe/pipeline/index/prepare/Preparer"
import { Models } from "@funcpipe/pipeline/models/Models"
import { otlpRequested } from "@funcpipe/pipeline/platform/Telemetry"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Context, Effect, type FileSystem, Layer, type Path, Queue, Runtime, Scope, Stdio } from "effect"
import { CliOutput } from "effect/cli"
import { HttpClient, type HttpClientRequest } from "effect/http"
import { ChildProcessSpawner } from "effect/process"
import { main, version } from "./Cli.ts"
import { watchStopped } from "./commands/IndexWatch.ts"
import { serveStopped } from "./commands/Serve.ts"
import { Hangups } from "./commands/ServeReload.ts"
import { Progress, terminalProgress } from "./output/Progress.ts"
import { presenter, reportFailure } from "./output/Report.ts"
import { ResultTerminal, terminalStyleOf } from "./output/Terminal.ts"

// A progress bar only when a person watches stderr; never in pipes or files.
const ProgressLayer = process.stderr.isTTY
  ? Layer.effect(
      Progress,
      terminalProgress(
        (text) => void process.stderr.write(text),
        () => process.stderr.columns || 80
      )
    )
  : Layer.empty

// The per-document stage runs on worker threads: the bundled worker beside the bundled CLI, or the sources.
const bundledWorker = new URL("./prepare-worker.mjs", import.meta.url)
const PreparerLayer = layerWorkers(
  existsSync(fileURLToPath(bundledWorker)) ? bundledWorker : new URL(import.meta.resolve("@funcpipe/pipeline/worker"))
)

// node:http: starts at no cost (undici loads 1.2 MB on every run), and unlike fetch it accepts any port (fetch
// refuses 6000, 6665, … where a local embedding service may listen). Keep-alive saves a TLS handshake per request.
// Loading node:http and node:https takes ~40 ms, and only `openai:` models send requests, so the Node client is
// loaded by the first request, not at every start.
const HttpClientLayer = Layer.effect(
  HttpClient.HttpClient,
  Effect.gen(function* () {
    const scope = yield* Scope.Scope
    const node = yield* Effect.cached(
      Effect.promise(() => import("@effect/platform-node/NodeHttpClient")).pipe(
        Effect.flatMap((m) => Layer.buildWithScope(m.layerNodeHttpOptions({ keepAlive: true }), scope)),
        Effect.map(Context.get(HttpClient.HttpClient))
      )
    )
    return HttpClient.makeWith(
      (request) => Effect.flatMap(node, (client) => client.postprocess(Effect.flatMap(request, client.preprocess))),
      (request: HttpClientRequest.HttpClientRequest) => Effect.succeed(request)
    )
  })
)

// Node's child_process (with node:net and node:dgram) takes ~7 ms to load, and only a `transformers:` model starts
// a process (its Python helper), so the Node spawner is loaded by the first process started.
const ChildProcessLayer = Layer.effect(
  ChildProcessSpawner.ChildProcessSpawner,
  Effect.gen(function* () {
    const scope = yield* Scope.Scope
    const platform = yield* Effect.context<FileSystem.FileSystem | Path.Path>()
    const node = yield* Effect.cached(
      Effect.promise(() => import("@effect/platform-node/NodeChildProcessSpawner")).pipe(
        Effect.flatMap((m) => Layer.buildWithScope(Layer.provide(m.layer, Layer.succeedContext(platform)), scope)),
        Effect.map(Context.get(ChildProcessSpawner.ChildProcessSpawner))
      )
    )
    return ChildProcessSpawner.make((command) => Effect.flatMap(node, (spawner) => spawner.spawn(command)))
  })
)

// Results for a person when stdout is a terminal: passages of its width, matched words in bold.
const terminal = terminalStyleOf(process.stdout.isTTY === true, process.stdout.columns, process.env)
const TerminalLayer = terminal === undefined ? Layer.empty : Layer.succeed(ResultTerminal, terminal)

const MainLayer = Layer.mergeAll(
  TerminalLayer,
  PreparerLayer,
  DocumentSource.layer,
  Models.layer.pipe(Layer.provide(HttpClientLayer)),
  CliOutput.layerPresenter(presenter),
  ProgressLayer
).pipe(
  // NodeServices' layer, with the child-process spawner loaded lazily.
  Layer.provideMerge(
    Layer.mergeAll(ChildProcessLayer, NodeStdio.layer, NodeTerminal.layer).pipe(
      Layer.provideMerge(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
    )
  )
)

// `serve` started by the launcher (bin/funcpipe.mjs) runs in a child process: if the launcher is killed outright, its
// channel closes, and the server goes with it rather than run on unseen.
if (process.env["FUNCPIPE_SERVER_PROCESS"] === "1" && process.channel !== undefined) {
  process.once("disconnect", () => process.exit(1))
  process.channel.unref()
}

// OpenTelemetry export, when the environment names a collector (OTEL_EXPORTER_OTLP_ENDPOINT, …): loaded only then.
// The exporters send what they hold as the command ends, before the process exits.
const TelemetryLayer = otlpRequested(process.env)
  ? Layer.unwrap(
      Effect.map(
        Effect.promise(() => import("@funcpipe/pipeline/platform/Otlp")),
        (otlp) => otlp.layerOtlp(version, process.env).pipe(Layer.provide(HttpClientLayer))
      )
    )
  : Layer.empty

// SIGHUP, for `serve` to read its configuration again: taken from the start of a command line that serves (so that a
// reload sent while it starts is applied once it listens, rather than ending it), and only where stdin is not a
// terminal (a service, a container, nohup): in a terminal, SIGHUP says the terminal closed, and ends the server as it
// ends any other command.
const hangups =
  process.stdin.isTTY !== true && process.argv.slice(2).includes("serve")
    ? Effect.runSync(Queue.sliding<void>(1))
    : undefined
if (hangups !== undefined) process.on("SIGHUP", () => void Queue.offerUnsafe(hangups, undefined))
const HangupsLayer =
  hangups === undefined ? Layer.empty : Layer.succeed(Hangups, { subscribe: Effect.succeed(hangups) })

Effect.flatMap(Stdio.Stdio, (stdio) => Effect.flatMap(stdio.args, (args) => main(args, process.env))).pipe(
  Effect.tapCause(reportFailure),
  Effect.provide(MainLayer),
  Effect.provide(TelemetryLayer),
  Effect.provide(HangupsLayer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // A server stopped by a signal ends normally; any other interrupted command exits with 130.
    teardown: (exit, onExit) =>
      Runtime.defaultTeardown(exit, (code) =>
        onExit(code === 130 && (serveStopped.value || watchStopped.value) ? 0 : code)
      )
  })
)
