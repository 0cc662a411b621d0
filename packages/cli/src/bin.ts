#!/usr/bin/env node
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
/** Process entry: the only file that names the Node platform. */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { DocumentSource } from "@funcpipe/pipeline/services/DocumentSource"
import { Models } from "@funcpipe/pipeline/services/Models"
import { layerWorkers } from "@funcpipe/pipeline/services/Preparer"
import { Effect, Layer, Runtime, Stdio } from "effect"
import { CliOutput } from "effect/cli"
import { main } from "./Cli.ts"
import { serveStopped } from "./commands/Serve.ts"
import { Progress, terminalProgress } from "./Progress.ts"
import { presenter, reportFailure } from "./Report.ts"

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
  existsSync(fileURLToPath(bundledWorker))
    ? bundledWorker
    : new URL(import.meta.resolve("@funcpipe/pipeline/stages/text/PrepareWorker"))
)

const MainLayer = Layer.mergeAll(
  PreparerLayer,
  DocumentSource.layer,
  // node:http: starts at no cost (undici loads 1.2 MB on every run), and unlike fetch it accepts any port (fetch
  // refuses 6000, 6665, … where a local embedding service may listen). Keep-alive saves a TLS handshake per request.
  Models.layer.pipe(Layer.provide(NodeHttpClient.layerNodeHttpOptions({ keepAlive: true }))),
  CliOutput.layerPresenter(presenter),
  ProgressLayer
).pipe(Layer.provideMerge(NodeServices.layer))

// `serve` started by the launcher (bin/funcpipe.mjs) runs in a child process: if the launcher is killed outright, its
// channel closes, and the server goes with it rather than run on unseen.
if (process.env["FUNCPIPE_SERVER_PROCESS"] === "1" && process.channel !== undefined) {
  process.once("disconnect", () => process.exit(1))
  process.channel.unref()
}

Effect.flatMap(Stdio.Stdio, (stdio) => Effect.flatMap(stdio.args, main)).pipe(
  Effect.tapCause(reportFailure),
  Effect.provide(MainLayer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // A server stopped by a signal ends normally; any other interrupted command exits with 130.
    teardown: (exit, onExit) =>
      Runtime.defaultTeardown(exit, (code) => onExit(code === 130 && serveStopped.value ? 0 : code))
  })
)
