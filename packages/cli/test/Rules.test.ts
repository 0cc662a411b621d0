/** --keep and --where from the command line: a mixed folder indexed in part, one category queried, bad rules. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, Exit, FileSystem, Layer, Path } from "effect"
import { CliOutput, Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, version } from "../src/Cli.ts"
import { presenter, reportFailure } from "../src/output/Report.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal, CliOutput.layerPresenter(presenter)).pipe(
  Layer.provideMerge(NodeServices.layer)
)
const run = Command.runWith(cli, { version })

/** A folder of Markdown notes with front matter, a CSV export and a JSONL file, and an index path beside it. */
const mixedFolder = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const root = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-rules-" })
  const corpus = path.join(root, "corpus")
  yield* fs.makeDirectory(path.join(corpus, "notes"), { recursive: true })
  const files: Record<string, string> = {
    "notes/galaxies.md":
      "---\ntags: [astro-ph.GA, draft]\n---\n" + "# Galaxies\nGalaxies hold stars, gas and dark matter.\n",
    "notes/clusters.md":
      "---\ncategories: astro-ph.CO\ntags:\n  - reading\n---\n" +
      "# Clusters\nGalaxy clusters are bound by dark matter.\n",
    "notes/plain.md": "# Plain\nA note about galaxies without front matter.\n",
    "papers.csv":
      "doc_id,title,abstract,categories\n" +
      "p1,Rotation curves,Rotation curves of galaxies show dark matter,astro-ph.GA hep-ph\n" +
      "p2,Deep nets,Galaxies classified by deep networks,cs.LG astro-ph.GA\n" +
      "p3,Erratum: Rotation curves,A correction about galaxies and dark matter,astro-ph.GA\n" +
      "p4,Graphs,Graph networks and message passing,cs.LG\n",
    "more.jsonl": [
      {
        id: "j1",
        title: "Lensing",
        text: "Lensing by galaxies maps dark matter",
        categories: ["astro-ph.CO", "Cosmology Notes"]
      },
      { id: "j2", title: "Compilers", text: "Register allocation by graph colouring", categories: ["cs.PL"] }
    ]
      .map((line) => `${JSON.stringify(line)}\n`)
      .join("")
  }
  for (const [name, text] of Object.entries(files)) yield* fs.writeFileString(path.join(corpus, name), text)
  return { corpus, index: path.join(root, "index.db"), notes: path.join(corpus, "notes") }
})

/** Runs a command and returns what it printed to stdout. */
const output = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const before = (yield* TestConsole.logLines).length
    yield* run(args)
    return (yield* TestConsole.logLines).slice(before).map(String).join("\n")
  })

/** The doc ids of a `query --json` answer, in rank order. */
const ids = (json: string): Array<string> =>
  (JSON.parse(json) as { results: Array<{ doc_id: string }> }).results.map((r) => r.doc_id)

/** The doc ids `query` answers with `args` (besides the text, `--index` and `--json`). */
const query = (text: string, index: string, ...args: ReadonlyArray<string>) =>
  Effect.map(output(["query", text, "--index", index, "--json", ...args]), ids)

/** Runs a command that must fail and returns the last line it left on stderr, as the entry point prints it. */
const failureLine = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(run(args))
    assert.isTrue(Exit.isFailure(exit), `${args.join(" ")} should fail`)
    if (Exit.isFailure(exit)) yield* reportFailure(exit.cause)
    return String((yield* TestConsole.errorLines).at(-1))
  })

