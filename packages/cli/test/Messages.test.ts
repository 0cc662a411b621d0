/** What a user reads when a command fails: one plain line on stderr, naming the cause, never internal names. */

import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, Exit, FileSystem, Layer, Path, PlatformError } from "effect"
import { CliOutput, Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, version } from "../src/Cli.ts"
import { presenter, reportFailure } from "../src/output/Report.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal, CliOutput.layerPresenter(presenter)).pipe(
  Layer.provideMerge(NodeServices.layer)
)
const run = Command.runWith(cli, { version })
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/** Runs a command that must fail and returns the last line it left on stderr, as the entry point prints it. */
const failureLine = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(run(args))
    assert.isTrue(Exit.isFailure(exit), `${args.join(" ")} should fail`)
    if (Exit.isFailure(exit)) yield* reportFailure(exit.cause)
    return String((yield* TestConsole.errorLines).at(-1))
  })

/** A temporary folder holding an empty folder `dir` and a file `file`. */
const workspace = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const root = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-messages-" })
  yield* fs.makeDirectory(path.join(root, "dir"))
  yield* fs.writeFileString(path.join(root, "file"), "not a folder\n")
  return { root, dir: path.join(root, "dir"), file: path.join(root, "file") }
})

describe("messages about the index file", () => {
  it.effect("--index naming a directory says so, for index, query and status", () =>
    Effect.gen(function* () {
      const { dir } = yield* workspace
      const expected =
        `funcpipe: cannot use the index at ${dir}: it is a directory; give the path of a file, ` +
        `such as ${dir}/index.db`
      assert.strictEqual(yield* failureLine(["index", sample, "--index", dir]), expected)
      assert.strictEqual(yield* failureLine(["query", "moon", "--index", dir]), expected)
      assert.strictEqual(yield* failureLine(["status", "--index", dir]), expected)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("--index inside a file names the file standing where a folder should be", () =>
    Effect.gen(function* () {
      const { file } = yield* workspace
      assert.strictEqual(
        yield* failureLine(["index", sample, "--index", `${file}/more/index.db`]),
        `funcpipe: cannot use the index at ${file}/more/index.db: cannot create its folder: ${file} is a file, not a folder`
      )
    }).pipe(Effect.provide(TestLayer))
  )
})

describe("messages about output files", () => {
  it.effect("--out naming a directory, a path inside a file, or a missing folder says which", () =>
    Effect.gen(function* () {
      const { dir, file, root } = yield* workspace
      const csv = `${sample}/missions.csv`
      assert.strictEqual(
        yield* failureLine(["chunks", csv, "--out", dir]),
        `funcpipe: cannot write ${dir}: it is a directory`
      )
      assert.strictEqual(
        yield* failureLine(["chunks", csv, "--out", `${file}/chunks.jsonl`]),
        `funcpipe: cannot write ${file}/chunks.jsonl: ${file} is a file, not a folder`
      )
      assert.strictEqual(
        yield* failureLine(["chunks", csv, "--out", `${root}/no/such/chunks.jsonl`]),
        `funcpipe: cannot write ${root}/no/such/chunks.jsonl: the folder ${root}/no/such does not exist`
      )
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("a full disk is called that", () => {
    // The real file system, except that writing a temporary file fails as a full disk does.
    const FullDisk = Layer.effect(
      FileSystem.FileSystem,
      Effect.map(FileSystem.FileSystem, (fs) =>
        FileSystem.FileSystem.of({
          ...fs,
          writeFileString: (path, data, options) =>
            !path.endsWith(".tmp")
              ? fs.writeFileString(path, data, options)
              : Effect.fail(
                  PlatformError.systemError({
                    _tag: "Unknown",
                    module: "FileSystem",
                    method: "writeFile",
                    pathOrDescriptor: path,
                    cause: Object.assign(new Error(`ENOSPC: no space left on device, write`), { code: "ENOSPC" })
                  })
                )
        })
      )
    ).pipe(Layer.provide(NodeServices.layer))
    return Effect.gen(function* () {
      const { root } = yield* workspace
      assert.strictEqual(
        yield* failureLine(["chunks", `${sample}/missions.csv`, "--out", `${root}/chunks.jsonl`]),
        `funcpipe: cannot write ${root}/chunks.jsonl: no space left on device`
      )
    }).pipe(Effect.provide(Layer.merge(TestLayer, FullDisk)))
  })
})

describe("messages about inputs", () => {
  it.effect("a document path inside a file says that part of the path is a file", () =>
    Effect.gen(function* () {
      const { file } = yield* workspace
      assert.strictEqual(
        yield* failureLine(["search", `${file}/notes.md`, "-q", "moon"]),
        `funcpipe: cannot read ${file}/notes.md: part of the path is a file, not a folder`
      )
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("a collection that is a file is called a file", () =>
    Effect.gen(function* () {
      const { file, root } = yield* workspace
      assert.include(
        yield* failureLine(["eval", file, "--index", `${root}/e.db`]),
        `${file} is not a test collection: it is a file, not a folder`
      )
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("JSONL values of the wrong kind are named with their field", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const { root } = yield* workspace
      yield* fs.writeFileString(
        `${root}/docs.jsonl`,
        [
          { id: "a", title: 5, text: "hello" },
          { id: "b", text: 7 },
          { id: true, text: "x" },
          { id: "c", text: "x", categories: ["ok", 1] },
          { id: "d", title: "Fine", text: "hello" }
        ]
          .map((r) => JSON.stringify(r))
          .join("\n")
      )
      yield* run(["search", `${root}/docs.jsonl`, "-q", "hello"])
      assert.deepStrictEqual((yield* TestConsole.errorLines).slice(0, 4), [
        `  skipped ${root}/docs.jsonl:1: "title" must be a string, not the number 5`,
        `  skipped ${root}/docs.jsonl:2: "text" must be a string, not the number 7`,
        `  skipped ${root}/docs.jsonl:3: "id" must be a string or a whole number, not true`,
        `  skipped ${root}/docs.jsonl:4: "categories" must be a string or a list of strings, not a list holding the number 1`
      ])
    }).pipe(Effect.provide(TestLayer))
  )
})

describe("messages about flags", () => {
  it.effect("a bad value names the flag and what it accepts, without the parser's own wording", () =>
    Effect.gen(function* () {
      const lines = yield* Effect.forEach(
        [
          ["query", "moon", "--top-k", "0"],
          ["query", "moon", "--top-k", "1.5"],
          ["query", "moon", "--top-k"],
          ["index", sample, "--chunk-size", "0"],
          ["query", "moon", "--mode", "fast"]
        ],
        failureLine
      )
      assert.deepStrictEqual(lines, [
        `funcpipe: invalid value for --top-k: "0": top-k must be at least 1 (see: funcpipe query --help)`,
        `funcpipe: invalid value for --top-k: "1.5": it must be a whole number (see: funcpipe query --help)`,
        `funcpipe: --top-k needs a value: it must be a whole number (see: funcpipe query --help)`,
        `funcpipe: invalid value for --chunk-size: "0": it must be at least 1 (see: funcpipe index --help)`,
        `funcpipe: invalid value for --mode: "fast": it must be one of vector, lexical, hybrid (see: funcpipe query --help)`
      ])
    }).pipe(Effect.provide(TestLayer))
  )
})
