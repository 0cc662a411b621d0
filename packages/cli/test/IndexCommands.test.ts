/** funcpipe index, query and status over a copy of the sample corpus: the quick start's edit-and-re-index loop. */

import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { embedText } from "@funcpipe/pipeline/analysis/Embed"
import { Embedder, fingerprintOf } from "@funcpipe/pipeline/models/Embedder"
import { localSha256, Models } from "@funcpipe/pipeline/models/Models"
import type { Provider } from "@funcpipe/pipeline/models/Provider"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer, Path, Stdio, Stream } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, version } from "../src/Cli.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })

/** A second model for the tests: local-sha256's vectors under another name. */
const testEcho: Provider = (name) => {
  if (name !== "test-echo") return undefined
  const model = ModelLabel.make("test-echo")
  return Effect.succeed(
    Embedder.of({
      ...Embedder.localSha256,
      model,
      fingerprint: fingerprintOf({ model }),
      embedMany: (texts) => Effect.sync(() => texts.map((t) => new Embedding({ vector: embedText(t).vector, model })))
    })
  )
}
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/** Copies the sample corpus into a fresh directory; returns the copy and an index path beside it. */
const workspace = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-index-cli-" })
  yield* fs.copy(sample, path.join(dir, "sample"))
  return { corpus: path.join(dir, "sample"), index: path.join(dir, ".funcpipe", "index.db") }
})

/** Runs a command and returns what it printed to stdout, clearing the captured lines. */
const output = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const before = (yield* TestConsole.logLines).length
    yield* run(args)
    return (yield* TestConsole.logLines).slice(before).map(String).join("\n")
  })

