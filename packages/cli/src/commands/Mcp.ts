/** `funcpipe mcp`: the index's search tools for agents, as an MCP server on stdin and stdout. */

import * as NodeStdio from "@effect/platform-node/NodeStdio"
import { layerIndexStore } from "@funcpipe/pipeline/programs/IndexLocation"
import { layerIndexModel } from "@funcpipe/pipeline/programs/IndexModel"
import { Console, Effect, Layer, Logger, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import { chatChoice, llmFlags } from "../flags/Chat.ts"
import { indexPath, serviceFlags, withServiceFlags } from "../flags/Flags.ts"
import { version } from "../Version.ts"
import { serveStopped } from "./Serve.ts"

export const mcp = Command.make(
  "mcp",
  {
    index: indexPath,
    poll: Flag.Int("poll").pipe(
      Flag.withSchema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "must be 0 or more" }))),
      Flag.withDescription("How often to look for a newer index, in milliseconds (default 1000; 0 never)"),
      Flag.withDefault(1000)
    ),
    ...llmFlags,
    ...serviceFlags
  },
  Effect.fn("mcp")(function* (input) {
    // The MCP modules load only here, so other commands start without them (stdio is loaded by every command).
    const [{ layerStdio }, { LiveIndex }] = yield* Effect.promise(() =>
      Promise.all([import("@funcpipe/server/Mcp"), import("@funcpipe/server/LiveIndex")])
    )
    const chat = yield* chatChoice(input)
    // stdout carries the protocol: every report goes to stderr.
    const report = (line: string) => Console.error(line)
    const index = Layer.provideMerge(withServiceFlags(input)(layerIndexModel), layerIndexStore(input.index))
    yield* report(
      `MCP server for ${input.index} on stdin/stdout: tools search, read, status` +
        `${chat === undefined ? "" : `, ask (${chat.model} at ${chat.baseUrl})`}; stop by closing stdin or with Ctrl-C`
    )
    yield* Layer.launch(
      // An agent started on this machine by its user reads whole documents, as the user can.
      layerStdio({ version, chat: chat?.layer, wholeDocuments: true }).pipe(
        Layer.provide(LiveIndex.layer({ pollMillis: input.poll, report })),
        Layer.provide(NodeStdio.layer),
        Layer.provide(index)
      )
    ).pipe(
      // Logs too go to stderr: a log line on stdout would break the agent's reading of the protocol.
      Effect.provideService(Logger.LogToStderr, true),
      // The agent closing stdin (or Ctrl-C) is how the server ends normally: exit 0, as `serve` does when stopped.
      Effect.onInterrupt(() => Effect.sync(() => (serveStopped.value = true)))
    )
  })
).pipe(
  Command.withDescription(
    "Serve the index's tools (search, read, status; ask with --llm) to an agent over MCP on stdin and stdout"
  ),
  Command.withExamples([
    { command: "funcpipe mcp --index ~/notes/.funcpipe/index.db", description: "What an agent's MCP config runs" }
  ])
)
