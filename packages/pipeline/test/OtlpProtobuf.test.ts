/**
 * Spans sent as OTLP protobuf (the default) say what effect's own OTLP/JSON tracer says of the same spans: the same
 * program is traced once each way to a collector on 127.0.0.1, and both bodies, read as a collector reads them, give
 * the same spans (names, kinds, parents, attributes of every type, events, links, status).
 */

import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { decodeTraces, type KeyValue, type Span } from "@funcpipe/test-kit/OtlpTraces"
import { Context, Effect, Exit, Fiber, Layer, Option, Tracer } from "effect"
import { layerOtlp } from "../src/platform/Otlp.ts"
import { PendingSpans, ProtoWriter, traceRequestFrame } from "../src/platform/OtlpProtobuf.ts"

/** A collector that keeps each traces request's body and content type. */
const collector = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ readonly url: string; readonly spans: Array<Span>; readonly close: () => void }>((resolve) => {
        const spans: Array<Span> = []
        const server = createServer((request, response) => {
          const parts: Array<Buffer> = []
          request.on("data", (part: Buffer) => parts.push(part))
          request.on("end", () => {
            if (request.url === "/v1/traces")
              spans.push(...decodeTraces(new Uint8Array(Buffer.concat(parts)), request.headers["content-type"]))
            response.writeHead(200, { "content-type": "application/json" }).end("{}")
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resolve({ url: `http://127.0.0.1:${port}`, spans, close: () => server.close() })
        })
      })
  ),
  ({ close }) => Effect.sync(close)
)

/** Spans of every kind of content: attributes of each type, an event, a link, a failure and an interruption. */
const traced = Effect.gen(function* () {
  yield* Effect.annotateCurrentSpan({
    text: "plain",
    unicode: "café — 東京",
    long: "x".repeat(300),
    integer: 42,
    negative: -5,
    huge: 2 ** 60,
    big: 12345678901234567890n,
    fraction: 0.25,
    yes: true,
    list: ["a", 1, false],
    object: { nested: 1 }
  })
  const linked = yield* Effect.withSpan(Effect.currentSpan, "linked")
  yield* Effect.void.pipe(
    Effect.tap(() =>
      Effect.flatMap(Effect.currentSpan, (span) =>
        Effect.sync(() => span.event("checkpoint", 1_700_000_000_000_000_000n, { step: 3, note: "half way" }))
      )
    ),
    Effect.withSpan("with-event", { links: [{ span: linked, attributes: { why: "follows" } }] })
  )
  yield* Effect.fail(new Error("the store is locked")).pipe(Effect.withSpan("failing"), Effect.ignore)
  const fiber = yield* Effect.never.pipe(Effect.withSpan("interrupted"), Effect.forkChild)
  yield* Effect.yieldNow
  yield* Fiber.interrupt(fiber)
}).pipe(Effect.withSpan("request", { kind: "server" }))

/** Runs `traced` with the exporter `env` describes, to `url`; the spans the collector received. */
const exportWith = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const { url, spans } = yield* collector
    yield* traced.pipe(
      Effect.provide(
        layerOtlp("1.2.3", { OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_SERVICE_NAME: "otlp-test", ...env }).pipe(
          Layer.provide(NodeHttpClient.layerUndici)
        )
      )
    )
    return spans
  }).pipe(Effect.scoped)

const attributes = (list: ReadonlyArray<KeyValue>) =>
  [...list].map(({ key, value }) => ({ key, value })).sort((a, b) => a.key.localeCompare(b.key))

