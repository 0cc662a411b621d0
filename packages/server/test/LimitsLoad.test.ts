/**
 * The load limits under autocannon's load over a real socket: past its rate, a client gets 429 with Retry-After and
 * no more answers than its token bucket allows; past the requests in flight and the queue, 503 at once; every answer
 * is one or the other, none is lost, and the refusals' counter of `/metrics` counts each refusal once. Only invariants
 * are asserted, which hold however fast (or busy) the machine is.
 */

import { request as httpRequest } from "node:http"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { layerSqlite } from "@funcpipe/pipeline/store/sqlite/SqliteIndexStore"
import autocannon from "autocannon"
import { Clock, Deferred, Effect, Exit, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { layer } from "../src/Server.ts"
import { baseUrl, fixtureIndex, serverOver, slowEmbedder, testOptions } from "./Fixture.ts"

/** An answer as autocannon saw it: its status, the one header that matters here, and its body's `_tag`. */
interface Seen {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly tag: unknown
}

/**
 * `amount` queries posted to `url` over `connections` connections, every answer kept; `onAnswer` is told of each as it
 * arrives. Stopped if the test is interrupted.
 */
const load = (
  url: string,
  options: { readonly amount: number; readonly connections: number },
  onAnswer = (_: Seen) => {}
) =>
  Effect.callback<{ readonly result: autocannon.Result; readonly seen: ReadonlyArray<Seen> }, Error>((resume) => {
    const seen: Array<Seen> = []
    const instance = autocannon(
      {
        url,
        amount: options.amount,
        connections: options.connections,
        // Generous: a request answered later than this is a timeout, which the tests count as a failure.
        timeout: 30,
        // It ends at the first sample after the last answer: every 50 ms rather than every second.
        sampleInt: 50,
        requests: [
          {
            method: "POST",
            path: "/v1/query",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ text: "Saturn rings", mode: "vector", top_k: 2 }),
            onResponse: (status, body, _context, headers) => {
              const header = Object.entries(headers ?? {}).find(([name]) => name.toLowerCase() === "retry-after")
              let tag: unknown
              try {
                tag = (JSON.parse(body) as { readonly _tag?: unknown })._tag
              } catch {
                tag = body
              }
              const answer = { status, retryAfter: header === undefined ? undefined : String(header[1]), tag }
              seen.push(answer)
              onAnswer(answer)
            }
          }
        ]
      },
      (error, result) => resume(error ? Effect.fail(error) : Effect.succeed({ result, seen }))
    )
    return Effect.sync(() => instance.stop())
  })

/** The scrape of `/metrics`, sent from `localAddress` (another loopback address is another client of the limits). */
const scrape = (url: string, localAddress: string) =>
  Effect.callback<string, Error>((resume) => {
    const request = httpRequest(`${url}/metrics`, { localAddress }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (text += chunk))
      response.on("end", () =>
        resume(
          response.statusCode === 200
            ? Effect.succeed(text)
            : Effect.fail(new Error(`GET /metrics: ${response.statusCode} ${text}`))
        )
      )
    })
    request.on("error", (error) => resume(Effect.fail(error)))
    request.end()
    return Effect.sync(() => request.destroy())
  })

/** The value of the refusals' counter for `reason` (0 before the first). */
const refusals = (metrics: string, reason: string): number => {
  const line = metrics
    .split("\n")
    .find((l) => l.startsWith("funcpipe_http_requests_refused_total{") && l.includes(`reason="${reason}"`))
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
}

/** How many answers had `status`. */
const count = (seen: ReadonlyArray<Seen>, status: number) => seen.filter((answer) => answer.status === status).length

/** The answers counted by status, as autocannon's `statusCodeStats` counts them. */
const byStatus = (seen: ReadonlyArray<Seen>): Record<string, { count: number }> => {
  const counts: Record<string, { count: number }> = {}
  for (const { status } of seen) counts[status] = { count: (counts[status]?.count ?? 0) + 1 }
  return counts
}

