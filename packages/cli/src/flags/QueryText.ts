/** The query text a command was given: the argument itself, or stdin when the argument is `-`. */

import { concatBytes } from "@funcpipe/pipeline/base/Bytes"
import { systemReason } from "@funcpipe/pipeline/platform/SystemReason"
import { Effect, Option, Schema, Stdio, Stream } from "effect"
import { Flag } from "effect/cli"

/** The query was to come from stdin (`-`), but stdin could not be read as text. */
export class StdinUnreadable extends Schema.TaggedError<StdinUnreadable>()("StdinUnreadable", {
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot read the query from stdin: ${this.reason}`
  }
}

/** What to write in help texts about `-`. */
export const STDIN_HINT = "or - to read it from stdin (for a query too long for the command line)"

/** `--query TEXT` (`-q`): how `search` takes its query, and `query` too, besides its argument. */
export const queryFlag = Flag.String("query").pipe(
  Flag.withMetavar("TEXT"),
  Flag.withAlias("q"),
  Flag.withDescription(`The text to search for, ${STDIN_HINT}`)
)

/** `query` was given its text twice (argument and `--query`) or not at all. */
export class QueryTextMissing extends Schema.TaggedError<QueryTextMissing>()("QueryTextMissing", {
  twice: Schema.Boolean
}) {
  override get message(): string {
    return this.twice
      ? "the query text was given twice (as an argument and with --query); give it once"
      : 'no query text: give it as the argument (funcpipe query "how far is the moon") or with --query'
  }
}

/** The one query text of an optional argument and an optional `--query`. */
export const eitherText = (argument: Option.Option<string>, flag: Option.Option<string>) =>
  Option.isSome(argument) && Option.isSome(flag)
    ? Effect.fail(new QueryTextMissing({ twice: true }))
    : Option.match(
        Option.orElse(argument, () => flag),
        {
          onNone: () => Effect.fail(new QueryTextMissing({ twice: false })),
          onSome: Effect.succeed
        }
      )

/**
 * `text` as given, or, when it is `-`, everything on stdin decoded as UTF-8 (a byte order mark is dropped). A command
 * line is limited to a few hundred kilobytes by the system; stdin is not.
 */
export const queryText = Effect.fn("queryText")(function* (text: string) {
  if (text !== "-") return text
  const stdio = yield* Stdio.Stdio
  const pieces = yield* Stream.runCollect(stdio.stdin).pipe(
    Effect.mapError((error) => new StdinUnreadable({ reason: systemReason(error) }))
  )
  const bytes = concatBytes([...pieces])
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes)
  } catch {
    return yield* new StdinUnreadable({ reason: "it is not UTF-8 text" })
  }
})
