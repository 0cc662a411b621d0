/** Trace sampling by OpenTelemetry's variables: new traces kept at the ratio, children as their parents are. */

import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Tracer } from "effect"
import { layerSampling, samplerOf } from "../src/platform/Otlp.ts"

describe("trace sampling", () => {
  it("reads OTEL_TRACES_SAMPLER and its argument, keeping everything by default", () => {
    assert.isUndefined(samplerOf({}))
    assert.isUndefined(samplerOf({ OTEL_TRACES_SAMPLER: "parentbased_always_on" }))
    assert.deepStrictEqual(samplerOf({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1" }), {
      ratio: 1,
      parentBased: false
    })
    // Empty, or out of range: 1, as OpenTelemetry's SDKs read it.
    assert.deepStrictEqual(samplerOf({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: " " }), {
      ratio: 1,
      parentBased: false
    })
    assert.deepStrictEqual(samplerOf({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "-0.5" }), {
      ratio: 1,
      parentBased: false
    })
    assert.isUndefined(samplerOf({ OTEL_TRACES_SAMPLER: "jaeger_remote" }))
    assert.deepStrictEqual(
      samplerOf({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" }),
      {
        ratio: 0.1,
        parentBased: true
      }
    )
    assert.deepStrictEqual(samplerOf({ OTEL_TRACES_SAMPLER: "always_off" }), { ratio: 0, parentBased: false })
    assert.deepStrictEqual(samplerOf({ OTEL_TRACES_SAMPLER: "always_on" }), { ratio: 1, parentBased: false })
  })

  it.effect("keeps about the ratio of new traces, and every span of a kept trace", () =>
    Effect.gen(function* () {
      const ended: Array<{ readonly name: string; readonly sampled: boolean; readonly trace: string }> = []
      const recording = Tracer.make({
        span: (options) => {
          const span = Tracer.nativeTracer.span(options)
          const end = span.end.bind(span)
          span.end = (time, exit) => {
            ended.push({ name: options.name, sampled: span.sampled, trace: span.traceId })
            end(time, exit)
          }
          return span
        }
      })
      const traces = 2_000
      yield* Effect.forEach(Array.from({ length: traces }), () =>
        Effect.void.pipe(Effect.withSpan("child"), Effect.withSpan("root", { root: true }))
      ).pipe(
        Effect.provide(
          Layer.provideMerge(layerSampling({ ratio: 0.25, parentBased: true }), Layer.succeed(Tracer.Tracer, recording))
        )
      )
      const roots = ended.filter((s) => s.name === "root")
      const kept = new Set(roots.filter((s) => s.sampled).map((s) => s.trace))
      assert.strictEqual(roots.length, traces)
      // 0.25 of 2,000: 500, with a standard deviation of about 19; 400 to 600 is five of them either way.
      assert.isAtLeast(kept.size, 400)
      assert.isAtMost(kept.size, 600)
      for (const child of ended.filter((s) => s.name === "child"))
        assert.strictEqual(child.sampled, kept.has(child.trace))
    })
  )
})
