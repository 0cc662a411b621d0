/**
 * Where the CLI's index lives: `FUNCPIPE_INDEX` when `--index` is not given, a SQLite file or a PostgreSQL URL alike
 * (the same answers from either), and `funcpipe copy` between them; a URL is never printed with its password.
 */

import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { describePg, freshSchema, PG_URL } from "@funcpipe/test-kit/PgFixture"
import { ConfigProvider, Effect, FileSystem, Layer, Path } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { cli, version } from "../src/Cli.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const run = Command.runWith(cli, { version })
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/** Runs a command and returns what it printed to stdout. */
const output = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const before = (yield* TestConsole.logLines).length
    yield* run(args)
    return (yield* TestConsole.logLines).slice(before).map(String).join("\n")
  })

/** Every mode's answer to a few queries, as `query --json` prints it. */
const answersAt = (index: ReadonlyArray<string>) =>
  Effect.forEach(["saturn moon probe", "mars rover", "telescope"], (q) =>
    Effect.forEach(["vector", "lexical", "hybrid"], (mode) =>
      output(["query", q, "--mode", mode, "--top-k", "8", "--json", ...index])
    )
  )

const folder = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-location-" })
})

describe("the index location", () => {
  it.effect("is FUNCPIPE_INDEX when --index is not given", () =>
    Effect.gen(function* () {
      const path = yield* Path.Path
      const index = path.join(yield* folder, "team.db")
      const env = ConfigProvider.layer(ConfigProvider.fromEnvRecord({ FUNCPIPE_INDEX: index }))
      const first = yield* output(["index", sample]).pipe(Effect.provide(env))
      assert.include(first, `${index} holds 17 documents`)
      assert.include(yield* output(["status", "--index", index]), "documents  17")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("copies between files with `funcpipe copy`, answers unchanged, and refuses to overwrite unasked", () =>
    Effect.gen(function* () {
      const dir = yield* folder
      yield* output(["index", sample, "--index", `${dir}/a.db`])
      const copied = yield* output(["copy", "--from", `${dir}/a.db`, "--to", `${dir}/b.db`])
      assert.match(copied, /^copied 17 documents and 17 chunks from .*a\.db to .*b\.db/)
      assert.deepStrictEqual(yield* answersAt(["--index", `${dir}/b.db`]), yield* answersAt(["--index", `${dir}/a.db`]))
      const refused = yield* Effect.flip(run(["copy", "--from", `${dir}/a.db`, "--to", `${dir}/b.db`]))
      assert.include(refused.message, "--replace")
    }).pipe(Effect.provide(TestLayer))
  )
})

describePg("the index location in PostgreSQL", () => {
  it.effect(
    "answers as the SQLite file does, through index, query, status and copy, and never prints the password",
    () =>
      Effect.gen(function* () {
        const dir = yield* folder
        const { url } = yield* freshSchema
        const password = new URL(PG_URL!).password
        const indexed = yield* output(["index", sample, "--index", url])
        assert.include(indexed, "holds 17 documents")
        yield* output(["index", sample, "--index", `${dir}/a.db`])
        assert.deepStrictEqual(yield* answersAt(["--index", url]), yield* answersAt(["--index", `${dir}/a.db`]))
        const status = yield* output(["status", "--index", url])
        yield* output(["copy", "--from", url, "--to", `${dir}/back.db`])
        assert.deepStrictEqual(
          yield* answersAt(["--index", `${dir}/back.db`]),
          yield* answersAt(["--index", `${dir}/a.db`])
        )
        if (password !== "") for (const text of [indexed, status]) assert.notInclude(text, `:${password}@`)
      }).pipe(Effect.provide(TestLayer)),
    30_000
  )

  it.effect(
    "builds graphs there with --ann hnsw, walked over i8 codes, and refuses --vector-codes float32 in one line",
    () =>
      Effect.gen(function* () {
        const { url } = yield* freshSchema
        yield* output(["index", sample, "--index", url, "--ann", "hnsw"])
        const status = JSON.parse(yield* output(["status", "--index", url, "--json"]))
        assert.strictEqual(status.ann.codes, "i8")
        const walked = JSON.parse(
          yield* output(["query", "saturn moon probe", "--index", url, "--ann-candidates", "64", "--json"])
        )
        const exact = JSON.parse(yield* output(["query", "saturn moon probe", "--index", url, "--json"]))
        assert.deepStrictEqual(walked.results, exact.results)
        const refused = yield* Effect.flip(run(["index", sample, "--index", url, "--vector-codes", "float32"]))
        assert.strictEqual(refused._tag, "CodesFixedInPostgres")
        assert.include(refused.message, "leave out --vector-codes")
        assert.notInclude(refused.message, "\n")
      }).pipe(Effect.provide(TestLayer)),
    30_000
  )
})
