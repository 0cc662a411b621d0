/** The analyzer, BM25 and the quality metrics, checked against values worked out by hand. */
import { assert, describe, it } from "@effect/vitest"
import { AnalyzerConfig, B, Bm25Params, K1 } from "@funcpipe/domain/Config"
import { Result, Schema } from "effect"
import { analyze, termCounts } from "../src/analysis/Analyzer.ts"
import { parseQrels, parseQueries } from "../src/eval/Collection.ts"
import {
  averagePrecision,
  Baseline,
  baselineDrops,
  meanMetrics,
  mrrAt,
  ndcgAt,
  precisionAt,
  recallAt
} from "../src/eval/Metrics.ts"
import { bm25Scores, explainBm25, idf, lexicalIndex } from "../src/search/Bm25.ts"

const plain = new AnalyzerConfig({ stopWords: "none", stemmer: "none" })

describe("analyze", () => {
  it("finds words of any script, lowercased, with digits, and single ideographs", () => {
    assert.deepStrictEqual(analyze("Ünïcode ΣΟΦΙΑ Москва 42 e.g. 3.5 深度学习", plain), [
      "ünïcode",
      "σοφια",
      "москва",
      "42",
      "e.g",
      "3.5",
      "深",
      "度",
      "学",
      "习"
    ])
  })
  it("keeps apostrophes inside words and drops the possessive 's", () => {
    assert.deepStrictEqual(analyze("Don't touch Earth's moon", plain), ["don't", "touch", "earth", "moon"])
  })
  it("drops English stop words and Porter-stems English words by default", () => {
    assert.deepStrictEqual(analyze("The indexing of the indexed documents is running"), [
      "index",
      "index",
      "document",
      "run"
    ])
  })
  it("switches stop words and stemming separately", () => {
    assert.deepStrictEqual(analyze("the runs", new AnalyzerConfig({ stopWords: "english", stemmer: "none" })), ["runs"])
    assert.deepStrictEqual(analyze("the runs", new AnalyzerConfig({ stopWords: "none", stemmer: "porter" })), [
      "the",
      "run"
    ])
  })
  it("counts terms", () => {
    assert.deepStrictEqual(
      [...termCounts(["a", "b", "a"])],
      [
        ["a", 2],
        ["b", 1]
      ]
    )
  })
})

describe("BM25", () => {
  // Three chunks of lengths 3, 2 and 5 (average 10/3).
  const index = lexicalIndex([
    {
      length: 3,
      terms: new Map([
        ["x", 2],
        ["y", 1]
      ])
    },
    { length: 2, terms: new Map([["z", 2]]) },
    {
      length: 5,
      terms: new Map([
        ["y", 3],
        ["z", 2]
      ])
    }
  ])
  const params = Bm25Params.default

  it("uses Lucene's idf", () => {
    assert.strictEqual(idf(3, 1), Math.log(1 + 2.5 / 1.5))
    assert.closeTo(idf(3, 1), 0.9808292530117263, 1e-15)
  })
  it("scores each chunk as worked out by hand (k1 0.9, b 0.4)", () => {
    const scores = bm25Scores(["x", "y", "absent"], index, params)
    assert.closeTo(scores[0]!, 1.3013795954764524 + 0.4790809525573485, 1e-12)
    assert.strictEqual(scores[1], 0)
    assert.closeTo(scores[2]!, 0.6566227173286011, 1e-12)
  })
  it("counts a repeated query term twice, as Lucene does", () => {
    const once = bm25Scores(["x"], index, params)[0]!
    assert.strictEqual(bm25Scores(["x", "x"], index, params)[0], once + once)
  })
  it("explains a score term by term, summing to the same bits", () => {
    const terms = ["x", "y"]
    const parts = explainBm25(terms, 0, index, params)
    assert.deepStrictEqual(
      parts.map((p) => [p.term, p.tf, p.df]),
      [
        ["x", 2, 1],
        ["y", 1, 2]
      ]
    )
    assert.strictEqual(
      parts.reduce((sum, p) => sum + p.score, 0),
      bm25Scores(terms, index, params)[0]
    )
  })
  it("follows k1 and b", () => {
    const flat = new Bm25Params({ k1: K1.make(0), b: B.make(0) })
    // With k1 = 0 a matching term scores its idf, whatever its frequency.
    assert.closeTo(bm25Scores(["y"], index, flat)[2]!, idf(3, 2), 1e-15)
  })
})