describe("load limits under load", () => {
  it.live(
    "a client past its rate gets 200 or 429, never more 200s than its bucket held, each 429 counted once",
    () =>
      Effect.gen(function* () {
        const file = yield* fixtureIndex
        const limit = { perSecond: 5, burst: 20 }
        const amount = 300
        yield* Effect.gen(function* () {
          const url = yield* baseUrl
          // Scraped from 127.0.0.2, a client with a bucket of its own: autocannon's, 127.0.0.1's, is empty at the end.
          const before = refusals(yield* scrape(url, "127.0.0.2"), "rate_limited")
          const started = yield* Clock.currentTimeMillis
          const { result, seen } = yield* load(url, { amount, connections: 10 })
          const elapsed = ((yield* Clock.currentTimeMillis) - started) / 1000
          const after = refusals(yield* scrape(url, "127.0.0.2"), "rate_limited")

          assert.deepStrictEqual([result.errors, result.timeouts], [0, 0])
          assert.strictEqual(seen.length, amount)
          const answered = count(seen, 200)
          const limited = count(seen, 429)
          assert.strictEqual(answered + limited, amount, "every answer is 200 or 429")
          assert.deepStrictEqual(result.statusCodeStats, byStatus(seen))
          // The bucket starts full and only fills up: the first `burst` are answered, and after them no more than it
          // refills in the run (a second more, for the clocks' reading around it).
          assert.isAtLeast(answered, limit.burst)
          assert.isAtMost(answered, limit.burst + limit.perSecond * (elapsed + 1), `in ${elapsed} s`)
          for (const refused of seen.filter((answer) => answer.status === 429)) {
            assert.strictEqual(refused.tag, "RateLimited")
            assert.isAtLeast(Number(refused.retryAfter), 1)
          }
          assert.strictEqual(after - before, limited, "the refusals' counter counts each 429 once")
        }).pipe(Effect.provide(serverOver(file, { rateLimit: limit })))
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "past the requests in flight and the queue, 503 at once; every other request is answered, each 503 counted once",
    () =>
      Effect.gen(function* () {
        const file = yield* fixtureIndex
        const amount = 200
        // Queries wait for the gate until a request has been shed: by then one has its turn and two wait in the queue,
        // however slowly autocannon's twenty connections come; afterwards the queries run at the machine's speed.
        const gate = Deferred.makeUnsafe<void>()
        const slow = slowEmbedder(Deferred.await(gate))
        const server = Layer.mergeAll(
          layer(testOptions({ concurrency: { inFlight: 1, queue: 2 } })),
          FetchHttpClient.layer
        ).pipe(Layer.provide(Layer.mergeAll(layerSqlite(file), slow, NodeServices.layer)))
        yield* Effect.gen(function* () {
          const url = yield* baseUrl
          const scraped = () => scrape(url, "127.0.0.1")
          const before = yield* scraped()
          const { result, seen } = yield* load(url, { amount, connections: 20 }, (answer) => {
            if (answer.status === 503) Deferred.doneUnsafe(gate, Exit.void)
          })
          const after = yield* scraped()

          assert.deepStrictEqual([result.errors, result.timeouts], [0, 0])
          assert.strictEqual(seen.length, amount)
          const shed = count(seen, 503)
          assert.isAtLeast(shed, 1)
          assert.strictEqual(count(seen, 200), amount - shed, "every request not shed is answered")
          assert.deepStrictEqual(result.statusCodeStats, byStatus(seen))
          for (const refused of seen.filter((answer) => answer.status === 503))
            assert.deepStrictEqual([refused.tag, refused.retryAfter], ["Overloaded", "1"])
          assert.strictEqual(
            refusals(after, "overloaded") - refusals(before, "overloaded"),
            shed,
            "the refusals' counter counts each 503 once"
          )
        }).pipe(Effect.provide(server))
      }).pipe(Effect.scoped),
    60_000
  )
})