describe("funcpipe index / query / status", () => {
  it.effect("indexes, re-indexes incrementally after an edit, queries and reports status", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const { corpus, index } = yield* workspace
      const first = yield* output(["index", corpus, "--index", index])
      assert.match(
        first,
        /^added 17, updated 0, unchanged 0, deleted 0; 17 chunks written; .* holds 17 documents and 17 chunks/
      )

      const again = yield* output(["index", corpus, "--index", index])
      assert.match(again, /^added 0, updated 0, unchanged 17, deleted 0; 0 chunks written/)

      yield* fs.writeFileString(`${corpus}/sky/moon.md`, "# The Moon\n\nThe Moon is about 384,000 km away.\n")
      const status = yield* output(["status", "--index", index])
      assert.include(status, "model      local-sha256 (16 dimensions)")
      assert.include(status, `  ${corpus}/sky/moon.md: 1 changed`)

      const dry = yield* output(["index", corpus, "--index", index, "--dry-run"])
      assert.match(dry, /^dry run, nothing written: would have added 0, updated 1, unchanged 16, deleted 0/)

      const update = yield* output(["index", corpus, "--index", index, "--json"])
      const report = JSON.parse(update)
      assert.deepStrictEqual(
        [report.added, report.updated, report.unchanged, report.deleted, report.chunks_written, report.chunks],
        [0, 1, 16, 0, 1, 17]
      )
      // Every documented key, in order: the output is encoded through its schema.
      assert.deepStrictEqual(Object.keys(report), [
        "index",
        "dry_run",
        "rebuilt",
        "added",
        "updated",
        "unchanged",
        "deleted",
        "chunks_written",
        "documents",
        "chunks",
        "deleted_ids",
        "prune_needed",
        "keep",
        "dropped_by_keep",
        "skipped",
        "seconds"
      ])
      assert.isAtLeast(report.seconds, 0)

      const answer = yield* output([
        "query",
        "# The Moon  The Moon is about 384,000 km away.",
        "--index",
        index,
        "--json",
        "--mode",
        "vector"
      ])
      const parsed = JSON.parse(answer)
      assert.strictEqual(parsed.results[0].doc_id, "sky/moon.md")
      assert.closeTo(parsed.results[0].score, 1, 1e-12)
      assert.strictEqual(parsed.results.length, 3)

      const words = yield* output(["query", "How far away is the Moon?", "--index", index, "--top-k", "1"])
      assert.match(words, /^1\. \d+\.\d{6} {2}sky\/moon\.md /)

      const clean = yield* output(["status", "--index", index, "--json"])
      assert.deepStrictEqual(JSON.parse(clean).changed, [])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("refuses changed chunking without --rebuild and explains what changed", () =>
    Effect.gen(function* () {
      const { corpus, index } = yield* workspace
      yield* run(["index", corpus, "--index", index])
      const error = yield* Effect.flip(run(["index", corpus, "--index", index, "--chunk-size", "64"]))
      assert.strictEqual(error._tag, "SettingsChanged")
      assert.include(error.message, "size 512, overlap 0, tail emit_short → size 64, overlap 0, tail emit_short")
      const rebuilt = yield* output(["index", corpus, "--index", index, "--chunk-size", "64", "--rebuild"])
      assert.match(rebuilt, /^added 17, .* \(rebuilt\)/)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("reads PDF and HTML files, shows a PDF result's page, and skips a file over --max-file-mb", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-formats-cli-" })
      const docs = path.join(dir, "docs")
      yield* fs.makeDirectory(docs)
      const report = fileURLToPath(new URL("../../pipeline/test/fixtures/pdf/report.pdf", import.meta.url))
      yield* fs.copyFile(report, path.join(docs, "report.pdf"))
      yield* fs.writeFileString(path.join(docs, "small.html"), "<title>Small</title><h1>Tides</h1><p>Neap tides.</p>")
      yield* fs.writeFileString(path.join(docs, "big.html"), `<p>${"word ".repeat(300_000)}</p>`)
      const index = path.join(dir, "index.db")
      const errorsBefore = (yield* TestConsole.errorLines).length
      const indexed = yield* output(["index", docs, "--index", index, "--max-file-mb", "1"])
      assert.match(indexed, /^added 2, /)
      const errors = (yield* TestConsole.errorLines).slice(errorsBefore).map(String)
      const skip = errors.find((line) => line.includes("big.html"))
      assert.isDefined(skip)
      assert.include(skip, "larger than 1")
      assert.include(skip, "--max-file-mb")
      const found = (yield* output(["query", "seismometer", "--index", index])).split("\n")
      assert.match(found[0]!, /^1\. .* report\.pdf "Lunar Survey Report"/)
      assert.strictEqual(found[1], "     p. 3")
      const json = JSON.parse(yield* output(["query", "neap tides", "--index", index, "--json"]))
      assert.deepStrictEqual(json.results[0].section, ["Tides"])
      assert.notProperty(json.results[0], "page")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("fails clearly when there is no index yet", () =>
    Effect.gen(function* () {
      const { index } = yield* workspace
      const query = yield* Effect.flip(run(["query", "moon", "--index", index]))
      assert.strictEqual(query._tag, "IndexMissing")
      assert.include(query.message, "funcpipe index")
      const status = yield* Effect.flip(run(["status", "--index", index]))
      assert.strictEqual(status._tag, "IndexMissing")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("asks for --prune before a run over other paths deletes documents, and lists them on a dry run", () =>
    Effect.gen(function* () {
      const { corpus, index } = yield* workspace
      yield* run(["index", corpus, "--index", index])
      const typo = [`${corpus}/sky/moon.md`, "--index", index]
      const refused = yield* Effect.flip(run(["index", ...typo]))
      assert.strictEqual(refused._tag, "PruneNeeded")
      assert.include(refused.message, "would delete 17 of the 17 documents")
      const dry = (yield* output(["index", ...typo, "--dry-run"])).split("\n")
      assert.match(
        dry[0]!,
        /^dry run, nothing written: would have added 1, updated 0, unchanged 0, deleted 17; .* holds 17 documents and 17 chunks now$/
      )
      assert.include(dry, "  would delete sky/polaris.md")
      assert.match(dry.at(-1)!, /^the deletions need --prune \(the paths are not the ones the index was built from\)/)
      assert.match(yield* output(["status", "--index", index]), /documents {2}17/)
      const pruned = yield* output(["index", ...typo, "--prune"])
      assert.match(pruned, /^added 1, updated 0, unchanged 0, deleted 17; .* holds 1 document and 1 chunk/)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("keeps same-named files of two folders apart, under each folder's name", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const { corpus, index } = yield* workspace
      for (const project of ["projA", "projB"]) {
        yield* fs.makeDirectory(`${corpus}/${project}`)
        yield* fs.writeFileString(`${corpus}/${project}/README.md`, `# ${project}\n\nAbout ${project}.\n`)
      }
      const report = JSON.parse(
        yield* output(["index", `${corpus}/projA`, `${corpus}/projB`, "--index", index, "--json"])
      )
      assert.deepStrictEqual([report.added, report.skipped], [2, []])
      const answer = JSON.parse(yield* output(["query", "projB", "--index", index, "--json"]))
      assert.strictEqual(answer.results[0].doc_id, "projB/README.md")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("reads the query from stdin when it is -, however long", () =>
    Effect.gen(function* () {
      const { corpus, index } = yield* workspace
      yield* run(["index", corpus, "--index", index])
      // About 1 MB: more than a command line takes. Split across pieces, as a pipe delivers it.
      const long = `Which probe reached interstellar space? ${"xylophone ".repeat(100_000)}`
      const bytes = new TextEncoder().encode(long)
      const stdin = Stream.make(bytes.subarray(0, 1000), bytes.subarray(1000))
      const answer = yield* output(["query", "-", "--index", index, "--top-k", "1"]).pipe(
        Effect.provide(Stdio.layerTest({ stdin }))
      )
      assert.match(answer, /^1\. \d+\.\d{6} {2}voyager-1 /)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("takes the query text as its argument or with --query (-q) as search does, and only one of them", () =>
    Effect.gen(function* () {
      const { corpus, index } = yield* workspace
      yield* run(["index", corpus, "--index", index])
      const question = "Which probe reached interstellar space?"
      const byArgument = yield* output(["query", question, "--index", index])
      assert.match(byArgument, /^1\. \d+\.\d{6} {2}voyager-1 /)
      assert.strictEqual(yield* output(["query", "--query", question, "--index", index]), byArgument)
      assert.strictEqual(yield* output(["query", "-q", question, "--index", index]), byArgument)
      const twice = yield* Effect.flip(run(["query", question, "-q", question, "--index", index]))
      assert.strictEqual(twice._tag, "QueryTextMissing")
      assert.include(twice.message, "given twice")
      const none = yield* Effect.flip(run(["query", "--index", index]))
      assert.strictEqual(none._tag, "QueryTextMissing")
      assert.include(none.message, "--query")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("builds with the model --model names, and queries with the index's model without being told", () =>
    Effect.gen(function* () {
      const { corpus, index } = yield* workspace
      const unknown = yield* Effect.flip(run(["index", corpus, "--index", index, "--model", "no-such-model"]))
      assert.strictEqual(unknown._tag, "UnknownModel")
      assert.include(unknown.message, 'there is no embedding model called "no-such-model"; the models are local-sha256')
      yield* run(["index", corpus, "--index", index, "--model", "test-echo"])
      const status = yield* output(["status", "--index", index])
      assert.include(status, "model      test-echo (16 dimensions)")
      const answer = JSON.parse(
        yield* output(["query", "Which probe reached interstellar space?", "--index", index, "--json"])
      )
      assert.strictEqual(answer.model, "test-echo")
      assert.strictEqual(answer.results[0].doc_id, "voyager-1")
    }).pipe(Effect.provide(Layer.merge(TestLayer, Layer.succeed(Models, Models.make([localSha256, testEcho])))))
  )

  it.effect("status does not report a file that cleans to nothing as new, run after run", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const { corpus, index } = yield* workspace
      yield* fs.writeFileString(`${corpus}/sky/blank.md`, "   \n\t\n")
      yield* run(["index", corpus, "--index", index])
      const status = JSON.parse(yield* output(["status", "--index", index, "--json"]))
      assert.deepStrictEqual(status.changed, [])
    }).pipe(Effect.provide(TestLayer))
  )
})
