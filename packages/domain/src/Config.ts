/** The cleaner and chunker settings, with every cross-field rule checked at decode. */
import { Schema } from "effect"

/** One cleaning step; rules apply to the body in the order given. */
export const CleanRule = Schema.Literals(["strip", "lower", "upper", "collapse_ws", "replace_newlines"])
export type CleanRule = typeof CleanRule.Type

/** The ordered clean rules. The reference default is `strip, lower, collapse_ws`. */
export class CleanerConfig extends Schema.Class<CleanerConfig>("domain/CleanerConfig")({
  rules: Schema.Array(CleanRule)
}) {
  static readonly default = new CleanerConfig({ rules: ["strip", "lower", "collapse_ws"] })
}

/** Window length in code points. */
export const ChunkSize = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.brand("ChunkSize"))
export type ChunkSize = typeof ChunkSize.Type

/** Code points shared by consecutive windows; always below the chunk size. */
export const Overlap = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).pipe(Schema.brand("Overlap"))
export type Overlap = typeof Overlap.Type

/**
 * What to do with a last window shorter than the chunk size: `emit_short` keeps it, `drop` discards it,
 * `pad` fills it with U+0000 up to the chunk size.
 */
export const TailPolicy = Schema.Literals(["emit_short", "drop", "pad"])
export type TailPolicy = typeof TailPolicy.Type

/** Windows of `chunkSize` code points advancing by `chunkSize - overlap`. */
export class ChunkerConfig extends Schema.Class<ChunkerConfig>("domain/ChunkerConfig")(
  Schema.Struct({ chunkSize: ChunkSize, overlap: Overlap, tailPolicy: TailPolicy }).check(
    Schema.makeFilter((c: { readonly chunkSize: number; readonly overlap: number }) =>
      c.overlap < c.chunkSize
        ? undefined
        : { path: ["overlap"], issue: `overlap (${c.overlap}) must be smaller than the chunk size (${c.chunkSize})` }
    )
  )
) {
  static readonly default = new ChunkerConfig({
    chunkSize: ChunkSize.make(512),
    overlap: Overlap.make(0),
    tailPolicy: "emit_short"
  })
}
