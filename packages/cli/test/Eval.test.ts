/** funcpipe eval over the tiny committed collection, whose metrics are worked out by hand below. */

import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, version } from "../src/Cli.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })
const tiny = fileURLToPath(new URL("../../../examples/tiny-collection", import.meta.url))

// Lexical retrieval puts t1, t2, t3 and t5 first for q1, q2, q3 and q5 (each query's words are in that document only).
// q1, q3: the relevant document first, nDCG 1. q2: t2 first, t5 never found: DCG 1, ideal 1 + 1/log2(3).
// q5: its relevant t6 is never found: 0. q4 has no judgements and is left out. So over 4 queries:
const ndcg10 = (1 + 1 / (1 + 1 / Math.log2(3)) + 1 + 0) / 4
const expected = {
  "ndcg@10": ndcg10,
  "mrr@10": 0.75,
  "p@10": 0.075,
  "recall@100": 0.625,
  "recall@1000": 0.625,
  map: 0.625
}

const workspace = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-eval-" })
})

const lastJson = Effect.map(TestConsole.logLines, (lines) => JSON.parse(String(lines.at(-1))))

describe("funcpipe eval", () => {
  it.effect("prints the metrics worked out by hand, and per-query results with --out", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* workspace
      yield* run(["eval", tiny, "--index", `${dir}/tiny.db`, "--json", "--out", `${dir}/runs.jsonl`])
      const result = yield* lastJson
      assert.deepStrictEqual([result.mode, result.queries, result.documents], ["lexical", 4, 6])
      for (const [name, value] of Object.entries(expected)) assert.closeTo(result[name], value, 1e-12, name)
      const perQuery = (yield* fs.readFileString(`${dir}/runs.jsonl`))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
      assert.deepStrictEqual(
        perQuery.map((q) => q.query_id),
        ["q1", "q2", "q3", "q4", "q5"]
      )
      assert.deepStrictEqual(
        perQuery.map((q) => q.results[0]?.doc_id),
        ["t1", "t2", "t3", "t4", "t5"]
      )
      assert.strictEqual(perQuery[3].metrics, null)
      assert.strictEqual(perQuery[1].metrics["mrr@10"], 1)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("adds the approximate vector index's recall@10 when the collection's index has one", () =>
    Effect.gen(function* () {
      const dir = yield* workspace
      yield* run(["eval", tiny, "--index", `${dir}/tiny.db`, "--json", "--mode", "vector"])
      assert.isNull((yield* lastJson).ann_recall)
      yield* run([
        "eval",
        tiny,
        "--index",
        `${dir}/tiny.db`,
        "--json",
        "--mode",
        "vector",
        "--ann",
        "hnsw",
        "--rebuild"
      ])
      // Six documents: every graph walk sees them all, so it finds the whole exact top 10.
      assert.strictEqual((yield* lastJson).ann_recall, 1)
      yield* run(["eval", tiny, "--index", `${dir}/tiny.db`, "--mode", "vector"])
      const lines = (yield* TestConsole.logLines).map(String)
      assert.include(lines.at(-1), "the approximate vector index finds 1.0000 of each query's exact top 10 (recall@10)")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("prints a table for people and reuses the index on the next run", () =>
    Effect.gen(function* () {
      const dir = yield* workspace
      yield* run(["eval", tiny, "--index", `${dir}/tiny.db`])
      yield* run(["eval", tiny, "--index", `${dir}/tiny.db`, "--mode", "hybrid"])
      const lines = (yield* TestConsole.logLines).map(String)
      assert.include(lines[0]!, "4 judged queries, 6 documents in 6 chunks, mode lexical")
      assert.include(lines[0]!, "ndcg@10       0.6533")
      assert.include(lines[1]!, "mode hybrid")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("fails with QualityRegression when a metric drops below the baseline, and passes at the baseline", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* workspace
      yield* run(["eval", tiny, "--index", `${dir}/tiny.db`, "--json"])
      const same = yield* lastJson
      yield* fs.writeFileString(`${dir}/same.json`, JSON.stringify(same))
      yield* run(["eval", tiny, "--index", `${dir}/tiny.db`, "--json", "--baseline", `${dir}/same.json`])
      yield* fs.writeFileString(`${dir}/better.json`, JSON.stringify({ ...same, "ndcg@10": 0.9 }))
      const error = yield* Effect.flip(
        run(["eval", tiny, "--index", `${dir}/tiny.db`, "--baseline", `${dir}/better.json`])
      )
      assert.strictEqual(error._tag, "QualityRegression")
      assert.include(error.message, "ndcg@10 0.6533 < 0.9000")
      const within = yield* Effect.exit(
        run(["eval", tiny, "--index", `${dir}/tiny.db`, "--baseline", `${dir}/better.json`, "--tolerance", "0.3"])
      )
      assert.strictEqual(within._tag, "Success")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("rejects a folder that is not a collection, and a baseline that is not an eval result", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* workspace
      const notCollection = yield* Effect.flip(run(["eval", dir, "--index", `${dir}/x.db`]))
      assert.strictEqual(notCollection._tag, "CollectionInvalid")
      yield* fs.writeFileString(`${dir}/junk.json`, "[1, 2]")
      const badBaseline = yield* Effect.flip(
        run(["eval", tiny, "--index", `${dir}/tiny.db`, "--baseline", `${dir}/junk.json`])
      )
      assert.strictEqual(badBaseline._tag, "BaselineInvalid")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("checks --baseline and the --out folder before evaluating, so a mistake costs no run", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* workspace
      const missing = yield* Effect.flip(
        run(["eval", tiny, "--index", `${dir}/tiny.db`, "--baseline", `${dir}/nope.json`])
      )
      assert.strictEqual(missing._tag, "BaselineInvalid")
      assert.include(missing.message, "there is no such file")
      const noFolder = yield* Effect.flip(
        run(["eval", tiny, "--index", `${dir}/tiny.db`, "--out", `${dir}/no/runs.jsonl`])
      )
      assert.strictEqual(noFolder._tag, "OutputFailure")
      // Neither run indexed anything or printed metrics.
      assert.isFalse(yield* fs.exists(`${dir}/tiny.db`))
      assert.deepStrictEqual(yield* TestConsole.logLines, [])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("rejects a negative --tolerance and --explain, which eval does not use", () =>
    Effect.gen(function* () {
      const dir = yield* workspace
      for (const args of [["--tolerance", "-0.1"], ["--explain"]]) {
        const error = yield* Effect.flip(run(["eval", tiny, "--index", `${dir}/tiny.db`, ...args]))
        assert.strictEqual(error._tag, "ShowHelp", args.join(" "))
      }
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("describes its own --out in --help", () =>
    Effect.gen(function* () {
      yield* run(["eval", "--help"])
      const help = (yield* TestConsole.logLines).map(String).join("\n")
      assert.match(help, /--out FILE +Also write each query's results and metrics to this file/)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("--mode all compares the three modes on one index, as a table or a JSON array", () =>
    Effect.gen(function* () {
      const dir = yield* workspace
      yield* run(["eval", tiny, "--index", `${dir}/tiny.db`, "--mode", "all", "--json"])
      const results = yield* lastJson
      assert.deepStrictEqual(
        results.map((r: { mode: string }) => r.mode),
        ["lexical", "vector", "hybrid"]
      )
      for (const [name, value] of Object.entries(expected)) assert.closeTo(results[0][name], value, 1e-12, name)
      assert.strictEqual(results[0].model, "local-sha256")
      yield* run(["eval", tiny, "--index", `${dir}/tiny.db`, "--mode", "all"])
      const table = String((yield* TestConsole.logLines).at(-1)).split("\n")
      assert.match(table[0]!, /tiny-collection, model local-sha256: 4 judged queries, 6 documents in \d+ chunks/)
      assert.match(table[1]!, /^mode {5}ndcg@10/)
      assert.deepStrictEqual(
        table.slice(2).map((line) => line.split(/ +/)[0]),
        ["lexical", "vector", "hybrid"]
      )
      assert.strictEqual(table[2]!.split(/ +/)[1], ndcg10.toFixed(4))
      const conflict = yield* Effect.flip(
        run(["eval", tiny, "--index", `${dir}/tiny.db`, "--mode", "all", "--out", `${dir}/x.jsonl`])
      )
      assert.strictEqual(conflict._tag, "ModeAllConflict")
    }).pipe(Effect.provide(TestLayer))
  )
})
