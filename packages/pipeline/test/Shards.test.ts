/** The pure parts of sharding: shard numbers, summed statistics, and the merge of shard answers. */
import { assert, describe, it } from "@effect/vitest"
import { FusionConfig } from "@funcpipe/domain/Config"
import { rankingOrder } from "@funcpipe/domain/Ranking"
import { fuseHits, type Hit, mergeHits, shardOf, sumStats } from "../src/cluster/Shards.ts"
import { fuseLinear, keyTies, topOf } from "../src/search/Ranker.ts"

const hit = (score: number, docId: string, start = 0, end = 3, text = "t"): Hit => ({
  score,
  docId,
  start,
  end,
  text,
  title: ""
})

describe("shardOf", () => {
  it("is the first 32 bits of the id's MD5 modulo the count, as PostgreSQL computes it", () => {
    // The numbers PostgreSQL gives for ('x' || lpad(substr(md5(id), 1, 8), 16, '0'))::bit(64)::bigint.
    assert.deepStrictEqual([shardOf("abc", 8), shardOf("abc", 5)], [2416005272 % 8, 2416005272 % 5])
    assert.strictEqual(shardOf("doc-😀", 8), 1004335283 % 8)
    assert.strictEqual(shardOf("é", 8), 1725812119 % 8)
    assert.strictEqual(shardOf("anything", 1), 0)
  })
})

describe("sumStats", () => {
  it("adds counts, lengths and each term's df", () => {
    const sum = sumStats(
      [
        { chunks: 2, totalLength: 9, df: [1, 0] },
        { chunks: 3, totalLength: 4, df: [2, 3] }
      ],
      2
    )
    assert.deepStrictEqual(sum, { chunks: 5, totalLength: 13, df: [3, 3] })
  })
})

describe("mergeHits", () => {
  it("keeps the best k of all lists in the ranking order, ties by doc id (code points), start, end", () => {
    const a = [hit(0.9, "b"), hit(0.5, "doc-😀"), hit(0.5, "a", 4, 7)]
    const b = [hit(0.9, "a"), hit(0.5, "doc-～"), hit(0.5, "a", 0, 3)]
    const merged = mergeHits([a, b], 5)
    assert.deepStrictEqual(merged, [...a, ...b].sort(rankingOrder).slice(0, 5))
    assert.deepStrictEqual(
      merged.map((h) => h.docId),
      ["a", "b", "a", "a", "doc-～"]
    )
  })
})

describe("fuseHits", () => {
  it("fuses the merged rankings as one index fuses its own", () => {
    const lexical = [[hit(3, "a"), hit(1, "c")], [hit(2, "b")]]
    const vector = [[hit(0.2, "c"), hit(0.1, "a")], [hit(0.9, "b")]]
    const all = [hit(0, "a"), hit(0, "b"), hit(0, "c")]
    // One index: positions 0, 1, 2 for a, b, c.
    const fused = fuseLinear(
      [
        { position: 0, score: 3 },
        { position: 1, score: 2 },
        { position: 2, score: 1 }
      ],
      [
        { position: 1, score: 0.9 },
        { position: 2, score: 0.2 },
        { position: 0, score: 0.1 }
      ],
      0.9
    )
    const expected = topOf(
      (visit) => {
        fused.forEach((score, p) => {
          visit(p, score)
        })
      },
      2,
      keyTies((p) => all[p]!)
    )
    assert.deepStrictEqual(
      fuseHits(lexical, vector, 1000, 2, FusionConfig.default).map((h) => [h.docId, h.score]),
      expected.map((top) => [all[top.position]!.docId, top.score])
    )
  })
})
