/**
 * The configuration file (`funcpipe.yaml`) and `FUNCPIPE_*` variables: read, checked with the file's lines named,
 * applied under the command line, and shown by `funcpipe config` with secrets hidden. `serve` reading it again on
 * SIGHUP is tested in ServeReload.cluster.test.ts (a process of its own).
 */

import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer, Path, Result, Stdio } from "effect"
import { TestConsole } from "effect/testing"
import * as yaml from "yaml"
import { cli, main } from "../src/Cli.ts"
import { parseConfigFile } from "../src/config/ConfigFile.ts"
import { checkFile, withSettings } from "../src/config/Effective.ts"
import { givenOn, settingsOf } from "../src/config/Settings.ts"
import { run, SAMPLE } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal, Stdio.layerTest({})).pipe(
  Layer.provideMerge(NodeServices.layer)
)
const commands = cli.subcommands.flatMap((group) => group.commands)
const names = new Set(commands.map((command) => command.name))

/** The failure of parsing `text` as a configuration file, as its message. */
const failureOf = (text: string): string => {
  const parsed = parseConfigFile(yaml, "funcpipe.yaml", text, names)
  if (Result.isFailure(parsed)) return parsed.failure.message
  const checked = checkFile(parsed.success, commands)
  assert.isTrue(Result.isFailure(checked), `expected ${JSON.stringify(text)} to be refused`)
  return Result.isFailure(checked) ? checked.failure.message : ""
}

/** A temporary folder with a configuration file holding `text`; its path. */
export const configFile = (text: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-config-" })
    const file = path.join(dir, "funcpipe.yaml")
    yield* fs.writeFileString(file, text)
    return { dir, file }
  })

/** What `funcpipe config COMMAND --json` says, run through `main` with `env`. */
const effective = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const before = (yield* TestConsole.logLines).length
    yield* main(["config", ...args, "--json"], env)
    return JSON.parse(String((yield* TestConsole.logLines).slice(before).join("\n")))
  })

