/** `funcpipe status`: what the index holds and what changed since it was built. */

import { layerIndexStore } from "@funcpipe/pipeline/programs/IndexLocation"
import { indexStatus } from "@funcpipe/pipeline/programs/IndexStatus"
import { Console, Effect } from "effect"
import { Command } from "effect/cli"
import { indexPath, json } from "../flags/Flags.ts"
import { statusJson, statusLines } from "../output/Format.ts"

export const status = Command.make(
  "status",
  { index: indexPath, json },
  Effect.fn("status")(function* (input) {
    const view = yield* indexStatus().pipe(Effect.provide(layerIndexStore(input.index)))
    yield* Console.log(input.json ? statusJson(view) : statusLines(view).join("\n"))
  })
).pipe(
  Command.withDescription("Show the index's settings and counts, and which indexed files changed since the last run")
)
