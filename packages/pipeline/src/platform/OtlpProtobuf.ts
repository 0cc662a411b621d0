/**
 * Spans in OTLP's protobuf wire format (opentelemetry-proto's `trace/v1` and `common/v1` messages), written straight
 * into bytes as each span ends. A server that exports every trace pays for this on every request: OTLP/JSON cost about
 * 6 µs a span in `JSON.stringify` alone, on top of the objects it is built from, which wait in the exporter's batch
 * long enough to be copied by the collector; this costs about a microsecond and keeps only the bytes.
 *
 * What a span says is what effect's OTLP tracer says of it (ids, parent, kind, times, attributes, events, links, and
 * the status from its exit), so a collector sees the same trace whichever encoding it gets.
 */

import { Cause, Formatter, Option, type Tracer } from "effect"

/** A growing byte buffer with protobuf's field writers; nested messages are opened and closed around their fields. */
export class ProtoWriter {
  bytes = new Uint8Array(4096)
  pos = 0
  private view = new DataView(this.bytes.buffer)

  room(n: number): void {
    if (this.pos + n <= this.bytes.length) return
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.pos + n))
    grown.set(this.bytes.subarray(0, this.pos))
    this.bytes = grown
    this.view = new DataView(grown.buffer)
  }

  /** An unsigned varint below 2^53. */
  varint(n: number): void {
    this.room(10)
    while (n >= 0x80) {
      this.bytes[this.pos++] = (n % 0x80) | 0x80
      n = Math.floor(n / 0x80)
    }
    this.bytes[this.pos++] = n
  }

  /** A signed 64-bit integer as protobuf's `int64` writes it (two's complement, so a negative one takes ten bytes). */
  int64(n: bigint): void {
    let u = BigInt.asUintN(64, n)
    this.room(10)
    while (u >= 0x80n) {
      this.bytes[this.pos++] = Number(u & 0x7fn) | 0x80
      u >>= 7n
    }
    this.bytes[this.pos++] = Number(u)
  }

  tag(field: number, wire: 0 | 1 | 2 | 5): void {
    this.varint(field * 8 + wire)
  }

  fixed64(field: number, n: bigint): void {
    this.tag(field, 1)
    this.room(8)
    this.view.setBigUint64(this.pos, BigInt.asUintN(64, n), true)
    this.pos += 8
  }

  double(field: number, x: number): void {
    this.tag(field, 1)
    this.room(8)
    this.view.setFloat64(this.pos, x, true)
    this.pos += 8
  }

  /** A string field, UTF-8; an ASCII string is copied a character a byte. */
  string(field: number, text: string): void {
    const mark = this.begin(field)
    this.room(text.length * 3)
    if (text.length > 24) {
      this.pos += UTF8.encodeInto(text, this.bytes.subarray(this.pos)).written
      this.end(mark)
      return
    }
    let ascii = true
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (c >= 0x80) {
        ascii = false
        break
      }
      this.bytes[this.pos + i] = c
    }
    if (ascii) this.pos += text.length
    else this.pos += UTF8.encodeInto(text, this.bytes.subarray(this.pos)).written
    this.end(mark)
  }

  /** A `bytes` field from hexadecimal text (a trace or span id). */
  hex(field: number, text: string): void {
    this.tag(field, 2)
    this.varint(text.length >> 1)
    this.room(text.length >> 1)
    for (let i = 0; i < text.length; i += 2)
      this.bytes[this.pos++] = (nibble(text.charCodeAt(i)) << 4) | nibble(text.charCodeAt(i + 1))
  }

  /** Opens a length-delimited field: one byte is kept for its length, which `end` writes (moving the body if longer). */
  begin(field: number): number {
    this.tag(field, 2)
    this.room(1)
    return this.pos++
  }

  end(mark: number): void {
    const length = this.pos - mark - 1
    if (length < 0x80) {
      this.bytes[mark] = length
      return
    }
    let extra = 0
    for (let n = length >>> 7; n > 0; n >>>= 7) extra++
    this.room(extra)
    this.bytes.copyWithin(mark + 1 + extra, mark + 1, this.pos)
    this.pos = mark
    this.varint(length)
    this.pos += length
  }

  /** Bytes as they are (an already written message). */
  raw(bytes: Uint8Array): void {
    this.room(bytes.length)
    this.bytes.set(bytes, this.pos)
    this.pos += bytes.length
  }

  /** Empties the writer, and lets go of a buffer a burst grew past 1 MiB. */
  reset(): void {
    this.pos = 0
    if (this.bytes.length > 1024 * 1024) {
      this.bytes = new Uint8Array(4096)
      this.view = new DataView(this.bytes.buffer)
    }
  }

  /** What was written, copied out, and the writer emptied for the next message. */
  take(): Uint8Array {
    const out = this.bytes.slice(0, this.pos)
    this.pos = 0
    return out
  }
}