describe("metrics", () => {
  const judged = new Map([
    ["d2", 2],
    ["d4", 1],
    ["d9", 3],
    ["d5", 0]
  ])
  const ranking = ["d1", "d2", "d3", "d4", "d5"]
  it("nDCG@k uses linear gains and log2 discounts against the ideal order", () => {
    // DCG@3 = 2/log2(3); ideal = 3 + 2/log2(3) + 1/2.
    assert.closeTo(ndcgAt(3, ranking, judged), 0.26499301486112564, 1e-15)
    assert.strictEqual(ndcgAt(10, ["d9", "d2", "d4"], judged), 1)
  })
  it("MRR, recall, precision and average precision", () => {
    assert.strictEqual(mrrAt(10, ranking, judged), 1 / 2)
    assert.strictEqual(mrrAt(1, ranking, judged), 0)
    assert.strictEqual(recallAt(2, ranking, judged), 1 / 3)
    assert.strictEqual(recallAt(100, ranking, judged), 2 / 3)
    assert.strictEqual(precisionAt(10, ranking, judged), 2 / 10)
    assert.strictEqual(averagePrecision(ranking, judged), (1 / 2 + 2 / 4) / 3)
  })
  it("averages over judged queries only; a judged query with no results scores 0", () => {
    const { metrics, queries } = meanMetrics(
      new Map([
        ["q1", ["d9"]],
        ["q3", ["d9"]]
      ]),
      new Map([
        ["q1", new Map([["d9", 1]])],
        ["q2", new Map([["d9", 1]])],
        ["q4", new Map([["d1", 0]])]
      ])
    )
    assert.strictEqual(queries, 2)
    assert.strictEqual(metrics["mrr@10"], 0.5)
    assert.strictEqual(metrics["ndcg@10"], 0.5)
  })
})

describe("collection files", () => {
  it("reads queries and qrels with a header", () => {
    const queries = Result.getOrThrow(parseQueries('{"id": "1", "text": "a"}\n\n{"_id": 2, "text": "b"}\n', "q"))
    assert.deepStrictEqual(queries, [
      { id: "1", text: "a" },
      { id: "2", text: "b" }
    ])
    const qrels = Result.getOrThrow(parseQrels("query-id\tdoc-id\tgrade\n1\td1\t2\n1\td2\t1\n", "r"))
    assert.deepStrictEqual(
      [...qrels.get("1")!],
      [
        ["d1", 2],
        ["d2", 1]
      ]
    )
  })
  it("names the file and line of a bad record", () => {
    const bad = parseQrels("1\td1\t2\n1\td2\n", "qrels.tsv")
    assert.isTrue(Result.isFailure(bad) && bad.failure.message.startsWith("qrels.tsv:2:"))
    const worse = parseQueries('{"id": 1}\n', "queries.jsonl")
    assert.isTrue(Result.isFailure(worse) && worse.failure.message.startsWith("queries.jsonl:1:"))
  })
})

describe("a baseline", () => {
  const now = { "ndcg@10": 0.68, "mrr@10": 0.65, "p@10": 0.087, "recall@100": 0.92, "recall@1000": 0.97, map: 0.64 }
  const decode = Schema.decodeUnknownResult(Baseline)

  it("is a saved --json result: its metrics are read, other keys ignored, a wrong type refused", () => {
    const saved = Result.getOrThrow(decode(JSON.stringify({ ...now, map: 0.7, collection: "x", seconds: 1.5 })))
    assert.deepStrictEqual(saved, { ...now, map: 0.7 })
    assert.deepStrictEqual(Result.getOrThrow(decode('{"ndcg@10": 0.5}')), { "ndcg@10": 0.5 })
    assert.isTrue(Result.isFailure(decode('{"ndcg@10": "high"}')))
    assert.isTrue(Result.isFailure(decode("not json")))
  })

  it("reports the metrics that fell by more than the tolerance, and only those", () => {
    const baseline = { "ndcg@10": 0.7, map: 0.6405, "p@10": 0.2 }
    assert.deepStrictEqual(baselineDrops(now, baseline, 0.005), ["ndcg@10 0.6800 < 0.7000", "p@10 0.0870 < 0.2000"])
    assert.deepStrictEqual(baselineDrops(now, baseline, 0.2), [])
    assert.deepStrictEqual(baselineDrops(now, {}, 0), [])
  })
})
