/**
 * What users see, kept as a record: the CLI's output and error lines, and the HTTP API's statuses and bodies, for a
 * fixed set of commands, requests and bad inputs over the sample corpus. A change of layout must leave every one of
 * them as it is; a change of behaviour shows here first, and updating the record (`vitest -u`) is then a decision.
 */

import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { layerSqlite } from "@funcpipe/pipeline/store/sqlite/SqliteIndexStore"
import { layer as serverLayer } from "@funcpipe/server/Server"
import { Effect, Exit, FileSystem, Layer, Path } from "effect"
import { CliOutput, Command } from "effect/cli"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpServer } from "effect/http"
import { TestConsole } from "effect/testing"
import { cli, version } from "../src/Cli.ts"
import { presenter, reportFailure } from "../src/output/Report.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal, CliOutput.layerPresenter(presenter)).pipe(
  Layer.provideMerge(NodeServices.layer)
)
const run = Command.runWith(cli, { version })
const sample = fileURLToPath(new URL("../../../sample", import.meta.url))

/** Makes a transcript independent of where and when it ran: temporary paths and durations become placeholders. */
const normalize = (text: string, dir: string): string =>
  text
    .replaceAll(dir, "<dir>")
    .replaceAll(sample, "<sample>")
    .replace(/\(\d+(\.\d+)? (s|ms)\)/g, "(<time>)")
    .replace(/"(seconds|elapsed_ms|took_ms|ms)":\s*[\d.]+/g, '"$1":<time>')

/** Runs one command line and records its exit, stdout and stderr as the entry point prints them. */
const transcript = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const logs = (yield* TestConsole.logLines).length
    const errors = (yield* TestConsole.errorLines).length
    const exit = yield* Effect.exit(run(args))
    if (Exit.isFailure(exit)) yield* reportFailure(exit.cause)
    const out = (yield* TestConsole.logLines).slice(logs).map(String).join("\n")
    const err = (yield* TestConsole.errorLines).slice(errors).map(String).join("\n")
    return [`$ funcpipe ${args.join(" ")}`, `exit: ${Exit.isSuccess(exit) ? 0 : 1}`, out, err ? `stderr: ${err}` : ""]
      .filter((line) => line !== "")
      .join("\n")
  })

const workspace = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-answers-" })
  return { dir, index: path.join(dir, "index.db") }
})

