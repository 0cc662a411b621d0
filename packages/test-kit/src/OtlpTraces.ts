/**
 * What an OTLP/HTTP traces request holds, read the way a collector reads it: a body in OTLP/JSON or in protobuf
 * (`application/x-protobuf`), turned into OTLP/JSON's shape of a span, so that tests compare either encoding alike.
 * The protobuf side reads the wire format field by field from opentelemetry-proto's numbering; it shares nothing with
 * the encoder it checks.
 */

/** An attribute value as OTLP/JSON writes it (`stringValue`, `intValue`, `doubleValue`, `boolValue`, `arrayValue`). */
export type AnyValue = Record<string, unknown>

/** A key and its value. */
export interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}

/** A span as OTLP/JSON gives it, with the `service.name` of its resource. */
export interface Span {
  readonly service: string | undefined
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: ReadonlyArray<KeyValue>
  readonly events: ReadonlyArray<{
    readonly name: string
    readonly timeUnixNano: string
    readonly attributes: ReadonlyArray<KeyValue>
  }>
  readonly links: ReadonlyArray<{
    readonly traceId: string
    readonly spanId: string
    readonly attributes: ReadonlyArray<KeyValue>
  }>
  readonly status: { readonly code?: number; readonly message?: string }
}

/** One field of a protobuf message: its number and its value (a varint or fixed64 as a bigint, bytes as bytes). */
interface Field {
  readonly field: number
  readonly value: bigint | Uint8Array
}

/** A message's fields in order. */
const fields = (bytes: Uint8Array): Array<Field> => {
  const out: Array<Field> = []
  let at = 0
  const varint = (): bigint => {
    let result = 0n
    let shift = 0n
    for (;;) {
      const byte = bytes[at++]
      if (byte === undefined) throw new Error("protobuf: a varint runs past the end")
      result |= BigInt(byte & 0x7f) << shift
      if (byte < 0x80) return result
      shift += 7n
    }
  }
  while (at < bytes.length) {
    const key = Number(varint())
    const field = key >>> 3
    switch (key & 7) {
      case 0:
        out.push({ field, value: varint() })
        break
      case 1:
        out.push({ field, value: new DataView(bytes.buffer, bytes.byteOffset + at, 8).getBigUint64(0, true) })
        at += 8
        break
      case 2: {
        const length = Number(varint())
        if (at + length > bytes.length) throw new Error("protobuf: a field runs past the end")
        out.push({ field, value: bytes.subarray(at, at + length) })
        at += length
        break
      }
      case 5:
        out.push({ field, value: BigInt(new DataView(bytes.buffer, bytes.byteOffset + at, 4).getUint32(0, true)) })
        at += 4
        break
      default:
        throw new Error(`protobuf: wire type ${key & 7} is not one OTLP uses`)
    }
  }
  return out
}

const all = (message: ReadonlyArray<Field>, field: number) =>
  message.filter((f) => f.field === field).map((f) => f.value)
const bytesOf = (message: ReadonlyArray<Field>, field: number) => all(message, field).at(-1) as Uint8Array | undefined
const numberOf = (message: ReadonlyArray<Field>, field: number) => all(message, field).at(-1) as bigint | undefined
const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? "" : new TextDecoder().decode(bytes))
const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString("hex")

/** AnyValue (common/v1): string 1, bool 2, int64 3, double 4, array 5. */
const anyValue = (bytes: Uint8Array): AnyValue => {
  const [first] = fields(bytes)
  if (first === undefined) return {}
  switch (first.field) {
    case 1:
      return { stringValue: text(first.value as Uint8Array) }
    case 2:
      return { boolValue: first.value === 1n }
    case 3: {
      const n = BigInt.asIntN(64, first.value as bigint)
      return { intValue: Number.isSafeInteger(Number(n)) ? Number(n) : String(n) }
    }
    case 4: {
      const view = new DataView(new ArrayBuffer(8))
      view.setBigUint64(0, first.value as bigint, true)
      return { doubleValue: view.getFloat64(0, true) }
    }
    case 5:
      return { arrayValue: { values: all(fields(first.value as Uint8Array), 1).map((v) => anyValue(v as Uint8Array)) } }
    default:
      return { unknown: first.field }
  }
}

