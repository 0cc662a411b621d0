/** Pseudo-relevance feedback: the expanded query finds what shares words with the best answers, not with the query. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { eq, not } from "@funcpipe/domain/Rule"
import { Effect, Layer } from "effect"
import fc from "fast-check"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { searchPaths } from "../src/programs/Search.ts"
import { defaultExpansion, WEIGHT_STEPS, weightedTerms } from "../src/search/Expansion.ts"
import { layerTemporary } from "../src/store/sqlite/TempIndexStore.ts"
import { docsSource } from "./Sources.ts"

const corpus: ReadonlyArray<readonly [string, string]> = [
  ["moon", "The Moon is the Earth's satellite; its lunar craters and lunar seas face us."],
  ["eclipse", "A lunar eclipse darkens the lunar disc red."],
  ["sun", "The Sun is a star."],
  ["mars", "Mars has two small satellites."]
]

const source = docsSource(corpus)

const found = (options: Parameters<typeof searchPaths>[3]) =>
  Effect.map(searchPaths(["corpus"], "moon", 10, { mode: "lexical", ...options }), (a) =>
    a.results.map((r) => String(r.chunk.docId))
  )

describe("query expansion", () => {
  it.effect("finds, with bo1 or rm3, a document that shares a word with the best answer but none with the query", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* found({}), ["moon"])
      for (const method of ["bo1", "rm3"] as const) {
        const expanded = yield* found({ expand: defaultExpansion(method) })
        assert.strictEqual(expanded[0], "moon", `${method} keeps the best answer first`)
        assert.include(expanded, "eclipse", `${method} adds "lunar" from the best answer`)
      }
    }).pipe(Effect.provide(Layer.mergeAll(source, Embedder.layerLocalSha256, NodeServices.layer)))
  )

  it.effect("with a filter, takes its feedback from the chunks the filter allows", () =>
    Effect.gen(function* () {
      yield* indexPaths(["corpus"])
      const answer = (where?: ReturnType<typeof not>) =>
        Effect.map(
          queryIndex("moon", 10, { mode: "lexical", expand: defaultExpansion("bo1"), ...(where ? { where } : {}) }),
          (a) => a.results.map((r) => String(r.chunk.docId))
        )
      // Unfiltered, the feedback is "moon" and "tides", and "lunar" brings in the eclipse.
      assert.include(yield* answer(), "eclipse")
      // Without "moon", the only feedback is "tides": its ocean words bring in "ocean", and nothing brings in "lunar".
      const filtered = yield* answer(not(eq("doc_id", "moon")))
      assert.notInclude(filtered, "moon")
      assert.include(filtered, "ocean")
      assert.notInclude(filtered, "eclipse")
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          layerTemporary,
          docsSource([
            ...corpus,
            ["tides", "The moon pulls the tides of the ocean, and tidal ocean currents follow."],
            ["ocean", "An ocean current carries warm water north."]
          ]),
          Embedder.layerLocalSha256,
          NodeServices.layer
        )
      )
    )
  )

  it("keeps every query term, and weighs the heaviest term WEIGHT_STEPS times", () => {
    const term = fc.constantFrom("a", "b", "c", "d", "e")
    fc.assert(
      fc.property(
        fc.array(term, { minLength: 1, maxLength: 5 }),
        fc.array(fc.tuple(term, fc.double({ min: 0.01, max: 3, noNaN: true })), { maxLength: 5 }),
        (query, pairs) => {
          const weights = new Map(pairs)
          const terms = weightedTerms(query, weights)
          for (const t of query) assert.include(terms, t)
          if (weights.size > 0) {
            const heaviest = [...weights].sort((x, y) => y[1] - x[1])[0]![0]
            assert.strictEqual(terms.filter((t) => t === heaviest).length, WEIGHT_STEPS)
          } else assert.deepStrictEqual(terms, query)
        }
      )
    )
  })
})
