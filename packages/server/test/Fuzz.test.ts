/**
 * The request decoder under arbitrary input: any body, however deep or malformed, is answered with a 4xx and a JSON
 * error of one message, never a 5xx and never a stack trace.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { fixtureIndex, send, serverOver } from "./Fixture.ts"

/** Nested arrays or objects `depth` deep around a value, as JSON text. */
const nested = (depth: number, open: string, close: string, inner: string) =>
  open.repeat(depth) + inner + close.repeat(depth)

const deep = fc
  .tuple(
    fc.integer({ min: 1, max: 20_000 }),
    fc.constantFrom(["[", "]"], ['{"a":', "}"], ['{"_tag":"Not","rule":', "}"])
  )
  .map(([depth, [open, close]]) => nested(depth, open!, close!, "1"))

/** A request body: arbitrary JSON, JSON with deep values in the request's fields, or text that is not JSON. */
const body = fc.oneof(
  fc.json({ maxDepth: 6 }),
  fc
    .tuple(fc.constantFrom("text", "where", "top_k", "queries", "documents", "extra"), deep)
    .map(([field, value]) => `{"text":"moon","${field}":${value}}`),
  deep,
  fc.string({ maxLength: 100 })
)

describe("the request decoder, fuzzed", () => {
  it.effect("answers any body with a 4xx and one message, never a 5xx or a stack trace", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const samples = fc.sample(fc.tuple(fc.constantFrom("/v1/query", "/v1/query/batch", "/v1/documents"), body), {
          numRuns: 150,
          seed: 30
        })
        for (const [path, text] of samples) {
          const answer = yield* send(path === "/v1/documents" ? "PUT" : "POST", path, text)
          const shown = `${path} ${text.slice(0, 80)}`
          assert.isBelow(answer.status, 500, shown)
          if (answer.status >= 400) {
            assert.isString(answer.body._tag, shown)
            assert.notMatch(JSON.stringify(answer.body), /\\n\s+at |Maximum call stack|RangeError/, shown)
          }
        }
      }).pipe(Effect.provide(serverOver(file, { writable: true })))
    })
  )
})
