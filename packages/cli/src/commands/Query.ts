/** `funcpipe query`: answer a query from the persistent index. */
import { Console, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { TopK } from "@funcpipe/domain/Query"
import { queryIndex } from "@funcpipe/pipeline/programs/QueryIndex"
import { IndexStore } from "@funcpipe/pipeline/services/IndexStore"
import { indexPath, json } from "../Flags.ts"
import { resultLines, resultsJson } from "../Format.ts"

export const query = Command.make(
  "query",
  {
    text: Argument.String("text").pipe(Argument.withDescription("The text to search for")),
    topK: Flag.Int("top-k").pipe(
      Flag.withSchema(TopK),
      Flag.withDescription("How many results to show (at least 1)"),
      Flag.withDefault(TopK.make(3))
    ),
    index: indexPath,
    json
  },
  Effect.fn("query")(function*(input) {
    const { query, results } = yield* queryIndex(input.text, input.topK).pipe(
      Effect.provide(IndexStore.layerSqlite(input.index))
    )
    yield* Console.log(input.json ? resultsJson(query, results) : resultLines(results).join("\n"))
  })
).pipe(
  Command.withDescription("Print the indexed chunks that best match a query"),
  Command.withExamples([
    { command: "funcpipe query \"The Moon has no light of its own.\"", description: "Query the index in .funcpipe" }
  ])
)
