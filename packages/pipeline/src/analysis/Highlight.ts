/** Highlighting: the spans of a text whose words the analyzer turns into one of a query's terms. */
import type { AnalyzerConfig } from "@funcpipe/domain/Config"
import { joinMarksAligned, termOf } from "./Analyzer.ts"

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
  // Words are found as the analyzer finds them (marks inside words joined, for version 2), then mapped back.
  const joined = joinMarksAligned(text, config.version)
  // Offsets are counted in code points: walk the text once, converting UTF-16 positions as matches come.
  let unit = 0
  let point = 0
  const pointAt = (to: number) => {
    for (; unit < to; point++) unit += text.codePointAt(unit)! > 0xffff ? 2 : 1
    return point
  }
  for (const match of joined.text.matchAll(WORD)) {
    const term = termOf(match[0].toLowerCase(), config)
    if (term === undefined || !wanted.has(term)) continue
    let from = joined.from[match.index]!
    // A word that starts with a joined bracket (`[l]ist`) starts at the bracket.
    const previous = match.index === 0 ? -1 : joined.from[match.index - 1]!
    if (text[from - 1] === "[" && previous < from - 1) from--
    // The word ends after its last unit as written (a joined `]` or mark after it is not part of it).
    const to = joined.from[match.index + match[0].length - 1]! + 1
    const start = pointAt(from)
    spans.push([start, pointAt(to)])
  }
  return spans
}
