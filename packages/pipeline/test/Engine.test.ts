/** The query engine's pruned lexical top-k: exactly the exhaustive ranking, however the words are spread. */
import { assert, describe, it } from "@effect/vitest"
import { Bm25Params, FusionConfig } from "@funcpipe/domain/Config"
import { compareCodePoints } from "@funcpipe/domain/Ranking"
import fc from "fast-check"
import { bm25Scores, lexicalIndex } from "../src/search/Bm25.ts"
import { type EngineQuery, FUSION_DEPTH, scoreQuery, topChunksOf } from "../src/search/Engine.ts"
import type { IndexView, PositionFilter, TermBlock, VectorBlock } from "../src/search/IndexView.ts"
import { bm25, loadTerms } from "../src/search/Lexical.ts"
import { topLexicalPruned } from "../src/search/Pruned.ts"
import {
  documentTies,
  fuseLinear,
  fuseRankings,
  fuseWeightedRanks,
  keyTies,
  LINEAR_FLOOR,
  topOf
} from "../src/search/Ranker.ts"
import { ScoringScratch } from "../src/search/Scratch.ts"

/**
 * An in-memory index view of `chunks` (each a list of terms) split into two segments, with some chunks deleted:
 * (the test draws words from a skewed distribution).
 */
const viewOf = (chunks: ReadonlyArray<ReadonlyArray<string>>, deletedEvery: number): IndexView => {
  const half = Math.floor(chunks.length / 2)
  const lists = new Map<string, Array<Array<[number, number]>>>()
  chunks.forEach((terms, position) => {
    const segment = position < half ? 0 : 1
    const ordinal = position - (segment === 0 ? 0 : half)
    const counts = new Map<string, number>()
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1)
    for (const [term, tf] of counts) {
      let perSegment = lists.get(term)
      if (perSegment === undefined) lists.set(term, (perSegment = [[], []]))
      perSegment[segment]!.push([ordinal, tf])
    }
  })
  const deleted = new Uint8Array(chunks.length)
  if (deletedEvery > 0) for (let p = 0; p < chunks.length; p += deletedEvery) deleted[p] = 1
  let live = 0
  let total = 0
  chunks.forEach((terms, p) => {
    if (deleted[p] === 0) {
      live++
      total += terms.length
    }
  })
  return {
    scratch: new ScoringScratch(),
    dimensions: 1,
    positions: chunks.length,
    liveChunks: live,
    averageLength: live === 0 ? 0 : total / live,
    lengths: Uint32Array.from(chunks, (terms) => terms.length),
    deleted: deletedEvery > 0 ? deleted : undefined,
    postings: (term) =>
      (lists.get(term) ?? []).flatMap(
        (pairs, segment): Array<TermBlock> =>
          pairs.length === 0
            ? []
            : [
                {
                  offset: segment === 0 ? 0 : half,
                  ordinals: Uint32Array.from(pairs, ([o]) => o),
                  tfs: Uint32Array.from(pairs, ([, tf]) => tf)
                }
              ]
      ),
    vectorBlocks: () => [],
    keyOf: (position) => ({ score: 0, docId: `d${position % 7}`, start: position, end: position + 1, text: "" }),
    documents: () => ({ docOf: new Int32Array(chunks.length), count: 1, order: new Int32Array(1) })
  }
}

