/**
 * OpenTelemetry export over OTLP/HTTP, set up by OpenTelemetry's standard environment variables:
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or the `_TRACES_` and `_METRICS_` ones), `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the
 * default, or `http/json`), `OTEL_SDK_DISABLED`, … as effect's exporters read them. Traces and metrics are sent; logs
 * stay on stderr. The exporters send what they hold when their layer closes, so a command's spans leave before the
 * process exits (each waits at most its timeout for the collector).
 *
 * Metrics, and traces in JSON, are effect's exporters as they are. Traces in protobuf are effect's batching exporter
 * fed by a tracer of ours that writes each span's bytes as it ends (`OtlpProtobuf`): on a server exporting every
 * trace, building and serializing effect's OTLP/JSON objects cost more than a tenth of a short query.
 */

import { Config, ConfigProvider, Duration, Effect, Layer, Option, Schema, Tracer, Version } from "effect"
import { HttpBody, type HttpClient } from "effect/http"
import { OtlpExporter, OtlpMetrics, OtlpResource, OtlpSerialization, OtlpTracer } from "effect/observability"
import { PendingSpans, traceRequestFrame } from "./OtlpProtobuf.ts"
import { StageSpanMillis } from "./Telemetry.ts"

/**
 * The tracer and the metrics exporter the environment describes. The service is `funcpipe` unless
 * `OTEL_SERVICE_NAME` or `service.name` in `OTEL_RESOURCE_ATTRIBUTES` names another; its version is `version`.
 */