describe("the configuration file", () => {
  it("names the line and the setting of each problem", () => {
    assert.strictEqual(failureOf("serve:\n  port: 80\n  port: 81\n"), "funcpipe.yaml, line 3: Map keys must be unique")
    assert.strictEqual(
      failureOf("serve:\n  prot: 80\n"),
      "funcpipe.yaml, line 2: serve.prot: funcpipe serve has no flag --prot (its flags: funcpipe serve --help)"
    )
    assert.include(failureOf("bogus: 1\n"), "funcpipe.yaml, line 1: bogus: no command has a flag --bogus")
    assert.include(failureOf("port:\n  x: 1\n"), "funcpipe.yaml, line 1: port: is not a command")
    assert.include(failureOf("serve:\n  port:\n    x: 1\n"), "line 2: serve.port: sections do not nest")
    assert.include(failureOf("serve:\n  port: {a: 1}\n"), "line 2: serve.port: sections do not nest")
    assert.include(failureOf("serve:\n  port:\n"), "line 2: serve.port: has no value")
    assert.include(failureOf("- a\n- b\n"), "line 1: the file must be settings")
    assert.include(failureOf("serve:\n  port: [\n"), "funcpipe.yaml, line 3:")
  })

  it("takes `funcpipe <command>:` sections, numbers as written, and one kind of value for a shared setting", () => {
    const parsed = parseConfigFile(
      yaml,
      "funcpipe.yaml",
      "index: a.db\nfuncpipe index:\n  chunk-size: 0256\nserve:\n  token: 12345678901234567890123\n",
      names
    )
    assert.isTrue(Result.isSuccess(parsed))
    if (Result.isSuccess(parsed)) {
      assert.strictEqual(parsed.success.top.get("index")?.value, "a.db")
      assert.strictEqual(parsed.success.sections.get("index")?.get("chunk-size")?.value, "0256")
      assert.strictEqual(parsed.success.sections.get("serve")?.get("token")?.value, "12345678901234567890123")
    }
    assert.include(failureOf("watch: true\n"), "line 1: watch: --watch takes different values in index, serve")
    assert.include(failureOf("funcpipe bogus:\n  x: 1\n"), "funcpipe bogus: is not a command")
    assert.include(failureOf("serve:\n  port: 1\nfuncpipe serve:\n  port: 2\n"), "the serve section is written twice")
  })

  it("the examples in docs/configuration.md are valid configurations", () => {
    const page = readFileSync(fileURLToPath(new URL("../../../docs/configuration.md", import.meta.url)), "utf8")
    const examples = [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!)
    assert.isAtLeast(examples.length, 1)
    for (const example of examples) {
      const parsed = parseConfigFile(yaml, "example.yaml", example, names)
      assert.isTrue(Result.isSuccess(parsed), Result.isFailure(parsed) ? parsed.failure.message : "")
      if (Result.isSuccess(parsed)) assert.isTrue(Result.isSuccess(checkFile(parsed.success, commands)))
    }
  })

  it("reads the commands' flags as its settings, tokens and keys as secrets", () => {
    const serve = settingsOf(commands.find((c) => c.name === "serve")!)
    for (const name of ["index", "host", "port", "rate-limit", "max-in-flight", "log-format", "llm-url"]) {
      assert.isTrue(serve.has(name), name)
    }
    assert.isTrue(serve.get("token")!.secret)
    assert.isFalse(serve.get("port")!.secret)
    assert.isFalse(settingsOf(commands.find((c) => c.name === "ask")!).get("context-tokens")!.secret)
    assert.isTrue(serve.get("writable")!.boolean)
    const index = settingsOf(commands.find((c) => c.name === "index")!)
    assert.isTrue(index.get("keep") !== undefined)
    // Given on the command line: by name, by alias, as --name=value, as --no-name; not after `--`.
    const query = settingsOf(commands.find((c) => c.name === "search")!).get("query")!
    assert.isTrue(givenOn(["-q", "x"], query))
    assert.isTrue(givenOn(["--query=x"], query))
    assert.isFalse(givenOn(["--", "--query", "x"], query))
    assert.isTrue(givenOn(["--no-watch"], index.get("watch")!))
  })

  it("the example in docs/operations is a valid configuration", () => {
    const example = fileURLToPath(new URL("../../../docs/operations/funcpipe.yaml", import.meta.url))
    const parsed = parseConfigFile(yaml, example, readFileSync(example, "utf8"), names)
    assert.isTrue(Result.isSuccess(parsed))
    if (Result.isSuccess(parsed)) {
      assert.isTrue(Result.isSuccess(checkFile(parsed.success, commands)))
      assert.strictEqual(parsed.success.sections.get("serve")?.get("port")?.value, "7700")
    }
  })

  it.effect("the command line wins over the variables, which win over the command's section, then the top level", () =>
    Effect.gen(function* () {
      const { file } = yield* configFile("index: top.db\nstatus:\n  index: section.db\nquery:\n  top-k: 3\n")
      const at = (json: { commands: Record<string, Record<string, { value: unknown; source: string }>> }) =>
        json.commands["status"]!["index"]!
      assert.deepStrictEqual(at(yield* effective(["status", "--config", file])), {
        value: "section.db",
        source: `${file}, line 3`
      })
      const query = (yield* effective(["query", "--config", file])).commands["query"]
      assert.deepStrictEqual(query["index"], { value: "top.db", source: `${file}, line 1` })
      assert.deepStrictEqual(query["top-k"], { value: 3, source: `${file}, line 5` })
      assert.deepStrictEqual(query["mode"] ?? null, null) // no default: the index's model decides
      assert.deepStrictEqual(at(yield* effective(["status", "--config", file], { FUNCPIPE_INDEX: "env.db" })), {
        value: "env.db",
        source: "FUNCPIPE_INDEX"
      })
      assert.deepStrictEqual(
        at(
          yield* effective(["status", "--config", file], { FUNCPIPE_INDEX: "env.db", FUNCPIPE_STATUS_INDEX: "own.db" })
        ),
        { value: "own.db", source: "FUNCPIPE_STATUS_INDEX" }
      )
      // A flag of every command before the command's name: the command's settings still apply.
      const before = (yield* TestConsole.logLines).length
      yield* main(["--log-level", "error", "config", "query", "--json", "--config", file])
      const logged = JSON.parse(String((yield* TestConsole.logLines).slice(before).join("\n")))
      assert.deepStrictEqual(logged.commands["query"]["top-k"], { value: 3, source: `${file}, line 5` })
      // FUNCPIPE_CONFIG names the file as --config does.
      const named = yield* effective(["status"], { FUNCPIPE_CONFIG: file })
      assert.strictEqual(named.file, file)
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )

  it.effect("its settings run the command: the index and top k from the file, the flags still winning", () =>
    Effect.gen(function* () {
      const { dir, file } = yield* configFile("")
      const fs = yield* FileSystem.FileSystem
      const index = `${dir}/index.db`
      yield* run(["index", SAMPLE, "--index", index])
      yield* fs.writeFileString(file, `index: ${index}\nquery:\n  top-k: 2\n  json: true\n`)
      const before = (yield* TestConsole.logLines).length
      yield* main(["query", "Saturn rings moons", "--config", file])
      const answer = JSON.parse(String((yield* TestConsole.logLines)[before]))
      assert.strictEqual(answer.top_k, 2)
      assert.strictEqual(answer.results.length, 2)
      yield* main(["query", "Saturn rings moons", "--config", file, "--top-k", "1"])
      assert.strictEqual(JSON.parse(String((yield* TestConsole.logLines)[before + 1])).results.length, 1)
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )

  it.effect("a bad value is refused before the command runs, naming its line or its variable", () =>
    Effect.gen(function* () {
      const { file } = yield* configFile("serve:\n  port: 99999\n  log-format: yaml\n")
      const error = yield* Effect.flip(main(["serve", "--config", file]))
      assert.strictEqual(error._tag, "ConfigInvalid")
      assert.include(error.message, `${file}, line 2: serve.port: not valid`)
      assert.include(error.message, "a port is 0 to 65535")
      const fromEnv = yield* Effect.flip(main(["status", "--index", "x.db"], { FUNCPIPE_STATUS_JSON: "maybe" }))
      assert.strictEqual(fromEnv.message, "FUNCPIPE_STATUS_JSON: must be true or false")
      // A value that starts with a dash is a value, not a flag.
      const serve = commands.find((c) => c.name === "serve")!
      const line = yield* withSettings(serve, ["serve"], [], undefined, {
        FUNCPIPE_TOKEN: "-abc",
        FUNCPIPE_WRITABLE: "true"
      })
      assert.deepStrictEqual(line, ["serve", "--token=-abc", "--writable"])
      const missing = yield* Effect.flip(main(["status", "--config", `${file}.gone`]))
      assert.strictEqual(missing._tag, "ConfigMissing")
      assert.include(missing.message, "--config names the configuration file")
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )

  it.effect("funcpipe config never shows a token or a key", () =>
    Effect.gen(function* () {
      const { file } = yield* configFile("serve:\n  token: tok-from-the-file\n")
      const shown = yield* effective(["serve", "--config", file])
      assert.deepStrictEqual(shown.commands["serve"]["token"], { value: "<redacted>", source: `${file}, line 2` })
      const fromEnv = yield* effective(["serve", "--config", file], { FUNCPIPE_TOKEN: "tok-from-the-environment" })
      assert.deepStrictEqual(fromEnv.commands["serve"]["token"], { value: "<redacted>", source: "FUNCPIPE_TOKEN" })
      yield* main(["config", "--config", file], { FUNCPIPE_SERVE_TOKEN: "tok-from-the-environment" })
      const printed = (yield* TestConsole.logLines).join("\n")
      assert.notInclude(printed, "tok-from-the-file")
      assert.notInclude(printed, "tok-from-the-environment")
      assert.include(printed, "serve:\n")
      // No token at all is shown as none, not as a hidden one; a rule is shown as written.
      const none = yield* effective(["serve"])
      assert.isUndefined(none.commands["serve"]["token"])
      const { file: rules } = yield* configFile('funcpipe index:\n  keep: "not title ^= Draft"\n')
      const kept = yield* effective(["index", "--config", rules])
      assert.deepStrictEqual(kept.commands["index"]["keep"], {
        value: "not title ^= Draft",
        source: `${rules}, line 2`
      })
      // Nor a password in a URL; and what it prints reads back as YAML.
      const url = yield* effective(["status"], { FUNCPIPE_INDEX: "postgres://fp:hunter2@db/fp" })
      assert.strictEqual(url.commands["status"]["index"].value, "postgres://fp@db/fp")
      const lines = (yield* TestConsole.logLines).length
      yield* main(["config", "ask"], { FUNCPIPE_LLM: "@x/y", FUNCPIPE_ASK_TOP_K: "4" })
      const written = String((yield* TestConsole.logLines).slice(lines).join("\n"))
      const back = yaml.parseDocument(written)
      assert.deepStrictEqual(back.errors, [])
      assert.strictEqual(back.getIn(["ask", "llm"]), "@x/y")
      assert.strictEqual(back.getIn(["ask", "top-k"]), 4)
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )
})
