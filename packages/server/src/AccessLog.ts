/**
 * Request ids and access logs: each request gets an id (the client's `X-Request-Id` where it sends a usable one, else
 * the trace id of its `traceparent`, else a new one), sent back as `X-Request-Id`; with `--log-format json`, each
 * answer is logged as one JSON object a line. A query's text is left out unless `--log-queries` asks for it.
 */

import { randomBytes } from "node:crypto"
import { Context } from "effect"

/** What a handler adds to its request's log line: the query's mode and result count, and its text. */
export class RequestDetails extends Context.Service<
  RequestDetails,
  { mode: string | undefined; results: number | undefined; query: string | undefined }
>()("server/RequestDetails") {}

/** One answer's log line, as `--log-format json` writes it. */
export interface AccessEntry {
  readonly time: string
  readonly request_id: string
  readonly method: string
  readonly route: string
  readonly status: number
  readonly duration_ms: number
  readonly mode?: string
  readonly results?: number
  readonly query?: string
}

const USABLE_ID = /^[\x21-\x7e]{1,128}$/
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** A W3C `traceparent`'s fields, lower-cased, when it has their form (what they say is the caller's to check). */
export const traceparentOf = (
  header: string | undefined
):
  | { readonly version: string; readonly traceId: string; readonly spanId: string; readonly flags: string }
  | undefined => {
  const found = TRACEPARENT.exec(header?.trim().toLowerCase() ?? "")
  return found === null ? undefined : { version: found[1]!, traceId: found[2]!, spanId: found[3]!, flags: found[4]! }
}

/**
 * The request's id: the client's `X-Request-Id`, else the trace id of the request's span where traces are exported
 * (the `traceparent`'s when the client sent one), else its `traceparent`'s trace id, else a new random one.
 */
export const requestIdOf = (
  headers: { readonly [name: string]: string | undefined },
  traceId?: string | undefined
): string => {
  const given = headers["x-request-id"]
  if (given !== undefined && USABLE_ID.test(given)) return given
  if (traceId !== undefined) return traceId
  const trace = traceparentOf(headers["traceparent"])?.traceId
  if (trace !== undefined && !/^0+$/.test(trace)) return trace
  return freshId()
}

/**
 * Random bytes are drawn 4 KiB at a time: each draw is a system call, which on this project's virtual machines cost
 * about 19 µs, a twentieth of a short query, when one was made for every request.
 */
let pool = Buffer.alloc(0)
let used = 0
const freshId = (): string => {
  if (used + 16 > pool.length) {
    pool = randomBytes(4096)
    used = 0
  }
  used += 16
  return pool.toString("hex", used - 16, used)
}
