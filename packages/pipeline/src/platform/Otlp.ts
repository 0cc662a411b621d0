/**
 * OpenTelemetry export over OTLP/HTTP (JSON), set up by OpenTelemetry's standard environment variables:
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or the `_TRACES_` and `_METRICS_` ones), `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SDK_DISABLED`, … as effect's exporters read them.
 * Traces and metrics are sent; logs stay on stderr. The exporters send what they hold when their layer closes, so a
 * command's spans leave before the process exits (each waits at most its timeout for the collector).
 */

import { ConfigProvider, Effect, Layer, Option, Tracer } from "effect"
import type { HttpClient } from "effect/http"
import { type OtlpExporter, OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"
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
  const provider = ConfigProvider.fromEnvRecord({
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_METRICS_EXPORTER: "otlp",
    ...env
  })
  const stageMillis = Number(env["FUNCPIPE_TRACE_STAGE_MS"] ?? "")
  const exporters = Layer.mergeAll(
    OtlpTracer.layerFromConfig({ resource }),
    OtlpMetrics.layerFromConfig({ resource }),
    // Which query stages get spans of their own (see StageSpanMillis): from FUNCPIPE_TRACE_STAGE_MS when it is a number.
    (env["FUNCPIPE_TRACE_STAGE_MS"] ?? "").trim() !== "" && Number.isFinite(stageMillis) && stageMillis >= 0
      ? Layer.succeed(StageSpanMillis, stageMillis)
      : Layer.empty
  )
  const sampler = samplerOf(env)
  return (sampler === undefined ? exporters : Layer.provideMerge(layerSampling(sampler), exporters)).pipe(
    Layer.provide(Layer.mergeAll(OtlpSerialization.layerJson, ConfigProvider.layer(provider)))
  )
}

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