/** A hexadecimal digit's value (either case). */
const nibble = (c: number): number => (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57)

const UTF8 = new TextEncoder()

const INT64_BOUND = 2 ** 63

/** An `AnyValue` (common/v1) of a JavaScript value, as effect's OTLP exporters map one. */
const anyValue = (w: ProtoWriter, field: number, value: unknown): void => {
  const mark = w.begin(field)
  if (Array.isArray(value)) {
    const array = w.begin(5)
    for (const item of value) anyValue(w, 1, item)
    w.end(array)
  } else {
    switch (typeof value) {
      case "string":
        w.string(1, value)
        break
      case "boolean":
        w.tag(2, 0)
        w.varint(value ? 1 : 0)
        break
      case "bigint":
        if (BigInt.asIntN(64, value) === value) {
          w.tag(3, 0)
          w.int64(value)
        } else w.string(1, String(value))
        break
      case "number":
        if (Number.isInteger(value) && value >= -INT64_BOUND && value < INT64_BOUND) {
          w.tag(3, 0)
          if (value >= 0 && Number.isSafeInteger(value)) w.varint(value)
          else w.int64(BigInt(value))
        } else w.double(4, value)
        break
      default:
        w.string(1, Formatter.format(value))
    }
  }
  w.end(mark)
}

/**
 * Attribute keys as written (field 1 of a `KeyValue`, tag and length included): the same few keys come with every
 * span. Up to KEYS_KEPT of them; a program that makes keys of its own without end has the rest written each time.
 */
const writtenKeys = new Map<string, Uint8Array>()
const KEYS_KEPT = 4096

/** A `KeyValue` (common/v1) as field `field`. */
export const keyValue = (w: ProtoWriter, field: number, key: string, value: unknown): void => {
  const mark = w.begin(field)
  const written = writtenKeys.get(key)
  if (written !== undefined) w.raw(written)
  else {
    const start = w.pos
    w.string(1, key)
    if (writtenKeys.size < KEYS_KEPT) writtenKeys.set(key, w.bytes.slice(start, w.pos))
  }
  anyValue(w, 2, value)
  w.end(mark)
}

const SPAN_KIND: Record<Tracer.SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }

/**
 * One ended span as a `Span` message (trace/v1), written as field 2 of a `ScopeSpans`, tag and length included, so
 * that a batch is its spans' bytes put one after another.
 */
export const writeSpan = (w: ProtoWriter, span: Tracer.NativeSpan): void => {
  const status = span.status
  if (status._tag !== "Ended") return
  const mark = w.begin(2)
  w.hex(1, span.traceId.padStart(32, "0"))
  w.hex(2, span.spanId)
  const parent = Option.getOrUndefined(span.parent)
  if (parent !== undefined) w.hex(4, parent.spanId)
  w.string(5, span.name)
  w.tag(6, 0)
  w.varint(SPAN_KIND[span.kind] ?? 0)
  w.fixed64(7, status.startTime)
  w.fixed64(8, status.endTime)
  if (span._attributes !== undefined) for (const [key, value] of span._attributes) keyValue(w, 9, key, value)
  if (span._events !== undefined)
    for (const [name, time, attributes] of span._events) writeEvent(w, name, time, attributes)
  // The status as effect's tracer sets it: OK, unset for an interruption, or the first error with an event for each.
  const exit = status.exit
  let code = 1
  let message: string | undefined
  if (exit._tag === "Failure") {
    if (Cause.hasInterruptsOnly(exit.cause)) {
      code = 0
      keyValue(w, 9, "effect.fiber.interrupted", true)
    } else {
      const errors = Cause.prettyErrors(exit.cause, { includeCauseInStack: true })
      if (errors.length > 0) {
        code = 2
        message = errors[0]!.message
      }
      for (const error of errors) {
        writeEvent(w, "exception", status.endTime, {
          "exception.type": error.name,
          "exception.message": error.message,
          "exception.stacktrace": error.stack ?? "No stack trace available"
        })
      }
    }
  }
  for (const link of span.links) {
    const linked = w.begin(13)
    w.hex(1, link.span.traceId.padStart(32, "0"))
    w.hex(2, link.span.spanId)
    for (const [key, value] of Object.entries(link.attributes)) keyValue(w, 4, key, value)
    w.end(linked)
  }
  const statusMark = w.begin(15)
  if (message !== undefined) w.string(2, message)
  if (code !== 0) {
    w.tag(3, 0)
    w.varint(code)
  }
  w.end(statusMark)
  w.end(mark)
}

