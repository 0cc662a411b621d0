/**
 * OpenTelemetry export over OTLP/HTTP (JSON), set up by OpenTelemetry's standard environment variables:
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or the `_TRACES_` and `_METRICS_` ones), `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SDK_DISABLED`, … as effect's exporters read them.
 * Traces and metrics are sent; logs stay on stderr. The exporters send what they hold when their layer closes, so a
 * command's spans leave before the process exits (each waits at most its timeout for the collector).
 */

import { ConfigProvider, Layer } from "effect"
import type { HttpClient } from "effect/http"
import { type OtlpExporter, OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"

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
  return Layer.mergeAll(OtlpTracer.layerFromConfig({ resource }), OtlpMetrics.layerFromConfig({ resource })).pipe(
    Layer.provide(Layer.mergeAll(OtlpSerialization.layerJson, ConfigProvider.layer(provider)))
  )
}