// Zipf-like words: w0 almost everywhere, w1…w3 often, w4…w120 rarely.
const word = fc.oneof(
  { weight: 30, arbitrary: fc.constant("w0") },
  { weight: 20, arbitrary: fc.constantFrom("w1", "w2", "w3") },
  { weight: 10, arbitrary: fc.integer({ min: 4, max: 120 }).map((n) => `w${n}`) }
)
const corpus = fc.array(fc.array(word, { minLength: 1, maxLength: 12 }), { minLength: 100, maxLength: 400 })
// Queries mix frequent and rare words, so most of them have a rare word to start from; repeating a frequent word
// raises what a chunk without the rare word can score, so the bound is tested near its edge.
const query = fc.oneof(
  fc.array(
    fc.oneof(
      word,
      fc.integer({ min: 4, max: 60 }).map((n) => `w${n}`),
      fc.constant("absent")
    ),
    { minLength: 1, maxLength: 5 }
  ),
  fc
    .tuple(
      fc.integer({ min: 4, max: 120 }).map((n) => `w${n}`),
      fc.array(fc.constantFrom("w0", "w1", "w2", "w3"), { minLength: 1, maxLength: 6 })
    )
    .map(([rare, frequent]) => [...frequent, rare])
)

describe("lexical top-k", () => {
  it("equals scoring every posting, ties, repeats and deletions included", () => {
    fc.assert(
      fc.property(
        corpus,
        query,
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom(0, 3, 5),
        (chunks, terms, k, deletedEvery) => {
          const view = viewOf(chunks, deletedEvery)
          const scored = scoreQuery(view, { terms, vector: undefined }, "lexical", Bm25Params.default)
          const exhaustive = topOf(scored.candidates, k, keyTies(view.keyOf))
          assert.deepStrictEqual(topChunksOf(view, scored, k), exhaustive)
          // An explanation's score is the ranked score, to the bit.
          for (const top of exhaustive) assert.strictEqual(scored.explain(top.position).bm25!.score, top.score)
        }
      ),
      { numRuns: 400, seed: 20261130 }
    )
  })
})

describe("pruned lexical top-k", () => {
  // Lists of hundreds of postings, cut into several blocks of 128, so whole blocks are skipped.
  const large = fc.array(fc.array(word, { minLength: 1, maxLength: 12 }), { minLength: 1500, maxLength: 3000 })
  it("equals scoring every posting over lists of many blocks, with deletions and filters", () => {
    fc.assert(
      fc.property(
        large,
        query,
        fc.integer({ min: 1, max: 20 }),
        fc.constantFrom(0, 4),
        fc.boolean(),
        (chunks, terms, k, deletedEvery, filtered) => {
          const view = viewOf(chunks, deletedEvery)
          const allowed = new Uint8Array(chunks.length)
          for (let p = 0; p < chunks.length; p++) allowed[p] = p % 3 !== 0 && view.deleted?.[p] !== 1 ? 1 : 0
          const filter = filtered
            ? { allowed, count: allowed.reduce((n, a) => n + a, 0), listed: undefined }
            : undefined
          const loaded = loadTerms(view, terms)
          const exhaustive = topOf(
            bm25(view, loaded, terms, Bm25Params.default, filter).candidates,
            k,
            keyTies(view.keyOf)
          )
          assert.deepStrictEqual(topLexicalPruned(view, loaded, terms, Bm25Params.default, k, filter), exhaustive)
        }
      ),
      { numRuns: 60, seed: 20261201 }
    )
  })

  it("scores far fewer chunks than its terms hold when a rare word meets common ones", () => {
    // 4,000 chunks: w0 in every one, w1 in every other, the rare word in every 97th.
    const chunks = Array.from({ length: 4000 }, (_, p) => [
      "w0",
      ...(p % 2 === 0 ? ["w1"] : []),
      ...(p % 97 === 0 ? ["rare"] : []),
      ...Array.from({ length: p % 7 }, () => "filler")
    ])
    const view = viewOf(chunks, 0)
    const terms = ["w0", "w1", "rare"]
    const loaded = loadTerms(view, terms)
    const counts = { postings: 0, visited: 0, scored: 0 }
    const top = topLexicalPruned(view, loaded, terms, Bm25Params.default, 10, undefined, counts)
    const exhaustive = topOf(bm25(view, loaded, terms, Bm25Params.default).candidates, 10, keyTies(view.keyOf))
    assert.deepStrictEqual(top, exhaustive)
    assert.strictEqual(counts.postings, 4000 + 2000 + 42)
    assert.isBelow(counts.scored, 200, `scored ${counts.scored} of ${counts.postings}`)
  })
})