const writeEvent = (w: ProtoWriter, name: string, time: bigint, attributes: Record<string, unknown>): void => {
  const mark = w.begin(11)
  w.fixed64(1, time)
  w.string(2, name)
  for (const [key, value] of Object.entries(attributes)) keyValue(w, 3, key, value)
  w.end(mark)
}

/**
 * Ended spans' bytes waiting to be sent, one after another, while effect's batching exporter is handed their lengths.
 * Both happen synchronously, so the spans of the lengths the exporter holds are always the last ones written: when it
 * sends, exactly their bytes go (`take`). The exporter refuses what it is handed for a minute after a failed export;
 * the spans written meanwhile are left out of the next batch, and past `limit` bytes the buffer starts again.
 */
export class PendingSpans {
  private readonly writer = new ProtoWriter()
  private readonly limit: number
  constructor(limit: number) {
    this.limit = limit
  }

  /** Writes an ended span; its length in bytes, or undefined for one the encoding could not write (it is dropped). */
  write(span: Tracer.NativeSpan): number | undefined {
    const w = this.writer
    if (w.pos > this.limit) w.reset()
    const start = w.pos
    try {
      writeSpan(w, span)
      return w.pos - start
    } catch {
      w.pos = start
      return undefined
    }
  }

  /** The bytes of the last spans, of these `lengths`, after `head`, in a new array; the buffer is emptied. */
  take(head: (spanBytes: number) => Uint8Array, lengths: ReadonlyArray<number>): Uint8Array {
    let total = 0
    for (const length of lengths) total += length
    const w = this.writer
    const spans = w.bytes.subarray(Math.max(0, w.pos - total), w.pos)
    const first = head(spans.length)
    const body = new Uint8Array(first.length + spans.length)
    body.set(first)
    body.set(spans, first.length)
    w.reset()
    return body
  }
}

/** OTLP's resource as effect's `OtlpResource` gives it: attributes of `{ key, value: AnyValue }` in OTLP/JSON's form. */
export interface JsonResource {
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: unknown }>
}

/** OTLP/JSON's `AnyValue` back to the value it was made from, for the resource's attributes. */
const fromJsonValue = (value: unknown): unknown => {
  const v = value as Record<string, unknown>
  if ("stringValue" in v) return v["stringValue"]
  if ("boolValue" in v) return v["boolValue"]
  if ("intValue" in v) return typeof v["intValue"] === "string" ? BigInt(v["intValue"]) : v["intValue"]
  if ("doubleValue" in v) return v["doubleValue"]
  if ("arrayValue" in v) return ((v["arrayValue"] as { values: Array<unknown> }).values ?? []).map(fromJsonValue)
  return Formatter.format(value)
}

/**
 * The bytes of an `ExportTraceServiceRequest` before and after its spans: one `ResourceSpans` with the resource and one
 * `ScopeSpans` with the scope, whose lengths depend on the spans' (`frame(spanBytes)`).
 */
export const traceRequestFrame = (
  resource: JsonResource,
  scope: { readonly name: string; readonly version: string }
): ((spanBytes: number) => Uint8Array) => {
  const w = new ProtoWriter()
  const resourceMark = w.begin(1)
  for (const { key, value } of resource.attributes) keyValue(w, 1, key, fromJsonValue(value))
  w.end(resourceMark)
  const resourceBytes = w.take()
  const scopeMark = w.begin(1)
  w.string(1, scope.name)
  w.string(2, scope.version)
  w.end(scopeMark)
  const scopeBytes = w.take()
  return (spanBytes) => {
    // ExportTraceServiceRequest { resource_spans = 1: ResourceSpans { resource = 1, scope_spans = 2: ScopeSpans {
    // scope = 1, spans = 2 … } } }
    const scopeSpans = scopeBytes.length + spanBytes
    const head = new ProtoWriter()
    const resourceSpans = resourceBytes.length + 1 + varintLength(scopeSpans) + scopeSpans
    head.tag(1, 2)
    head.varint(resourceSpans)
    head.raw(resourceBytes)
    head.tag(2, 2)
    head.varint(scopeSpans)
    head.raw(scopeBytes)
    return head.take()
  }
}

const varintLength = (n: number): number => {
  let length = 1
  while (n >= 0x80) {
    n = Math.floor(n / 0x80)
    length++
  }
  return length
}