describe("answers kept as a record", () => {
  it.effect("CLI: results, JSON, explanations, rules and error lines over the sample corpus", () =>
    Effect.gen(function* () {
      const { dir, index } = yield* workspace
      const ix = ["--index", index]
      const lines: Array<ReadonlyArray<string>> = [
        ["index", sample, ...ix],
        ["index", sample, ...ix, "--json"],
        ["status", ...ix],
        ["status", ...ix, "--json"],
        ["query", "Which probe reached interstellar space?", ...ix],
        ["query", "moon", ...ix, "--json", "--top-k", "4"],
        ["query", "saturn probe", ...ix, "--mode", "hybrid", "--explain"],
        ["query", "saturn probe", ...ix, "--mode", "hybrid", "--fusion", "rrf", "--json"],
        ["query", "polaris north star", ...ix, "--mode", "vector", "--top-k", "2"],
        ["query", "dark light", ...ix, "--explain", "--k1", "1.2", "--b", "0.75"],
        ["query", "planet", ...ix, "--where", `source under ${sample}/sky`, "--top-k", "5"],
        ["query", "saturn", ...ix, "--where", "categories = probe", "--json"],
        ["query", "zzzz-no-such-word", ...ix],
        ["search", sample, "--query", "polaris", "--top-k", "2"],
        ["search", sample, "--query", "launch", "--json", "--chunk-size", "40", "--overlap", "10"],
        ["chunks", `${sample}/missions.csv`],
        // Bad input: one line each, nothing written.
        ["query", "moon", ...ix, "--top-k", "0"],
        ["query", "moon", ...ix, "--mode", "fuzzy"],
        ["query", "moon", ...ix, "--where", "title ^^ y"],
        ["query", "moon", ...ix, "--b", "2"],
        ["query", "   ", ...ix],
        ["query", "moon", "--index", `${dir}/missing/index.db`],
        ["query", "moon", ...ix, "--shards", "2"],
        ["index", `${dir}/no-such-folder`, ...ix],
        ["search", sample, "--query", "moon", "--chunk-size", "10", "--overlap", "10"],
        ["index", sample, ...ix, "--model", "no-such-model"],
        ["status", "--index", `${dir}/missing/index.db`],
        // Results grouped by document, over chunks short enough that documents have several.
        ["index", sample, "--index", `${dir}/short.db`, "--chunk-size", "60", "--overlap", "10"],
        ["query", "polaris star", "--index", `${dir}/short.db`, "--top-k", "3", "--group", "doc"],
        ["query", "polaris star", "--index", `${dir}/short.db`, "--top-k", "2", "--group", "doc", "--json"],
        ["query", "polaris star", "--index", `${dir}/short.db`, "--group", "document"]
      ]
      const record: Array<string> = []
      for (const args of lines) record.push(normalize(yield* transcript(args), dir))
      yield* Effect.promise(() => expect(`${record.join("\n\n")}\n`).toMatchFileSnapshot("./records/cli-answers.txt"))
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("HTTP: statuses and bodies of queries and bad requests", () =>
    Effect.gen(function* () {
      const { dir, index } = yield* workspace
      yield* run(["index", sample, "--index", index])
      const requests: ReadonlyArray<readonly ["GET" | "POST", string, unknown?]> = [
        ["GET", "/healthz"],
        ["GET", "/v1/status"],
        ["POST", "/v1/query", { text: "Which probe reached interstellar space?" }],
        ["POST", "/v1/query", { text: "saturn probe", mode: "hybrid", top_k: 4, explain: true }],
        ["POST", "/v1/query", { text: "planet", where: `source under ${sample}/sky`, top_k: 5 }],
        ["POST", "/v1/query", { text: "polaris", mode: "vector", top_k: 2 }],
        ["POST", "/v1/query/batch", { queries: [{ text: "moon" }, { text: "jupiter", top_k: 1 }] }],
        ["GET", "/v1/documents/sky%2Fpolaris.md"],
        ["GET", "/v1/documents/no-such-doc"],
        ["POST", "/v1/query", { text: "moon", top_k: 0 }],
        ["POST", "/v1/query", { text: "   " }],
        ["POST", "/v1/query", { text: "moon", mode: "fuzzy" }],
        ["POST", "/v1/query", { text: "moon", where: "title ^^ y" }],
        ["POST", "/v1/query", { text: "moon", where: { no: "rule" } }],
        ["POST", "/v1/query", "not json"],
        ["GET", "/v1/nowhere"]
      ]
      const record = yield* Effect.gen(function* () {
        const http = yield* HttpClient.HttpClient
        const server = yield* HttpServer.HttpServer
        const base = HttpServer.formatAddress(server.address)
        const out: Array<string> = []
        for (const [method, path, body] of requests) {
          let request = HttpClientRequest.make(method)(`${base}${path}`)
          if (body !== undefined) {
            request =
              typeof body === "string"
                ? HttpClientRequest.bodyText(request, body, "application/json")
                : HttpClientRequest.bodyJsonUnsafe(request, body)
          }
          const response = yield* http.execute(request)
          const text = yield* response.text
          out.push(`${method} ${path} ${body === undefined ? "" : JSON.stringify(body)}\n${response.status} ${text}`)
        }
        return out
      }).pipe(
        Effect.provide(
          Layer.mergeAll(
            serverLayer({
              host: "127.0.0.1",
              port: 0,
              token: undefined,
              writable: false,
              maxBodyBytes: 1_048_576,
              pollMillis: 0,
              report: () => Effect.void
            }),
            FetchHttpClient.layer
          ).pipe(Layer.provide(Layer.mergeAll(layerSqlite(index), Embedder.layerLocalSha256, NodeServices.layer)))
        )
      )
      const text = normalize(record.join("\n\n"), dir).replace(/"(updated_at|created_at)":"[^"]*"/g, '"$1":"<time>"')
      yield* Effect.promise(() => expect(`${text}\n`).toMatchFileSnapshot("./records/http-answers.txt"))
    }).pipe(Effect.provide(TestLayer))
  )
})