describe("lexical scores", () => {
  /** Every candidate of a scored query, by position. */
  const scoresOf = (candidates: (visit: (position: number, score: number) => void) => void) => {
    const out = new Map<number, number>()
    candidates((position, score) => out.set(position, score))
    return out
  }

  it("equal the reference BM25 to the bit, for any parameters, whether a query has many postings or few", () => {
    fc.assert(
      fc.property(
        corpus,
        fc.array(query, { minLength: 1, maxLength: 4 }),
        fc.constantFrom(Bm25Params.default, new Bm25Params({ k1: 1.2, b: 0.75 } as Bm25Params)),
        (chunks, queries, params) => {
          const view = viewOf(chunks, 0)
          const reference = lexicalIndex(
            chunks.map((terms) => {
              const counts = new Map<string, number>()
              for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1)
              return { length: terms.length, terms: counts }
            })
          )
          // Queries of frequent words take the precomputed chunk norms (from the second one that wants them on), rare
          // ones divide in place: all must agree, so each query is scored twice.
          for (const terms of [...queries, ...queries]) {
            const expected = bm25Scores(terms, reference, params)
            const got = scoresOf(scoreQuery(view, { terms, vector: undefined }, "lexical", params).candidates)
            expected.forEach((score, position) => {
              assert.strictEqual(got.get(position) ?? 0, score, `position ${position} of ${terms.join(" ")}`)
            })
          }
        }
      ),
      { numRuns: 150, seed: 20261130 }
    )
  })

  it("of a query stay right after a later query has scored in the same working memory", () => {
    const chunks = Array.from({ length: 300 }, (_, i) => [`w${i % 3}`, `w${i % 7}`, "w0", `w${i % 11}`])
    const view = viewOf(chunks, 5)
    const first = scoreQuery(view, { terms: ["w1", "w0"], vector: undefined }, "lexical", Bm25Params.default)
    const firstAlone = scoresOf(first.candidates)
    const second = scoreQuery(view, { terms: ["w2", "w5"], vector: undefined }, "lexical", Bm25Params.default)
    const secondAlone = scoresOf(second.candidates)
    // The second query has taken the memory; the first one's candidates must still be its own, and then the second's.
    assert.deepStrictEqual(scoresOf(first.candidates), firstAlone)
    assert.deepStrictEqual(scoresOf(second.candidates), secondAlone)
    assert.notDeepEqual(firstAlone, secondAlone)
  })
})

describe("the documents' tie order", () => {
  // Doc ids whose code-point order differs from their UTF-16 order (an astral character against U+FFFF).
  const docId = fc.constantFrom("a", "b", "ab", "\uFFFF", "\u{1F600}", "z\u{1F600}", "zz", "é")
  const documents = fc.uniqueArray(fc.tuple(docId, fc.integer({ min: 1, max: 6 })), {
    selector: ([id]) => id,
    minLength: 1,
    maxLength: 8
  })

  it("orders equal scores as the keys do, so a view may use it instead of reading keys", () => {
    fc.assert(
      fc.property(documents, fc.integer({ min: 1, max: 12 }), (docs, k) => {
        // Each document's chunks lie at consecutive positions in (start, end) order, as every store lays them out.
        const keys: Array<{ docId: string; start: number; end: number }> = []
        const docOf: Array<number> = []
        docs.forEach(([id, chunks], d) => {
          for (let c = 0; c < chunks; c++) {
            keys.push({ docId: id, start: 10 * c, end: 10 * c + 15 })
            docOf.push(d)
          }
        })
        const byId = docs.map((_, d) => d).sort((a, b) => compareCodePoints(docs[a]![0], docs[b]![0]))
        const order = new Int32Array(docs.length)
        byId.forEach((d, rank) => {
          order[d] = rank
        })
        const view: IndexView = {
          ...viewOf(
            keys.map(() => ["same"]),
            0
          ),
          keyOf: (p) => ({ score: 0, text: "", ...keys[p]! }),
          documents: () => ({ docOf: Int32Array.from(docOf), count: docs.length, order }),
          tieOrder: () => documentTies({ docOf: Int32Array.from(docOf), order })
        }
        const byKeys = keyTies(view.keyOf)
        const byDocuments = view.tieOrder!()!
        for (let a = 0; a < keys.length; a++) {
          for (let b = 0; b < keys.length; b++)
            assert.strictEqual(Math.sign(byDocuments(a, b)), Math.sign(byKeys(a, b)))
        }
        // Every chunk ties on the one word, so the whole top k is decided by the tie order.
        const scored = scoreQuery(view, { terms: ["same"], vector: undefined }, "lexical", Bm25Params.default)
        assert.deepStrictEqual(topChunksOf(view, scored, k), topOf(scored.candidates, k, byKeys))
      }),
      { numRuns: 200, seed: 20261130 }
    )
  })
})

