/** The `funcpipe` command tree. Handlers only orchestrate: stages do the work, services do the I/O. */
import { Command } from "effect/cli"
import { chunks } from "./commands/Chunks.ts"
import { evaluate } from "./commands/Eval.ts"
import { index } from "./commands/Index.ts"
import { query } from "./commands/Query.ts"
import { search } from "./commands/Search.ts"
import { serve } from "./commands/Serve.ts"
import { status } from "./commands/Status.ts"

export const cli = Command.make("funcpipe").pipe(
  Command.withDescription("FuncPipe: turn documents into ranked answers (read, clean, chunk, embed, retrieve)"),
  Command.withSubcommands([index, query, status, serve, search, chunks, evaluate])
)

export const version = "0.1.0"
