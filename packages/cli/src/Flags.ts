/** Flags shared by several commands: the chunking settings and the output switches. */
import { Effect, Option } from "effect"
import { Flag } from "effect/cli"
import { ChunkerConfig, ChunkSize, Overlap, TailPolicy } from "@funcpipe/domain/Config"
import { decodeAs } from "@funcpipe/domain/Decode"

/** `--chunk-size`, `--overlap`, `--tail`: how bodies are cut into chunks. */
export const chunkingFlags = {
  chunkSize: Flag.Int("chunk-size").pipe(
    Flag.withSchema(ChunkSize),
    Flag.withDescription("Length of each chunk in Unicode code points (at least 1)"),
    Flag.withDefault(ChunkerConfig.default.chunkSize)
  ),
  overlap: Flag.Int("overlap").pipe(
    Flag.withSchema(Overlap),
    Flag.withDescription("Code points each chunk shares with the next (0 or more, below --chunk-size)"),
    Flag.withDefault(ChunkerConfig.default.overlap)
  ),
  tail: Flag.Literals("tail", TailPolicy.literals).pipe(
    Flag.withDescription("The last, shorter chunk: emit_short keeps it, drop discards it, pad fills it with U+0000"),
    Flag.withDefault(ChunkerConfig.default.tailPolicy)
  )
}

/** Where an index lives unless `--index` says otherwise: under the working directory. */
export const DEFAULT_INDEX = ".funcpipe/index.db"

const decodeChunker = decodeAs(ChunkerConfig, "chunking flags")

/** Checks the flags together (the overlap must be below the chunk size). */
export const chunkerFrom = (flags: {
  readonly chunkSize: number
  readonly overlap: number
  readonly tail: TailPolicy
}) => Effect.fromResult(decodeChunker({ chunkSize: flags.chunkSize, overlap: flags.overlap, tailPolicy: flags.tail }))

/** `--json`: machine-readable output on stdout. */
export const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Print the results as JSON (the format is stable; see the README)"),
  Flag.withDefault(false)
)

/** `--out FILE`, optional. */
export const out = Flag.String("out").pipe(
  Flag.withDescription("Write to this file (atomically: it holds the old content or the new, never a mix) instead of stdout"),
  Flag.optional
)

/** `--index PATH`: where the index file lives. */
export const indexPath = Flag.String("index").pipe(
  Flag.withDescription("The index file to use"),
  Flag.withDefault(DEFAULT_INDEX)
)

export type { Option }
