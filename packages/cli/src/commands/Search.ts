/** `funcpipe search`: index paths in memory and answer one query. */

import { searchPaths } from "@funcpipe/pipeline/programs/Search"
import { Console, Effect } from "effect"
import { Argument, Command } from "effect/cli"
import {
  analyzerFlags,
  analyzerFrom,
  chunkerFrom,
  chunkingFlags,
  json,
  keep,
  modelFlags,
  modelLayer,
  queryFlags,
  queryOptionsFrom,
  ruleOption,
  where
} from "../flags/Flags.ts"
import { queryFlag, queryText } from "../flags/QueryText.ts"
import { resultLines, searchJson, searchSummaryLine, skipLines } from "../output/Format.ts"
import { ResultTerminal, resultViewOf } from "../output/Terminal.ts"
import { topK } from "./Query.ts"

export const paths = Argument.String("paths").pipe(
  Argument.withDescription("Files or directories to read: .md/.txt files, directories of them, .csv or .jsonl files"),
  Argument.atLeast(1)
)

export const search = Command.make(
  "search",
  {
    paths,
    query: queryFlag,
    topK,
    ...modelFlags,
    ...queryFlags,
    ...chunkingFlags,
    ...analyzerFlags,
    keep,
    where,
    json
  },
  Effect.fn("search")(function* (input) {
    const chunker = yield* chunkerFrom(input)
    const text = yield* queryText(input.query)
    const answer = yield* searchPaths(input.paths, text, input.topK, {
      chunker,
      analyzer: analyzerFrom(input).analyzer,
      ...queryOptionsFrom(input),
      display: !input.raw || input.json,
      ...ruleOption("keep", input.keep),
      ...ruleOption("where", input.where)
    }).pipe(Effect.provide(modelLayer(input)))
    for (const line of skipLines(answer.report.skipped)) yield* Console.error(line)
    yield* Console.error(searchSummaryLine(answer.report))
    const terminal = yield* ResultTerminal
    if (answer.query.note !== undefined) yield* Console.error(`note: ${answer.query.note}`)
    yield* Console.log(
      input.json
        ? searchJson(answer, answer.report)
        : resultLines(answer, resultViewOf(terminal, input.raw, answer)).join("\n")
    )
  })
).pipe(
  Command.withDescription(
    "Read documents, index them in memory (no file) and print the chunks that best match a query"
  ),
  Command.withExamples([
    {
      command: 'funcpipe search sample --query "The Moon has no light of its own."',
      description: "Search the sample corpus"
    },
    {
      command: 'funcpipe search notes/ papers.csv -q "graph neural networks" --top-k 5 --json',
      description: "JSON output"
    }
  ])
)