/** KeyValue (common/v1): key 1, value 2. */
const keyValues = (message: ReadonlyArray<Field>, field: number): Array<KeyValue> =>
  all(message, field).map((value) => {
    const kv = fields(value as Uint8Array)
    const inner = bytesOf(kv, 2)
    return { key: text(bytesOf(kv, 1)), value: inner === undefined ? {} : anyValue(inner) }
  })

/** Span (trace/v1). */
const span = (bytes: Uint8Array, service: string | undefined): Span => {
  const s = fields(bytes)
  const parent = bytesOf(s, 4)
  const status = fields(bytesOf(s, 15) ?? new Uint8Array())
  const code = numberOf(status, 3)
  const message = bytesOf(status, 2)
  return {
    service,
    traceId: hex(bytesOf(s, 1)),
    spanId: hex(bytesOf(s, 2)),
    ...(parent === undefined ? {} : { parentSpanId: hex(parent) }),
    name: text(bytesOf(s, 5)),
    kind: Number(numberOf(s, 6) ?? 0n),
    startTimeUnixNano: String(numberOf(s, 7) ?? 0n),
    endTimeUnixNano: String(numberOf(s, 8) ?? 0n),
    attributes: keyValues(s, 9),
    events: all(s, 11).map((value) => {
      const e = fields(value as Uint8Array)
      return { timeUnixNano: String(numberOf(e, 1) ?? 0n), name: text(bytesOf(e, 2)), attributes: keyValues(e, 3) }
    }),
    links: all(s, 13).map((value) => {
      const l = fields(value as Uint8Array)
      return { traceId: hex(bytesOf(l, 1)), spanId: hex(bytesOf(l, 2)), attributes: keyValues(l, 4) }
    }),
    status: {
      ...(code === undefined ? {} : { code: Number(code) }),
      ...(message === undefined ? {} : { message: text(message) })
    }
  }
}

const serviceOf = (attributes: ReadonlyArray<KeyValue>) =>
  attributes.find((a) => a.key === "service.name")?.value["stringValue"] as string | undefined

/**
 * The spans of an `ExportTraceServiceRequest`: protobuf when `contentType` says so, OTLP/JSON otherwise. In JSON, a
 * span's missing lists are empty, as protobuf reads them.
 */
export const decodeTraces = (body: Uint8Array, contentType: string | undefined): Array<Span> => {
  const out: Array<Span> = []
  if ((contentType ?? "").includes("protobuf")) {
    for (const resourceSpans of all(fields(body), 1)) {
      const rs = fields(resourceSpans as Uint8Array)
      const service = serviceOf(keyValues(fields(bytesOf(rs, 1) ?? new Uint8Array()), 1))
      for (const scopeSpans of all(rs, 2))
        for (const one of all(fields(scopeSpans as Uint8Array), 2)) out.push(span(one as Uint8Array, service))
    }
    return out
  }
  // biome-ignore lint/suspicious/noExplicitAny: OTLP/JSON, explored field by field
  const json: any = JSON.parse(new TextDecoder().decode(body))
  for (const resource of json.resourceSpans ?? []) {
    const service = serviceOf(resource.resource?.attributes ?? [])
    for (const scope of resource.scopeSpans ?? [])
      for (const one of scope.spans ?? [])
        out.push({ attributes: [], events: [], links: [], status: {}, ...one, service })
  }
  return out
}

/**
 * The names of the metrics in an `ExportMetricsServiceRequest` (resource_metrics 1 → scope_metrics 2 → metrics 2 →
 * name 1), protobuf or OTLP/JSON as `contentType` says.
 */
export const decodeMetricNames = (body: Uint8Array, contentType: string | undefined): Array<string> => {
  if ((contentType ?? "").includes("protobuf"))
    return all(fields(body), 1).flatMap((resource) =>
      all(fields(resource as Uint8Array), 2).flatMap((scope) =>
        all(fields(scope as Uint8Array), 2).map((metric) => text(bytesOf(fields(metric as Uint8Array), 1)))
      )
    )
  const json = JSON.parse(new TextDecoder().decode(body)) as {
    readonly resourceMetrics?: ReadonlyArray<{
      readonly scopeMetrics?: ReadonlyArray<{ readonly metrics?: ReadonlyArray<{ readonly name: string }> }>
    }>
  }
  return (json.resourceMetrics ?? []).flatMap((resource) =>
    (resource.scopeMetrics ?? []).flatMap((scope) => (scope.metrics ?? []).map((metric) => metric.name))
  )
}
