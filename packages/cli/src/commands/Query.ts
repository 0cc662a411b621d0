/** `funcpipe query`: answer a query from the persistent index. */

import { TopK } from "@funcpipe/domain/Query"
import { queryIndex } from "@funcpipe/pipeline/programs/QueryIndex"
import { layerIndexStore } from "@funcpipe/pipeline/services/IndexLocation"
import { layerIndexModel } from "@funcpipe/pipeline/services/Models"
import { Console, Effect, Layer } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import {
  indexPath,
  json,
  queryFlags,
  queryOptionsFrom,
  ruleOption,
  serviceFlags,
  where,
  withServiceFlags
} from "../Flags.ts"
import { resultLines, resultsJson } from "../Format.ts"
import { eitherText, queryFlag, queryText, STDIN_HINT } from "../QueryText.ts"

/** `--top-k N`, default 3. */
export const topK = Flag.Int("top-k").pipe(
  Flag.withSchema(TopK),
  Flag.withMetavar("N"),
  Flag.withDescription("How many results to show (at least 1; default 3)"),
  Flag.withDefault(TopK.make(3))
)

export const query = Command.make(
  "query",
  {
    text: Argument.String("text").pipe(
      Argument.withDescription(`The text to search for, ${STDIN_HINT}; or give it with --query, as search takes it`),
      Argument.optional
    ),
    query: Flag.optional(queryFlag),
    topK,
    ...queryFlags,
    where,
    index: indexPath,
    ...serviceFlags,
    json
  },
  Effect.fn("query")(function* (input) {
    const text = yield* queryText(yield* eitherText(input.text, input.query))
    const options = { ...queryOptionsFrom(input), ...ruleOption("where", input.where) }
    const answer = yield* queryIndex(text, input.topK, options).pipe(
      Effect.provide(Layer.provideMerge(withServiceFlags(input)(layerIndexModel), layerIndexStore(input.index)))
    )
    yield* Console.log(input.json ? resultsJson(answer) : resultLines(answer).join("\n"))
  })
).pipe(
  Command.withDescription("Print the indexed chunks that best match a query"),
  Command.withExamples([
    {
      command: 'funcpipe query "how far away is the moon"',
      description: "Query the index in .funcpipe (lexical for local-sha256)"
    },
    {
      command: 'funcpipe query "saturn probe" --mode hybrid --explain',
      description: "Fuse both rankings and show why"
    },
    { command: "funcpipe query - < question.txt", description: "Read a long query from a file" },
    { command: 'funcpipe query -q "saturn probe" --top-k 5', description: "The text as a flag, as search takes it" },
    { command: "funcpipe query \"dark matter\" --where 'categories = astro-ph.GA'", description: "Search one category" }
  ])
)