describe("--keep and --where", () => {
  it.effect(
    "index a mixed folder keeping some documents, then query one category with an exact top k",
    () =>
      Effect.gen(function* () {
        const { corpus, index, notes } = yield* mixedFolder
        const rule = "not categories = draft and not title ^= Erratum"
        const report = JSON.parse(yield* output(["index", corpus, "--index", index, "--json", "--keep", rule]))
        assert.deepStrictEqual(
          [report.added, report.dropped_by_keep, report.keep],
          [7, 2, 'categories != "draft" and not title ^= "Erratum"']
        )
        const text = yield* output(["index", corpus, "--index", index, "--keep", rule])
        assert.match(
          text,
          /^keep rule categories != "draft" and not title \^= "Erratum": kept 7, dropped by keep rule 2/
        )

        // Unfiltered, the best chunks come from several categories; the filter ranks the rest, never fewer than asked.
        const everything = yield* query("galaxies dark matter", index, "--top-k", "100")
        const astro = ["p1", "p2", "notes/clusters.md", "j1"]
        assert.isTrue(
          everything.some((id) => !astro.includes(id)),
          "the unfiltered answer holds other documents"
        )
        const filtered = yield* query(
          "galaxies dark matter",
          index,
          "--top-k",
          "3",
          "--where",
          "categories ^= astro-ph"
        )
        assert.deepStrictEqual(filtered, everything.filter((id) => astro.includes(id)).slice(0, 3))
        for (const mode of ["vector", "hybrid"]) {
          const where = "categories = astro-ph.CO"
          const answer = yield* query("galaxies dark matter", index, "--mode", mode, "--where", where)
          // (Linear fusion scales each ranking to [0, 1], so a chunk last in both scores 0 and is left out.)
          assert.isNotEmpty(answer, mode)
          for (const id of answer) assert.include(["j1", "notes/clusters.md"], id, mode)
        }
        // A label with a space, from a JSONL list; a folder, by path.
        assert.deepStrictEqual(yield* query("lensing", index, "--where", 'categories = "Cosmology Notes"'), ["j1"])
        const inNotes = yield* query("galaxies", index, "--top-k", "10", "--where", `source under "${notes}"`)
        assert.deepStrictEqual([...inNotes].sort(), ["notes/clusters.md", "notes/plain.md"])
        const status = yield* output(["status", "--index", index])
        assert.include(status, 'keep       categories != "draft" and not title ^= "Erratum"')
      }).pipe(Effect.provide(TestLayer)),
    30_000
  )

  it.effect("search and chunks take --keep too, and count what it leaves out", () =>
    Effect.gen(function* () {
      const { corpus } = yield* mixedFolder
      const answer = ids(
        yield* output([
          "search",
          corpus,
          "-q",
          "graph",
          "--json",
          "--keep",
          "categories ^= cs",
          "--where",
          "categories = cs.PL"
        ])
      )
      assert.deepStrictEqual(answer, ["j2"])
      assert.include((yield* TestConsole.errorLines).map(String).join("\n"), "6 dropped by keep rule")
      const lines = (yield* output(["chunks", corpus, "--keep", "categories = cs.LG"])).split("\n")
      const chunks = lines.map((line) => JSON.parse(line).doc_id)
      assert.deepStrictEqual(chunks, ["p2", "p4"])
      const summary = (yield* TestConsole.errorLines).map(String).at(-1)!
      assert.match(summary, /read 9 records: 2 kept, 7 dropped by keep rule, 0 skipped/)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("a bad rule is one line saying where and what was expected", () =>
    Effect.gen(function* () {
      const { corpus, index } = yield* mixedFolder
      assert.strictEqual(
        yield* failureLine(["index", corpus, "--index", index, "--keep", "title ="]),
        'funcpipe: invalid value for --keep: "title =": invalid rule at column 8: expected a value after = ' +
          "(a word, or text in quotes), found the end of the rule (see: funcpipe index --help)"
      )
      assert.strictEqual(
        yield* failureLine(["query", "x", "--index", index, "--where", "categories = astro-ph cs"]),
        'funcpipe: invalid value for --where: "categories = astro-ph cs": invalid rule at column 23: expected ' +
          '"and", "or" or the end of the rule, found the word "cs" (see: funcpipe query --help)'
      )
      // A rule nested 5,000 deep: one line, the value shortened, no stack trace.
      const deep = `${"(".repeat(5_000)}title = a${")".repeat(5_000)}`
      assert.strictEqual(
        yield* failureLine(["query", "x", "--index", index, "--where", deep]),
        `funcpipe: invalid value for --where: "${"(".repeat(60)}… (10009 characters)": invalid rule at column 202: ` +
          'expected a rule nested at most 200 levels deep, found "(" (see: funcpipe query --help)'
      )
      assert.strictEqual(
        yield* failureLine(["query", "x", "--index", index, "--where", "tags = x"]),
        'funcpipe: invalid value for --where: "tags = x": invalid rule at column 1: expected a condition: a field ' +
          '(doc_id, title, body, categories or source), "not", "len(" or "(", found the word "tags" ' +
          "(see: funcpipe query --help)"
      )
      assert.strictEqual(
        yield* failureLine(["query", "x", "--index", index, "--where", "body ^= x"]),
        "funcpipe: a query filter cannot use this rule: it reads body, but a query filter chooses documents by their " +
          "fields, not their text; filter by doc_id, title, categories or source (body works in keep rules, which " +
          "see documents as they are read)"
      )
      assert.strictEqual(
        yield* failureLine(["index", corpus, "--index", index, "--keep", "categories = nothing-like-this"]),
        `funcpipe: the keep rule categories = "nothing-like-this" kept none of the 9 documents under the paths, so ` +
          `${index} was left as it was; check the rule (values and labels compare exactly, case included)`
      )
    }).pipe(Effect.provide(TestLayer))
  )
})
