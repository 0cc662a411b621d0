/** Documents as they enter the pipeline (`RawDoc`) and after cleaning (`CleanDoc`). */
import { Schema } from "effect"
import { WHITESPACE_CLASS } from "./Whitespace.ts"

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

const labelSpace = new RegExp(`^[${WHITESPACE_CLASS}]+|[${WHITESPACE_CLASS}]+$`, "g")
const labelSeparatorRun = new RegExp(`[${WHITESPACE_CLASS}]+`)
const needsSemicolons = new RegExp(`[,;${WHITESPACE_CLASS}]`)

/**
 * The category labels of a `categories` value, in order, each once: the text is split at semicolons if it holds any,
 * else at commas if it holds any, else at whitespace (Python's set, as everywhere); each label is trimmed and empty
 * ones are dropped. So `"cs.LG stat.ML"` (arXiv), `"cs.LG, stat.ML"` and `"Machine Learning; Physics"` all read as
 * expected, and `null` has no labels. The raw string stays what the document stores and hashes; rules compare labels.
 */
export const labelsOf = (categories: string | null): ReadonlyArray<string> => {
  if (categories === null) return []
  const parts = categories.includes(";")
    ? categories.split(";")
    : categories.includes(",")
      ? categories.split(",")
      : categories.split(labelSeparatorRun)
  const labels: Array<string> = []
  for (const part of parts) {
    const label = part.replace(labelSpace, "")
    if (label !== "" && !labels.includes(label)) labels.push(label)
  }
  return labels
}

/**
 * The `categories` text for a list of labels (a JSONL list, front matter tags) that `labelsOf` splits back into them:
 * joined by spaces when no label holds whitespace, a comma or a semicolon (as arXiv writes them), else by `"; "`
 * (a single such label gets a trailing `;`).
 * A label that itself holds a semicolon cannot survive the round trip and is split there.
 */
export const joinLabels = (labels: ReadonlyArray<string>): string => {
  if (!labels.some((label) => needsSemicolons.test(label))) return labels.join(" ")
  // One label still needs a semicolon, or its own spaces or commas would split it.
  return labels.length === 1 ? `${labels[0]};` : labels.join("; ")
}
