/**
 * Results grouped by document: each document's best chunk, in the ranking order of those chunks, with how many more
 * of its chunks matched, checked against the ungrouped answer over every chunk.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { Effect, Layer } from "effect"
import fc from "fast-check"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { layerTemporary } from "../src/store/sqlite/TempIndexStore.ts"
import { docsSource } from "./Sources.ts"

const WORDS = ["moon", "tide", "star", "orbit", "dust", "light", "night", "sky"]

/** Documents of a few words each, cut into chunks of 12 code points so most documents have several chunks. */
const corpus = fc.array(
  fc.tuple(fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 12 }), fc.constantFrom("a", "b")),
  { minLength: 1, maxLength: 8 }
)
const chunker = new ChunkerConfig({
  chunkSize: ChunkSize.make(12),
  overlap: Overlap.make(0),
  tailPolicy: "emit_short"
})

/** The grouped answer and the ungrouped one over every chunk, for one corpus and query. */
const answers = (docs: ReadonlyArray<readonly [string, string]>, query: string, topK: number) =>
  Effect.gen(function* () {
    yield* indexPaths(["corpus"], { chunker })
    const grouped = yield* queryIndex(query, topK, { mode: "lexical", group: "doc" })
    const all = yield* queryIndex(query, 1000, { mode: "lexical" })
    return { grouped, all }
  }).pipe(
    Effect.provide(Layer.mergeAll(layerTemporary, docsSource(docs), Embedder.layerLocalSha256, NodeServices.layer))
  )

describe("results grouped by document", () => {
  it.effect(
    "are the best chunk of each document, in the ranking order, with the count of its other matching chunks",
    () =>
      Effect.gen(function* () {
        const samples = fc.sample(
          fc.tuple(corpus, fc.constantFrom(...WORDS), fc.constantFrom(...WORDS), fc.integer({ min: 1, max: 5 })),
          { numRuns: 25, seed: 7 }
        )
        for (const [words, first, second, topK] of samples) {
          const docs = words.map(([w, tag], i) => [`doc-${i}-${tag}`, w.join(" ")] as const)
          const { all, grouped } = yield* answers(docs, `${first} ${second}`, topK)
          // The ungrouped answer over every chunk: a document's best chunk is its first, and its others follow.
          const seen = new Map<string, number>()
          const best: typeof all.results = []
          for (const r of all.results) {
            const n = seen.get(r.chunk.docId)
            if (n === undefined) best.push(r)
            seen.set(r.chunk.docId, (n ?? 0) + 1)
          }
          const expected = best.slice(0, topK)
          assert.deepStrictEqual(
            grouped.results.map((r) => [r.chunk.docId, r.chunk.start, r.score, r.rank]),
            expected.map((r, i) => [r.chunk.docId, r.chunk.start, r.score, i + 1])
          )
          assert.deepStrictEqual(
            grouped.more,
            expected.map((r) => seen.get(r.chunk.docId)! - 1)
          )
          assert.strictEqual(grouped.query.group, "doc")
          assert.strictEqual(all.query.group, undefined)
          assert.strictEqual(all.more, undefined)
        }
      })
  )

  it.effect("count documents in the top k, however many chunks each has", () =>
    Effect.gen(function* () {
      const docs = [
        ["long", "moon moon moon moon moon moon moon moon"],
        ["short", "moon dust"],
        ["other", "star light"]
      ] as const
      const { grouped } = yield* answers(docs, "moon", 2)
      const ids = grouped.results.map((r) => String(r.chunk.docId))
      assert.sameMembers(ids, ["long", "short"])
      const more = new Map(ids.map((id, i) => [id, grouped.more![i]!]))
      assert.isAbove(more.get("long")!, 0)
      assert.strictEqual(more.get("short"), 0)
    })
  )
})
