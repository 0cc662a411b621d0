/** `funcpipe chunks`: write every chunk with its embedding as JSON Lines. */

import { writeFileAtomic } from "@funcpipe/pipeline/platform/AtomicFile"
import { ingest } from "@funcpipe/pipeline/programs/Ingest"
import { Console, Effect, Option } from "effect"
import { Command } from "effect/cli"
import { chunkerFrom, chunkingFlags, keep, modelFlags, modelLayer, out, ruleOption } from "../flags/Flags.ts"
import { chunksJsonl, summaryLines } from "../output/Format.ts"
import { paths } from "./Search.ts"

export const chunks = Command.make(
  "chunks",
  { paths, out, ...modelFlags, ...chunkingFlags, keep },
  Effect.fn("chunks")(function* (input) {
    const chunker = yield* chunkerFrom(input)
    const { chunks, summary } = yield* ingest(input.paths, { chunker, ...ruleOption("keep", input.keep) }).pipe(
      Effect.provide(modelLayer(input))
    )
    const body = chunksJsonl(chunks)
    if (Option.isSome(input.out)) yield* writeFileAtomic(input.out.value, body)
    else if (body.length > 0) yield* Console.log(body.slice(0, -1))
    for (const line of summaryLines(summary)) yield* Console.error(line)
  })
).pipe(
  Command.withDescription(
    "Read, clean, chunk and embed documents and print one JSON object per chunk: doc_id, start, end, text, embedding"
  ),
  Command.withExamples([
    {
      command: "funcpipe chunks sample --chunk-size 200 --overlap 20 --out chunks.jsonl",
      description: "Write chunks to a file"
    }
  ])
)