describe("hybrid fusion", () => {
  /** A ranking of distinct positions with scores falling by rank, as a scored list comes. */
  const ranking = fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { maxLength: 15 }).chain((positions) =>
    fc
      .array(fc.double({ min: -1, max: 30, noNaN: true }), { minLength: positions.length, maxLength: positions.length })
      .map((scores) => {
        const sorted = [...scores].sort((a, b) => b - a)
        return positions.map((position, i) => ({ position, score: sorted[i]! }))
      })
  )

  it("weighted RRF at alpha 0.5 is the classic reciprocal rank fusion, bit for bit", () => {
    fc.assert(
      fc.property(ranking, ranking, (lexical, vector) => {
        assert.deepStrictEqual(fuseWeightedRanks(lexical, vector, 0.5), fuseRankings([vector, lexical]))
      })
    )
  })

  it("linear fusion scales each ranking to [0, 1] and weighs them: alpha 1 keeps the lexical order", () => {
    fc.assert(
      fc.property(ranking, ranking, fc.double({ min: 0, max: 1, noNaN: true }), (lexical, vector, alpha) => {
        const fused = fuseLinear(lexical, vector, alpha)
        for (const score of fused.values()) assert.isTrue(score >= 0 && score <= 1 + 1e-12, `${score}`)
        if (lexical.length > 0 && alpha === 1) {
          const order = [...fused].filter(([p]) => lexical.some((t) => t.position === p)).sort((a, b) => b[1] - a[1])
          assert.strictEqual(order[0]![1], 1)
        }
      })
    )
    const both = fuseLinear(
      [
        { position: 1, score: 12 },
        { position: 2, score: 2 }
      ],
      [
        { position: 2, score: 0.9 },
        { position: 3, score: 0.5 }
      ],
      0.75
    )
    // Each ranking's last entry keeps a share (LINEAR_FLOOR), so a chunk found by either ranking stays in the fused one.
    const f = LINEAR_FLOOR
    assert.deepStrictEqual(
      [...both].sort((a, b) => a[0] - b[0]),
      [
        [1, 0.75],
        [2, 0.75 * f + 0.25],
        [3, 0.25 * f]
      ]
    )
    const last = fuseLinear(
      [
        { position: 1, score: 3 },
        { position: 2, score: 1 }
      ],
      [
        { position: 1, score: 0.9 },
        { position: 2, score: 0.1 }
      ],
      0.5
    )
    assert.isAbove(last.get(2)!, 0, "last in both rankings, still fused")
  })
})

