/** Highlighting: the spans of a text whose words the analyzer turns into one of a query's terms. */
import type { AnalyzerConfig } from "@funcpipe/domain/Config"
import { termOf } from "./Analyzer.ts"

/** A word as the analyzer sees one (letters, marks and digits, joined by an apostrophe or a dot), or one ideograph. */
const WORD = /\p{Ideographic}|[[\p{L}\p{M}\p{N}]--\p{Ideographic}]+(?:['’.][[\p{L}\p{M}\p{N}]--\p{Ideographic}]+)*/gv

/**
 * The spans `[start, end)` of `text`, in code points and in text order, of the words whose term (lowercased, stop words
 * out, stemmed as `config` says) is one of `terms`: what a result page marks as matching the query.
 */
export const highlightSpans = (
  text: string,
  terms: ReadonlyArray<string>,
  config: AnalyzerConfig
): Array<readonly [number, number]> => {
  const wanted = new Set(terms)
  const spans: Array<readonly [number, number]> = []
  if (wanted.size === 0) return spans
  // Offsets are counted in code points: walk the text once, converting UTF-16 positions as matches come.
  let unit = 0
  let point = 0
  const pointAt = (to: number) => {
    for (; unit < to; point++) unit += text.codePointAt(unit)! > 0xffff ? 2 : 1
    return point
  }
  for (const match of text.matchAll(WORD)) {
    const term = termOf(match[0].toLowerCase(), config)
    if (term === undefined || !wanted.has(term)) continue
    const start = pointAt(match.index)
    spans.push([start, pointAt(match.index + match[0].length)])
  }
  return spans
}
