/** `funcpipe query`: answer a query from the persistent index. */

import { DEFAULT_TOP_K, TopK } from "@funcpipe/domain/Query"
import type { Rule } from "@funcpipe/domain/Rule"
import { layerIndexStore } from "@funcpipe/pipeline/programs/IndexLocation"
import { layerIndexModel } from "@funcpipe/pipeline/programs/IndexModel"
import { queryIndex } from "@funcpipe/pipeline/programs/QueryIndex"
import { isPostgresUrl } from "@funcpipe/pipeline/store/postgres/PgUrl"
import { Console, Effect, Layer, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import {
  annFlags,
  indexPath,
  json,
  queryFlags,
  queryOptionsFrom,
  ruleOption,
  serviceFlags,
  where,
  withServiceFlags
} from "../flags/Flags.ts"
import { eitherText, queryFlag, queryText, STDIN_HINT } from "../flags/QueryText.ts"
import { resultLines, resultsJson } from "../output/Format.ts"
import { ResultTerminal, resultViewOf } from "../output/Terminal.ts"

/** `--top-k N`, default `DEFAULT_TOP_K`. */
export const topK = Flag.Int("top-k").pipe(
  Flag.withSchema(TopK),
  Flag.withMetavar("N"),
  Flag.withDescription(`How many results to show (at least 1; default ${DEFAULT_TOP_K})`),
  Flag.withDefault(DEFAULT_TOP_K)
)

const Shards = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 4096 }, { message: "1 to 4096 shards" }))

/** What a sharded query cannot do yet: each needs the whole index in one place. */
export class ShardedQueryUnsupported extends Schema.TaggedError<ShardedQueryUnsupported>()("ShardedQueryUnsupported", {
  reason: Schema.String
}) {
  override get message(): string {
    return `--shards cannot be used ${this.reason}`
  }
}

/** `query --shards N`: an entry point of the cluster; its merged answer has the shape of every other query's. */
const queryCluster = Effect.fn("query.cluster")(function* (
  text: string,
  shards: number,
  input: Parameters<typeof queryOptionsFrom>[0] &
    Parameters<typeof withServiceFlags>[0] & {
      readonly index: string
      readonly topK: number
      readonly json: boolean
      readonly where: Option.Option<Rule>
    }
) {
  const options = queryOptionsFrom(input)
  if (!isPostgresUrl(input.index)) {
    return yield* new ShardedQueryUnsupported({ reason: "without a postgres:// --index" })
  }
  if (options.explain || options.expand !== undefined || options.group === "doc") {
    return yield* new ShardedQueryUnsupported({ reason: "with --explain, --expand or --group doc" })
  }
  const { layerEntry } = yield* Effect.promise(() => import("@funcpipe/server/Cluster"))
  const { queryShards } = yield* Effect.promise(() => import("@funcpipe/pipeline/programs/ShardedQuery"))
  const model = Layer.provide(withServiceFlags(input)(layerIndexModel), layerIndexStore(input.index))
  return yield* queryShards(text, input.topK, { shards, ...options, ...ruleOption("where", input.where) }).pipe(
    Effect.provide(Layer.merge(layerEntry({ index: input.index }), model))
  )
})

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
    ...annFlags,
    where,
    index: indexPath,
    shards: Flag.Int("shards").pipe(
      Flag.withSchema(Shards),
      Flag.withMetavar("N"),
      Flag.withDescription(
        "Ask the N shards hosted by `funcpipe serve --cluster` runners instead of reading the index here " +
          "(a PostgreSQL --index; the same answer as without, to the bit)"
      ),
      Flag.optional
    ),
    ...serviceFlags,
    json
  },
  Effect.fn("query")(function* (input) {
    const text = yield* queryText(yield* eitherText(input.text, input.query))
    const options = {
      ...queryOptionsFrom(input),
      // One query in a process of its own walks the graphs only where a walk reads just the rows it reaches (paged
      // graphs over codes, --vector-codes i8); otherwise it scans exactly, which is then the quicker.
      exact: input.exact,
      once: true,
      ...ruleOption("where", input.where),
      // --raw shows the cleaned text: the passages need not be worked out (--json has them still).
      display: !input.raw || input.json
    }
    // Sharded or not, one answer shape and one way of printing it.
    const answer = Option.isSome(input.shards)
      ? yield* queryCluster(text, input.shards.value, input)
      : yield* queryIndex(text, input.topK, options).pipe(
          Effect.provide(Layer.provideMerge(withServiceFlags(input)(layerIndexModel), layerIndexStore(input.index)))
        )
    const terminal = yield* ResultTerminal
    if (answer.query.note !== undefined) yield* Console.error(`note: ${answer.query.note}`)
    yield* Console.log(
      input.json ? resultsJson(answer) : resultLines(answer, resultViewOf(terminal, input.raw, answer)).join("\n")
    )
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
    {
      command: "funcpipe query \"dark matter\" --where 'categories = astro-ph.GA'",
      description: "Search one category"
    },
    {
      command: 'funcpipe query "dark matter" --index postgres://fp@db/fp --shards 8',
      description: "Ask 8 shards on cluster runners"
    }
  ])
)