export const layerOtlp = (
  version: string,
  env: Readonly<Record<string, string | undefined>>
): Layer.Layer<OtlpExporter.Flusher, never, HttpClient.HttpClient> => {
  const named =
    (env["OTEL_SERVICE_NAME"] ?? "").trim() !== "" ||
    /(^|,)\s*service\.name\s*=/.test(env["OTEL_RESOURCE_ATTRIBUTES"] ?? "")
  const resource = { serviceVersion: version, ...(named ? {} : { serviceName: "funcpipe" }) }
  // OpenTelemetry's default exporter is OTLP; effect's exporters wait to be told (OTEL_TRACES_EXPORTER=otlp), so the
  // default is given here, and a variable set to `none` still turns its signal off.
  // Metrics are sent once a minute unless OTEL_METRIC_EXPORT_INTERVAL says otherwise, OpenTelemetry's default
  // (effect's exporter sends every 10 s).
  const provider = ConfigProvider.fromEnvRecord({
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_METRICS_EXPORTER: "otlp",
    OTEL_METRIC_EXPORT_INTERVAL: "60000",
    ...env
  })
  const stageMillis = Number(env["FUNCPIPE_TRACE_STAGE_MS"] ?? "")
  const json = (signal: "TRACES" | "METRICS") =>
    (env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`] ?? env["OTEL_EXPORTER_OTLP_PROTOCOL"] ?? "").trim().toLowerCase() ===
    "http/json"
  const exporters = Layer.mergeAll(
    json("TRACES")
      ? OtlpTracer.layerFromConfig({ resource }).pipe(Layer.provide(OtlpSerialization.layerJson))
      : layerProtobufTracer(resource),
    OtlpMetrics.layerFromConfig({ resource }).pipe(
      Layer.provide(json("METRICS") ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf)
    ),
    // Which query stages get spans of their own (see StageSpanMillis): from FUNCPIPE_TRACE_STAGE_MS when it is a number.
    (env["FUNCPIPE_TRACE_STAGE_MS"] ?? "").trim() !== "" && Number.isFinite(stageMillis) && stageMillis >= 0
      ? Layer.succeed(StageSpanMillis, stageMillis)
      : Layer.empty
  )
  const sampler = samplerOf(env)
  return (sampler === undefined ? exporters : Layer.provideMerge(layerSampling(sampler), exporters)).pipe(
    Layer.provide(ConfigProvider.layer(provider))
  )
}

/** How many bytes of spans may wait for the exporter (see `PendingSpans`). */
const PENDING_LIMIT = 16 * 1024 * 1024

/** A signal's variable, then the one for every signal. */
const eitherVariable = <A>(config: (name: string) => Config.Config<A>, signal: string, suffix: string) =>
  config(`OTEL_EXPORTER_OTLP_${signal}_${suffix}`).pipe(Config.orElse(() => config(`OTEL_EXPORTER_OTLP_${suffix}`)))

/**
 * The tracer that sends spans as OTLP protobuf through effect's batching exporter, configured by the variables
 * effect's OTLP tracer reads (endpoint, headers, compression, timeouts, `OTEL_BSP_*`); the default tracer when they
 * turn traces off.
 */
const layerProtobufTracer = (resourceOptions: { readonly serviceName?: string; readonly serviceVersion: string }) =>
  Layer.effect(
    Tracer.Tracer,
    Effect.gen(function* () {
      const settings = yield* Config.all({
        disabled: Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
        endpoint: Config.URL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").pipe(
          Config.map((url) => url.toString()),
          Config.orElse(() =>
            Config.URL("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(
              Config.map((url) => {
                // The signal's path goes after the base's path, before any query.
                url.pathname = `${url.pathname.replace(/\/$/, "")}/v1/traces`
                return url.toString()
              })
            )
          ),
          Config.withDefault(undefined)
        ),
        exporters: Config.Array(Schema.String, "OTEL_TRACES_EXPORTER").pipe(Config.withDefault([])),
        headers: eitherVariable(
          (name) => Config.Record(Schema.String, Schema.StringFromUriComponent, name),
          "TRACES",
          "HEADERS"
        ).pipe(Config.withDefault(undefined)),
        compression: eitherVariable((name) => Config.Literals(["gzip", "none"], name), "TRACES", "COMPRESSION").pipe(
          Config.withDefault("none" as const)
        ),
        timeout: eitherVariable(Config.Int, "TRACES", "TIMEOUT").pipe(
          Config.orElse(() => Config.Int("OTEL_BSP_EXPORT_TIMEOUT")),
          Config.withDefault(3000)
        ),
        delay: Config.Int("OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(5000)),
        batch: Config.Int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").pipe(Config.withDefault(1000))
      }).pipe(Effect.orDie)
      const { endpoint } = settings
      if (
        settings.disabled ||
        endpoint === undefined ||
        !settings.exporters.some((e) => e.trim().toLowerCase() === "otlp")
      )
        return yield* Effect.tracer
      const resource = yield* OtlpResource.fromConfig(resourceOptions)
      const frame = traceRequestFrame(resource, { name: "effect", version: Version.getCurrentVersion() })
      const pending = new PendingSpans(PENDING_LIMIT)
      const exporter = yield* OtlpExporter.make({
        label: "OtlpTracer",
        url: endpoint,
        headers: settings.headers,
        compression: settings.compression,
        exportInterval: Duration.millis(settings.delay),
        maxBatchSize: settings.batch,
        body: (lengths: Array<number>) =>
          [HttpBody.uint8Array(pending.take(frame, lengths), "application/x-protobuf"), Effect.void] as const,
        shutdownTimeout: Duration.millis(settings.timeout)
      })
      /** A span that, once ended, is written out and handed to the exporter if it is sampled. */
      class ExportedSpan extends Tracer.NativeSpan {
        override end(endTime: bigint, exit: Parameters<Tracer.Span["end"]>[1]): void {
          if (this.status._tag === "Ended") return
          super.end(endTime, exit)
          if (!this.sampled) return
          const length = pending.write(this)
          if (length !== undefined) exporter.push(length)
        }
      }
      return Tracer.make({ span: (options) => new ExportedSpan(options) })
    })
  ).pipe(Layer.provideMerge(OtlpExporter.layerFlusher))

/** Which traces are kept: each new trace with this probability; with `parentBased`, a child as its parent is. */
export interface Sampler {
  readonly ratio: number
  readonly parentBased: boolean
}

/**
 * OpenTelemetry's sampler variables: `OTEL_TRACES_SAMPLER` (`always_on`, `always_off`, `traceidratio`,
 * `parentbased_always_on`, the default, `parentbased_always_off`, `parentbased_traceidratio`) and
 * `OTEL_TRACES_SAMPLER_ARG` (the ratio, 0 to 1; empty, unset or out of range: 1). `undefined` for the default, which
 * is effect's own behaviour: every new trace kept, and a request whose `traceparent` says unsampled left unsampled.
 * An unknown sampler name is the default too.
 */
export const samplerOf = (env: Readonly<Record<string, string | undefined>>): Sampler | undefined => {
  const name = (env["OTEL_TRACES_SAMPLER"] ?? "").trim().toLowerCase()
  const text = (env["OTEL_TRACES_SAMPLER_ARG"] ?? "").trim()
  const arg = text === "" ? 1 : Number(text)
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1
  switch (name) {
    case "always_on":
      return { ratio: 1, parentBased: false }
    case "always_off":
      return { ratio: 0, parentBased: false }
    case "parentbased_always_off":
      return { ratio: 0, parentBased: true }
    case "traceidratio":
      return { ratio, parentBased: false }
    case "parentbased_traceidratio":
      return ratio >= 1 ? undefined : { ratio, parentBased: true }
    default:
      return undefined
  }
}

/**
 * The tracer in place, sampling: a span whose parent is in this process is kept as its parent is; one whose parent is
 * another process's (a request's `traceparent`) is kept as that parent is with `parentBased`, else as a new trace is;
 * a new trace is kept with the sampler's probability. The decision is drawn at random for each new trace, not from
 * its id as OpenTelemetry's SDKs do, so with `traceidratio` two processes decide a trace they share each on its own;
 * use a `parentbased_` sampler where traces cross processes. A span not kept costs a little to make and nothing to
 * export, and still passes its trace on (`traceparent`, flagged unsampled).
 */
export const layerSampling = (sampler: Sampler) =>
  Layer.effect(
    Tracer.Tracer,
    Effect.map(Effect.tracer, (inner) =>
      Tracer.make({
        span(options) {
          const parent = Option.getOrUndefined(options.parent)
          const keep =
            parent !== undefined && (sampler.parentBased || parent._tag === "Span")
              ? parent.sampled
              : sampler.ratio >= 1 || (sampler.ratio > 0 && Math.random() < sampler.ratio)
          return inner.span({ ...options, sampled: keep })
        },
        ...(inner.context === undefined ? {} : { context: inner.context })
      })
    )
  )
