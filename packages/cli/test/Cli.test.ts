/** The funcpipe commands run through `Command.runWith` over the sample corpus and temporary files. */

import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer, Stdio, Stream } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, main, version } from "../src/Cli.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))
const voyager = "Launched in 1977, Voyager 1 flew past Jupiter and Saturn and is now in interstellar space."

describe("funcpipe search", () => {
  it.effect("finds the exact sentence first in vector mode and summarizes the run on stderr", () =>
    Effect.gen(function* () {
      yield* run(["search", sample, "--query", voyager, "--mode", "vector"])
      const lines = yield* TestConsole.logLines
      const out = String(lines[0]).split("\n")
      // Three results, the Markdown ones with the heading they are under on a line of their own.
      const results = out.filter((line) => !line.startsWith("     in "))
      assert.strictEqual(results.length, 3)
      assert.match(out[0]!, /^1\. 1\.000000 {2}voyager-1 "Voyager 1" {2}\[0, 90\) {2}Launched in 1977, Voyager 1 flew/)
      assert.match(out[1]!, /^2\. 0\.\d{6} {2}\S+( "[^"]+")? {2}\[\d+, \d+\) {2}/)
      const errors = yield* TestConsole.errorLines
      assert.deepStrictEqual(errors, ["indexed 17 documents into 17 chunks in memory, 0 skipped (0.0 s)"])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("answers a question in words lexically by default", () =>
    Effect.gen(function* () {
      yield* run(["search", sample, "-q", "Which probe reached interstellar space?", "--top-k", "2"])
      assert.match(String((yield* TestConsole.logLines)[0]).split("\n")[0]!, /^1\. \d+\.\d{6} {2}voyager-1 /)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("prints stable JSON with --json, explanations included with --explain", () =>
    Effect.gen(function* () {
      yield* run([
        "search",
        sample,
        "-q",
        voyager,
        "--top-k",
        "2",
        "--json",
        "--mode",
        "hybrid",
        "--explain",
        "--fusion",
        "rrf"
      ])
      const parsed = JSON.parse(String((yield* TestConsole.logLines)[0]))
      assert.deepStrictEqual(Object.keys(parsed), ["query", "top_k", "mode", "model", "results", "skipped", "seconds"])
      assert.deepStrictEqual(parsed.skipped, [])
      assert.isAtLeast(parsed.seconds, 0)
      assert.strictEqual(parsed.query, voyager.toLowerCase())
      assert.strictEqual(parsed.mode, "hybrid")
      assert.strictEqual(parsed.top_k, 2)
      const explain = parsed.results[0].explain
      assert.deepStrictEqual(Object.keys(explain), ["cosine", "bm25", "vector_rank", "lexical_rank", "fusion"])
      assert.deepStrictEqual([explain.vector_rank, explain.lexical_rank], [1, 1])
      // What each ranking added: the two shares sum to the fused score.
      assert.deepStrictEqual(explain.fusion, { method: "rrf", alpha: 0.5, lexical: 1 / 61, vector: 1 / 61 })
      assert.closeTo(parsed.results[0].score, 2 / 61, 1e-15)
      assert.isAbove(explain.bm25.terms.find((t: { term: string }) => t.term === "voyag").score, 0)
      assert.strictEqual(parsed.model, "local-sha256")
      assert.strictEqual(parsed.results.length, 2)
      assert.deepStrictEqual(Object.keys(parsed.results[0]), [
        "rank",
        "score",
        "doc_id",
        "title",
        "start",
        "end",
        "text",
        "passage",
        "section",
        "source",
        "explain"
      ])
      assert.strictEqual(parsed.results[0].doc_id, "voyager-1")
      // The cleaned text as indexed, and the passage as the document has it.
      assert.strictEqual(parsed.results[0].text, voyager.toLowerCase())
      assert.strictEqual(parsed.results[0].passage, voyager)
      assert.deepStrictEqual(parsed.results[0].section, [])
      assert.match(parsed.results[0].source, /missions\.csv$/)
      assert.strictEqual(parsed.results[0].title, "Voyager 1")
      assert.isAbove(parsed.results[0].score, parsed.results[1].score)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("fuses hybrid rankings linearly by default, and as --fusion and --alpha say", () =>
    Effect.gen(function* () {
      const top = (...flags: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          const before = (yield* TestConsole.logLines).length
          yield* run(["search", sample, "-q", voyager, "--top-k", "1", "--json", "--mode", "hybrid", ...flags])
          return JSON.parse(String((yield* TestConsole.logLines)[before])).results[0]
        })
      // The exact sentence tops both rankings: normalised to 1 in each, so any weights give 1.
      assert.strictEqual((yield* top()).score, 1)
      assert.strictEqual((yield* top("--alpha", "0.3")).score, 1)
      assert.closeTo((yield* top("--fusion", "rrf", "--alpha", "0.25")).score, 0.5 / 61 + 1.5 / 61, 1e-15)
      const error = yield* Effect.flip(run(["search", sample, "-q", voyager, "--mode", "hybrid", "--alpha", "1.5"]))
      assert.strictEqual(error._tag, "ShowHelp", "an alpha above 1 is refused")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("reads the query from stdin with --query -, and says so when stdin is not text", () =>
    Effect.gen(function* () {
      const stdin = Stream.make(new TextEncoder().encode("Which probe reached interstellar space?\n"))
      yield* run(["search", sample, "--query", "-", "--top-k", "1"]).pipe(Effect.provide(Stdio.layerTest({ stdin })))
      assert.match(String((yield* TestConsole.logLines)[0]), /^1\. \d+\.\d{6} {2}voyager-1 /)
      const binary = Stream.make(new Uint8Array([0xff, 0xfe, 0x00]))
      const error = yield* Effect.flip(
        run(["search", sample, "-q", "-"]).pipe(Effect.provide(Stdio.layerTest({ stdin: binary })))
      )
      assert.strictEqual(error.message, "cannot read the query from stdin: it is not UTF-8 text")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("says when no result is because every word of the query is a stop word", () =>
    Effect.gen(function* () {
      yield* run(["search", sample, "-q", "The"])
      yield* run(["search", sample, "-q", "xylophone"])
      assert.deepStrictEqual((yield* TestConsole.logLines).map(String), [
        `no results in lexical mode: every word of the query is a stop word (such as "the" or "of"), and lexical ` +
          `search leaves stop words out (see --stop-words)`,
        "no results in lexical mode"
      ])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("applies the chunking flags", () =>
    Effect.gen(function* () {
      yield* run([
        "search",
        `${sample}/missions.csv`,
        "-q",
        "launched in",
        "--mode",
        "vector",
        "--chunk-size",
        "11",
        "--overlap",
        "0",
        "--tail",
        "drop"
      ])
      assert.match(
        String((yield* TestConsole.logLines)[0]).split("\n")[0]!,
        /^1\. 1\.000000 {2}voyager-1 "Voyager 1" {2}\[0, 11\) {2}Launched in$/
      )
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("ends chunks at a sentence with --chunker sentences, and refuses a tail policy it cannot apply", () =>
    Effect.gen(function* () {
      // The moon note's first sentence ends within 60 characters: the fixed windows run on past it, to a space here.
      const first = (...flags: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          const before = (yield* TestConsole.logLines).length
          yield* run(["search", `${sample}/sky/moon.md`, "-q", "light", "--chunk-size", "60", "--json", ...flags])
          const { results } = JSON.parse(String((yield* TestConsole.logLines)[before]))
          return results.map((r: { text: string }) => r.text)
        })
      assert.deepStrictEqual(yield* first("--chunker", "sentences"), ["# the moon the moon has no light of its own."])
      assert.deepStrictEqual(yield* first(), ["# the moon the moon has no light of its own. what we see is "])
      const error = yield* Effect.flip(run(["search", sample, "-q", "x", "--chunker", "words", "--tail", "pad"]))
      assert.strictEqual(
        error.message,
        "invalid chunking flags: the tail policy pad applies to fixed windows only (--chunker fixed), not to the words chunker"
      )
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("rejects an overlap not below the chunk size with the domain's message", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(run(["search", sample, "-q", "x", "--chunk-size", "4", "--overlap", "4"]))
      assert.strictEqual(error._tag, "InvalidInput")
      assert.strictEqual(error.message, "invalid chunking flags: overlap (4) must be smaller than the chunk size (4)")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("rejects a bad --top-k while parsing flags", () =>
    Effect.gen(function* () {
      for (const k of ["0", "-1", "1.5", "many"]) {
        const error = yield* Effect.flip(run(["search", sample, "-q", "x", "--top-k", k]))
        assert.strictEqual(error._tag, "ShowHelp", `--top-k ${k}`)
      }
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("fails with SourceMissing for a path that is not there", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(run(["search", "/no/such/corpus", "-q", "x"]))
      assert.strictEqual(error._tag, "SourceMissing")
    }).pipe(Effect.provide(TestLayer))
  )
})

describe("funcpipe chunks", () => {
  it.effect("writes one JSON object per chunk, in pipeline order, atomically to --out", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-cli-" })
      yield* fs.writeFileString(`${dir}/b.md`, "# B\nSecond  file")
      yield* fs.writeFileString(`${dir}/a.txt`, "First file, a little longer.")
      yield* fs.writeFileString(`${dir}/empty.md`, "  \n")
      yield* run(["chunks", dir, "--chunk-size", "12", "--overlap", "2", "--out", `${dir}/out.jsonl`])
      const rows = (yield* fs.readFileString(`${dir}/out.jsonl`))
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l))
      assert.deepStrictEqual(
        rows.map((r) => Object.keys(r)),
        rows.map(() => ["doc_id", "start", "end", "text", "embedding"])
      )
      assert.deepStrictEqual(
        rows.map((r) => [r.doc_id, r.start, r.end, r.text]),
        [
          ["a.txt", 0, 12, "first file, "],
          ["a.txt", 10, 22, ", a little l"],
          ["a.txt", 20, 28, " longer."],
          ["b.md", 0, 12, "# b second f"],
          ["b.md", 10, 15, " file"]
        ]
      )
      assert.isTrue(rows.every((r) => r.embedding.length === 16))
      assert.deepStrictEqual(yield* TestConsole.logLines, [])
      assert.deepStrictEqual(yield* TestConsole.errorLines, [
        "read 3 records: 2 kept, 1 skipped; 5 chunks (0.0 s)",
        `  skipped ${dir}/empty.md: "empty.md" has nothing left after cleaning`
      ])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("prints the chunks to stdout without --out", () =>
    Effect.gen(function* () {
      yield* run(["chunks", `${sample}/missions.csv`])
      const lines = String((yield* TestConsole.logLines)[0]).split("\n")
      assert.deepStrictEqual(
        lines.map((l) => JSON.parse(l).doc_id),
        ["apollo-11", "voyager-1", "hubble", "cassini", "jwst"]
      )
    }).pipe(Effect.provide(TestLayer))
  )
})

describe("funcpipe --wizard", () => {
  it.effect("fails at once when stdin is not a terminal, instead of reading nothing and exiting 0 as cancelled", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(main(["query", "--wizard"]))
      assert.strictEqual(error._tag, "WizardNeedsTerminal")
      assert.include(error.message, "stdin is not")
      assert.deepStrictEqual(yield* TestConsole.logLines, [])
    }).pipe(Effect.provide(Stdio.layerTest({})), Effect.provide(TestLayer))
  )
})
