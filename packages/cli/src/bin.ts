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