describe("filtered top-k", () => {
  /** Random vectors for each position, in two blocks, some all zero (their cosine is undefined). */
  const withVectors = (view: IndexView, seed: number): IndexView => {
    let state = seed >>> 0
    const next = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) % 5) - 2
    const vectors = Float64Array.from({ length: view.positions * 2 }, next)
    const magnitudes = Float64Array.from({ length: view.positions }, (_, p) =>
      Math.sqrt(vectors[2 * p]! ** 2 + vectors[2 * p + 1]! ** 2)
    )
    const half = Math.floor(view.positions / 2)
    const block = (from: number, to: number) => ({
      offset: from,
      count: to - from,
      vectors: vectors.subarray(from * 2, to * 2),
      magnitudes: magnitudes.subarray(from, to)
    })
    return { ...view, dimensions: 2, vectorBlocks: () => [block(0, half), block(half, view.positions)] }
  }

  /** A filter over the live positions: each kept with probability `share`, listed or not. */
  const filterOf = (view: IndexView, seed: number, share: number, list: boolean): PositionFilter => {
    const allowed = new Uint8Array(view.positions)
    const listed: Array<number> = []
    let state = seed >>> 0
    for (let p = 0; p < view.positions; p++) {
      state = (Math.imul(state ^ (state >>> 15), 2246822519) + 3266489917) >>> 0
      if (view.deleted?.[p] === 1 || state / 2 ** 32 >= share) continue
      allowed[p] = 1
      listed.push(p)
    }
    return { allowed, count: listed.length, listed: list ? Int32Array.from(listed) : undefined }
  }

  const everything = (view: IndexView, mode: "lexical" | "vector", query: EngineQuery, filter: PositionFilter) =>
    topOf(scoreQuery(view, query, mode, Bm25Params.default).candidates, view.positions, keyTies(view.keyOf)).filter(
      (top) => filter.allowed[top.position] === 1
    )

  it("equals the unfiltered ranking restricted to the filter, in every mode, listed or not", () => {
    let listedLexical = 0
    fc.assert(
      fc.property(
        corpus,
        query,
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(0, 4),
        fc.integer(),
        fc.constantFrom(0.005, 0.3, 0.9),
        fc.boolean(),
        fc.integer(),
        (chunks, terms, k, deletedEvery, filterSeed, share, list, seed) => {
          const view = withVectors(viewOf(chunks, deletedEvery), seed)
          const filter = filterOf(view, filterSeed, share, list)
          const query = { terms, vector: [1, -0.5] }
          for (const mode of ["lexical", "vector"] as const) {
            const scored = scoreQuery(view, query, mode, Bm25Params.default, FUSION_DEPTH, undefined, filter)
            const expected = everything(view, mode, query, filter).slice(0, k)
            assert.deepStrictEqual(topChunksOf(view, scored, k, query), expected, mode)
            assert.deepStrictEqual(topOf(scored.candidates, k, keyTies(view.keyOf)), expected, `${mode} candidates`)
          }
          // Hybrid takes each ranking's depth after filtering, then fuses.
          const depth = 5
          const fused = fuseLinear(
            everything(view, "lexical", query, filter).slice(0, depth),
            everything(view, "vector", query, filter).slice(0, depth),
            FusionConfig.default.alpha
          )
          const expected = topOf(
            (visit) => {
              for (const [p, score] of fused) if (score > 0) visit(p, score)
            },
            k,
            keyTies(view.keyOf)
          )
          const hybrid = scoreQuery(view, query, "hybrid", Bm25Params.default, depth, FusionConfig.default, filter)
          assert.deepStrictEqual(topChunksOf(view, hybrid, k, query), expected, "hybrid")
          if (list && share === 0.005 && filter.count > 0) listedLexical++
        }
      ),
      { numRuns: 300, seed: 20261201 }
    )
    assert.isAbove(listedLexical, 10, "selective listed filters are tried")
  })
})

