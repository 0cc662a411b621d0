/** Documents as they enter the pipeline (`RawDoc`) and after cleaning (`CleanDoc`). */
import { Schema } from "effect"

/** Identifies a document: any non-empty string, compared by Unicode code point. */
export const DocId = Schema.String.check(Schema.isNonEmpty({ message: "a document id must not be empty" })).pipe(
  Schema.brand("DocId")
)
export type DocId = typeof DocId.Type

/** A body or title that encodes to UTF-8 exactly: no lone surrogate halves. */
export const WellFormedText = Schema.String.check(
  Schema.makeFilter((s: string) => s.isWellFormed() || "text contains a lone UTF-16 surrogate")
)

const documentFields = {
  docId: DocId,
  title: WellFormedText,
  body: WellFormedText,
  /** The source's category labels as written; `null` when the source has none (files, short CSV rows). */
  categories: Schema.NullOr(Schema.String)
}

/** A document as read from its source, before any cleaning. */
export class RawDoc extends Schema.Class<RawDoc>("domain/RawDoc")(documentFields) {}

/** A document whose body went through the clean rules; title and categories are untouched. */
export class CleanDoc extends Schema.Class<CleanDoc>("domain/CleanDoc")(documentFields) {}
