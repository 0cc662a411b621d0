/** The `funcpipe` command tree. Handlers only orchestrate: stages do the work, services do the I/O. */
import { Command } from "effect/cli"
import { chunks } from "./commands/Chunks.ts"
import { search } from "./commands/Search.ts"

export const cli = Command.make("funcpipe").pipe(
  Command.withDescription("FuncPipe: turn documents into ranked answers (read, clean, chunk, embed, retrieve)"),
  Command.withSubcommands([search, chunks])
)

export const version = "0.1.0"