/** A span's content without its ids and times: what both encodings must agree on. */
const content = (span: Span, all: ReadonlyArray<Span>) => ({
  name: span.name,
  service: span.service,
  kind: span.kind,
  parent: all.find((s) => s.spanId === span.parentSpanId)?.name,
  sameTrace: all.every((s) => s.traceId === span.traceId),
  attributes: attributes(span.attributes),
  events: span.events.map((e) => ({
    name: e.name,
    attributes: attributes(e.attributes.filter((a) => a.key !== "exception.stacktrace"))
  })),
  links: span.links.map((l) => ({
    to: all.find((s) => s.spanId === l.spanId)?.name,
    attributes: attributes(l.attributes)
  })),
  status: { code: span.status.code ?? 0, message: span.status.message },
  timed: BigInt(span.endTimeUnixNano) >= BigInt(span.startTimeUnixNano) && BigInt(span.startTimeUnixNano) > 0n
})

describe("OTLP protobuf traces", () => {
  it.live("say of each span what effect's OTLP/JSON tracer says", () =>
    Effect.gen(function* () {
      const json = yield* exportWith({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })
      const protobuf = yield* exportWith({})
      const byName = (spans: ReadonlyArray<Span>) =>
        [...spans].sort((a, b) => a.name.localeCompare(b.name)).map((span) => content(span, spans))
      assert.deepStrictEqual(
        byName(protobuf).map((s) => s.name),
        ["failing", "interrupted", "linked", "request", "with-event"]
      )
      assert.deepStrictEqual(byName(protobuf), byName(json))
      const request = byName(protobuf).find((s) => s.name === "request")!
      assert.deepInclude(request.attributes, { key: "unicode", value: { stringValue: "café — 東京" } })
      assert.deepInclude(request.attributes, { key: "negative", value: { intValue: -5 } })
      assert.strictEqual(byName(protobuf).find((s) => s.name === "failing")!.status.message, "the store is locked")
    })
  )

  it("writes a message longer than one length byte holds, and a body that outgrows the buffer", () => {
    const w = new ProtoWriter()
    const mark = w.begin(1)
    w.string(2, "é".repeat(5000))
    w.end(mark)
    const bytes = w.take()
    // tag, a two-byte length, then the string field: tag, a two-byte length, 10,000 bytes.
    assert.strictEqual(bytes.length, 1 + 2 + 1 + 2 + 10_000)
    assert.deepStrictEqual([...bytes.subarray(0, 3)], [0x0a, (10_003 % 128) | 0x80, Math.floor(10_003 / 128)])
    assert.strictEqual(new TextDecoder().decode(bytes.subarray(6)), "é".repeat(5000))
  })

  it("sends only the spans the exporter took: those written while it refused them stay out of the next batch", () => {
    const ended = (name: string) => {
      const span = new Tracer.NativeSpan({
        name,
        parent: Option.none(),
        annotations: Context.empty(),
        links: [],
        startTime: 1n,
        kind: "internal",
        sampled: true
      })
      span.end(2n, Exit.void)
      return span
    }
    const frame = traceRequestFrame({ attributes: [] }, { name: "test", version: "1" })
    const names = (body: Uint8Array) => decodeTraces(body, "application/x-protobuf").map((span) => span.name)
    const pending = new PendingSpans(1 << 20)
    // The first two were written while the exporter refused them; it took the last two.
    pending.write(ended("refused-1"))
    pending.write(ended("refused-2"))
    const taken = [pending.write(ended("taken-1"))!, pending.write(ended("taken-2"))!]
    assert.deepStrictEqual(names(pending.take(frame, taken)), ["taken-1", "taken-2"])
    // Emptied by the batch; nothing taken gives an empty batch.
    assert.deepStrictEqual(names(pending.take(frame, [])), [])
    // Past its limit, the buffer starts again: a batch never holds a span cut in two.
    const small = new PendingSpans(100)
    const lengths = Array.from({ length: 5 }, (_, k) => small.write(ended(`span-${k}`))!)
    const kept = names(small.take(frame, lengths))
    assert.isAbove(kept.length, 0)
    assert.isBelow(kept.length, 5)
    assert.deepStrictEqual(kept, ["span-0", "span-1", "span-2", "span-3", "span-4"].slice(5 - kept.length))
  })
})
