#!/usr/bin/env node
/** Process entry: the only file that names the Node platform. */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer, Runtime } from "effect"
import { CliOutput, Command } from "effect/cli"
import { DocumentSource } from "@funcpipe/pipeline/services/DocumentSource"
import { Embedder } from "@funcpipe/pipeline/services/Embedder"
import { layerWorkers } from "@funcpipe/pipeline/services/Preparer"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { cli, version } from "./Cli.ts"
import { serveStopped } from "./commands/Serve.ts"
import { Progress, terminalProgress } from "./Progress.ts"
import { presenter, reportFailure } from "./Report.ts"

// A progress bar only when a person watches stderr; never in pipes or files.
const ProgressLayer = process.stderr.isTTY
  ? Layer.effect(Progress, terminalProgress((text) => void process.stderr.write(text)))
  : Layer.empty

// The per-document stage runs on worker threads: the bundled worker beside the bundled CLI, or the sources.
const bundledWorker = new URL("./prepare-worker.mjs", import.meta.url)
const PreparerLayer = layerWorkers(
  existsSync(fileURLToPath(bundledWorker)) ? bundledWorker : new URL(import.meta.resolve("@funcpipe/pipeline/stages/PrepareWorker"))
)

const MainLayer = Layer.mergeAll(
  PreparerLayer,
  DocumentSource.layer,
  Embedder.layerLocalSha256,
  CliOutput.layerPresenter(presenter),
  ProgressLayer
).pipe(Layer.provideMerge(NodeServices.layer))

Command.run(cli, { version }).pipe(
  Effect.tapCause(reportFailure),
  Effect.provide(MainLayer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // A server stopped by a signal ends normally; any other interrupted command exits with 130.
    teardown: (exit, onExit) => Runtime.defaultTeardown(exit, (code) => onExit(code === 130 && serveStopped.value ? 0 : code))
  })
)
