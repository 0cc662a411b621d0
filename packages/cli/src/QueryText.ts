/** The query text a command was given: the argument itself, or stdin when the argument is `-`. */
import { Effect, Schema, Stdio, Stream } from "effect"
import { systemReason } from "@funcpipe/pipeline/services/SystemReason"
import { concatBytes } from "@funcpipe/pipeline/stages/ByteReader"

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

/**
 * `text` as given, or, when it is `-`, everything on stdin decoded as UTF-8 (a byte order mark is dropped). A command
 * line is limited to a few hundred kilobytes by the system; stdin is not.
 */
export const queryText = Effect.fn("queryText")(function*(text: string) {
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
