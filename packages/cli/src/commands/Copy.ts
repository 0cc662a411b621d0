/** `funcpipe copy`: move an index between a SQLite file and a PostgreSQL database, either way. */

import { copyIndex } from "@funcpipe/pipeline/programs/CopyIndex"
import { layerIndexStore, showIndex } from "@funcpipe/pipeline/programs/IndexLocation"
import { IndexStore } from "@funcpipe/pipeline/store/IndexStore"
import { Console, Context, Effect, Layer } from "effect"
import { Command, Flag } from "effect/cli"
import { Progress } from "../output/Progress.ts"

/** The store at `index`, open until the command's scope closes. */
const storeAt = (index: string) =>
  Effect.map(Layer.build(layerIndexStore(index)), (context) => Context.get(context, IndexStore))

export const copy = Command.make(
  "copy",
  {
    from: Flag.String("from").pipe(
      Flag.withMetavar("PATH|URL"),
      Flag.withDescription("The index to copy: a SQLite file or a postgres:// URL")
    ),
    to: Flag.String("to").pipe(
      Flag.withMetavar("PATH|URL"),
      Flag.withDescription("Where to copy it: a SQLite file or a postgres:// URL (empty unless --replace)")
    ),
    replace: Flag.Boolean("replace").pipe(
      Flag.withDescription("Overwrite an index the destination already holds"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("copy")(function* (input) {
    const progress = yield* Progress
    const report = yield* Effect.scoped(
      Effect.gen(function* () {
        const from = yield* storeAt(input.from)
        const to = yield* storeAt(input.to)
        return yield* copyIndex(from, to, {
          replace: input.replace,
          progress: (done, total) => progress.update("copying documents", done, total)
        }).pipe(Effect.ensuring(progress.finish))
      })
    )
    yield* Console.log(
      `copied ${report.documents} documents and ${report.chunks} chunks from ${showIndex(input.from)} to ` +
        `${showIndex(input.to)} (${(report.elapsedMillis / 1000).toFixed(1)} s); nothing was embedded again`
    )
  })
).pipe(
  Command.withDescription(
    "Copy an index between stores (a SQLite file, a PostgreSQL database) with its settings and vectors, " +
      "so it answers exactly as the original"
  ),
  Command.withExamples([
    {
      command: 'funcpipe copy --from .funcpipe/index.db --to "$FUNCPIPE_INDEX"',
      description: "Move a local index into the team's database (FUNCPIPE_INDEX holds its postgres:// URL)"
    },
    { command: 'funcpipe copy --from "$FUNCPIPE_INDEX" --to backup.db', description: "Take a copy of it home" }
  ])
)
