/** `funcpipe search`: index paths in memory and answer one query. */
import { Console, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { TopK } from "@funcpipe/domain/Query"
import { searchPaths } from "@funcpipe/pipeline/programs/Search"
import { chunkerFrom, chunkingFlags, json } from "../Flags.ts"
import { resultLines, resultsJson, summaryLines } from "../Format.ts"

export const paths = Argument.String("paths").pipe(
  Argument.withDescription("Files or directories to read: .md/.txt files, directories of them, .csv or .jsonl files"),
  Argument.atLeast(1)
)

export const search = Command.make(
  "search",
  {
    paths,
    query: Flag.String("query").pipe(Flag.withAlias("q"), Flag.withDescription("The text to search for")),
    topK: Flag.Int("top-k").pipe(
      Flag.withSchema(TopK),
      Flag.withDescription("How many results to show (at least 1)"),
      Flag.withDefault(TopK.make(3))
    ),
    ...chunkingFlags,
    json
  },
  Effect.fn("search")(function*(input) {
    const chunker = yield* chunkerFrom(input)
    const { query, results, summary } = yield* searchPaths(input.paths, input.query, input.topK, { chunker })
    for (const line of summaryLines(summary)) yield* Console.error(line)
    yield* Console.log(input.json ? resultsJson(query, results) : resultLines(results).join("\n"))
  })
).pipe(
  Command.withDescription("Read documents, index them in memory and print the chunks that best match a query"),
  Command.withExamples([
    { command: "funcpipe search sample --query \"The Moon has no light of its own.\"", description: "Search the sample corpus" },
    { command: "funcpipe search notes/ papers.csv -q \"graph neural networks\" --top-k 5 --json", description: "JSON output" }
  ])
)
