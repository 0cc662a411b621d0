/** Spans of a cleaned body (`ChunkDraft`) and the same spans with their embedding (`Chunk`). */
import { Schema } from "effect"
import { DocId } from "./Document.ts"
import { Embedding } from "./Embedding.ts"

/** A position in a cleaned body, counted in Unicode code points (never UTF-16 units). */
export const Offset = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).pipe(Schema.brand("Offset"))
export type Offset = typeof Offset.Type

const spanFields = {
  docId: DocId,
  start: Offset,
  end: Offset,
  text: Schema.String
}

const orderedSpan = Schema.makeFilter((span: { readonly start: number; readonly end: number }) =>
  span.start <= span.end ? undefined : { path: ["end"], issue: `end (${span.end}) is before start (${span.start})` }
)

/** The window `[start, end)` of a document's cleaned body, with its text. */
export class ChunkDraft extends Schema.Class<ChunkDraft>("domain/ChunkDraft")(
  Schema.Struct(spanFields).check(orderedSpan)
) {}

/** A draft with its embedding: what an index stores and retrieval scores. */
export class Chunk extends Schema.Class<Chunk>("domain/Chunk")(
  Schema.Struct({ ...spanFields, embedding: Embedding }).check(orderedSpan)
) {}