describe("vector blocks as stored", () => {
  /** Rows of 16-bit numerators, some all zero, in blocks of `rows`, as a store passes them before decoding. */
  const codedView = (
    view: IndexView,
    seed: number,
    d: number,
    rows: number
  ): { coded: IndexView; decoded: IndexView } => {
    let state = seed >>> 0
    const codes = Uint16Array.from({ length: view.positions * d }, (_, i) => {
      state = (Math.imul(state ^ (state >>> 15), 2246822519) + 3266489917) >>> 0
      return Math.floor(i / d) % 9 === 4 ? 0 : state >>> 16
    })
    const vectors = Float64Array.from(codes, (k) => k / 65535)
    const magnitudes = Float64Array.from({ length: view.positions }, (_, p) => {
      let sum = 0
      for (let j = p * d; j < (p + 1) * d; j++) sum += vectors[j]! * vectors[j]!
      return Math.sqrt(sum)
    })
    const starts = Array.from({ length: Math.ceil(view.positions / rows) }, (_, b) => b * rows)
    const end = (from: number) => Math.min(from + rows, view.positions)
    // Each coded block is a fresh copy, emptied once the next is taken: a scan must use each block as it comes.
    function* coded(): Generator<VectorBlock> {
      for (const from of starts) {
        const block = codes.slice(from * d, end(from) * d)
        yield { offset: from, count: end(from) - from, codes: block }
        block.fill(65535)
      }
    }
    const decoded = starts.map((from) => ({
      offset: from,
      count: end(from) - from,
      vectors: vectors.subarray(from * d, end(from) * d),
      magnitudes: magnitudes.subarray(from, end(from))
    }))
    return {
      coded: { ...view, dimensions: d, vectorBlocks: coded },
      decoded: { ...view, dimensions: d, vectorBlocks: () => decoded }
    }
  }

  it("score, rank, filter and explain exactly as the decoded vectors do", () => {
    fc.assert(
      fc.property(
        corpus,
        fc.constantFrom(0, 3),
        fc.integer(),
        fc.constantFrom(1, 16),
        fc.constantFrom(7, 64),
        fc.integer({ min: 1, max: 8 }),
        (chunks, deletedEvery, seed, d, rows, k) => {
          const { coded, decoded } = codedView(viewOf(chunks, deletedEvery), seed, d, rows)
          const query = {
            terms: [],
            vector: Array.from({ length: d }, (_, j) => ((j * 7919 + (seed & 0xff)) % 13) - 6.5)
          }
          const all = (view: IndexView) => {
            const scored = scoreQuery(view, query, "vector", Bm25Params.default)
            const visited: Array<[number, number]> = []
            scored.candidates((position, score) => visited.push([position, score]))
            return { scored, visited }
          }
          const fromCoded = all(coded)
          const fromDecoded = all(decoded)
          assert.deepStrictEqual(fromCoded.visited, fromDecoded.visited)
          assert.isAbove(fromDecoded.visited.length, 0)
          assert.deepStrictEqual(
            topChunksOf(coded, fromCoded.scored, k, query),
            topChunksOf(decoded, fromDecoded.scored, k, query)
          )
          for (const [position] of fromDecoded.visited.slice(0, 5)) {
            assert.deepStrictEqual(fromCoded.scored.explain(position), fromDecoded.scored.explain(position))
          }
          const allowed = Uint8Array.from({ length: coded.positions }, (_, p) =>
            p % 3 === 0 && coded.deleted?.[p] !== 1 ? 1 : 0
          )
          const listed = Int32Array.from([...allowed.keys()].filter((p) => allowed[p] === 1))
          for (const filter of [
            { allowed, count: listed.length, listed },
            { allowed, count: listed.length, listed: undefined }
          ]) {
            const top = (view: IndexView) =>
              topChunksOf(
                view,
                scoreQuery(view, query, "vector", Bm25Params.default, FUSION_DEPTH, undefined, filter),
                k,
                query
              )
            assert.deepStrictEqual(top(coded), top(decoded))
          }
        }
      ),
      { numRuns: 150, seed: 20261130 }
    )
  })
})
