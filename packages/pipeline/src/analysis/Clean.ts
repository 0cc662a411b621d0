/** The clean stage: applies the configured rules, in order, to a document's body. */
import type { CleanRule } from "@funcpipe/domain/Config"
import { CleanerConfig } from "@funcpipe/domain/Config"
import { CleanDoc, type RawDoc } from "@funcpipe/domain/Document"
import {
  isWhitespaceUnit,
  NON_SPACE_WHITESPACE_CLASS,
  WHITESPACE_CLASS,
  whitespaceRun
} from "@funcpipe/domain/Whitespace"

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

/**
 * Cleans a text rule by rule with regular expressions: the specification of the rules, kept as the reference that
 * `cleanText` is tested against. Same results as `cleanText`, only slower.
 */
export const cleanTextGeneric = (text: string, cleaner: CleanerConfig = CleanerConfig.default): string =>
  cleaner.rules.reduce(applyRule, text)

/** `strip` by scanning inwards from both ends; only the few edge characters are looked at. */
const strip = (text: string): string => {
  let start = 0
  let end = text.length
  while (start < end && isWhitespaceUnit(text.charCodeAt(start))) start++
  while (end > start && isWhitespaceUnit(text.charCodeAt(end - 1))) end--
  return start === 0 && end === text.length ? text : text.slice(start, end)
}

// Inside a stripped text, the only whitespace `collapse_ws` keeps as is is a single U+0020 between two words; this
// matches everything else (a longer run, or one other whitespace character), so well-spaced text has few matches.
const irregularWhitespace = new RegExp(`[${WHITESPACE_CLASS}]{2,}|[${NON_SPACE_WHITESPACE_CLASS}]`, "g")

/**
 * One rule, with the same result as `applyRule` but faster: the edges are found by scanning, and `collapse_ws` only
 * rewrites the whitespace that is not already a single space. Each rule is exact on its own, so any list of rules, in
 * any order, gives the generic result.
 */
const applyRuleFast = (text: string, rule: CleanRule): string => {
  switch (rule) {
    case "strip":
      return strip(text)
    case "lower":
      return text.toLowerCase()
    case "upper":
      return text.toUpperCase()
    case "collapse_ws":
      return strip(text).replace(irregularWhitespace, " ")
    case "replace_newlines":
      return text.replace(lineBreak, " ")
  }
}

/** Cleans a text with the given rules, applied in order; used for bodies and for query text alike. */
export const cleanText = (text: string, cleaner: CleanerConfig = CleanerConfig.default): string => {
  let out = text
  for (const rule of cleaner.rules) out = applyRuleFast(out, rule)
  return out
}

/** Cleans the body of a document; title and categories pass through untouched. */
export const cleanDoc = (doc: RawDoc, cleaner: CleanerConfig = CleanerConfig.default): CleanDoc =>
  new CleanDoc({ docId: doc.docId, title: doc.title, body: cleanText(doc.body, cleaner), categories: doc.categories })
