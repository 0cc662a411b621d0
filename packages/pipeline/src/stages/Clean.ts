/** The clean stage: applies the configured rules, in order, to a document's body. */
import type { CleanRule } from "@funcpipe/domain/Config"
import { CleanerConfig } from "@funcpipe/domain/Config"
import { CleanDoc, type RawDoc } from "@funcpipe/domain/Document"
import { WHITESPACE_CLASS, whitespaceRun } from "@funcpipe/domain/Whitespace"

const edges = new RegExp(`^[${WHITESPACE_CLASS}]+|[${WHITESPACE_CLASS}]+$`, "g")
const lineBreak = /\r\n|\r|\n/g

/**
 * One rule. Whitespace is Python's `str.isspace` set, so the results match the reference byte for byte:
 * `strip` trims it from both ends, `collapse_ws` joins the whitespace-separated words with single spaces (which also
 * trims), `replace_newlines` turns each line break (`\r\n`, `\r` or `\n`) into a space.
 */
const applyRule = (text: string, rule: CleanRule): string => {
  switch (rule) {
    case "strip":
      return text.replace(edges, "")
    case "lower":
      return text.toLowerCase()
    case "upper":
      return text.toUpperCase()
    case "collapse_ws":
      return text.replace(edges, "").replace(whitespaceRun, " ")
    case "replace_newlines":
      return text.replace(lineBreak, " ")
  }
}

/** Cleans a text with the given rules; used for bodies and for query text alike. */
export const cleanText = (text: string, cleaner: CleanerConfig = CleanerConfig.default): string =>
  cleaner.rules.reduce(applyRule, text)

/** Cleans the body of a document; title and categories pass through untouched. */
export const cleanDoc = (doc: RawDoc, cleaner: CleanerConfig = CleanerConfig.default): CleanDoc =>
  new CleanDoc({ docId: doc.docId, title: doc.title, body: cleanText(doc.body, cleaner), categories: doc.categories })
