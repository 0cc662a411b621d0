/**
 * Whether results are drawn for a person at a terminal, and how: passages as wide as the terminal with the matched
 * words in bold. Plain output (pipes, files, tests) keeps the stable one-line format.
 */
import type { AnalyzerConfig } from "@funcpipe/domain/Config"
import { analyze } from "@funcpipe/pipeline/analysis/Analyzer"
import { highlightSpans } from "@funcpipe/pipeline/analysis/Highlight"
import { Context } from "effect"

/** The terminal's width in columns, and whether matched words are shown in bold. */
export interface TerminalStyle {
  readonly columns: number
  readonly bold: boolean
}

/**
 * Results drawn for a terminal: its style, each result's matched spans (code points of its text), and each span's
 * weight in choosing the passage.
 */
export interface TerminalView {
  readonly style: TerminalStyle
  readonly spans: ReadonlyArray<ReadonlyArray<readonly [number, number]>>
  readonly weights: ReadonlyArray<ReadonlyArray<number>>
}

/**
 * Each span's weight: one over the square of how often its word occurs in the text, so that a word the text holds once
 * outweighs a cluster of a word it repeats (the rarer word tells more about why the text matched): the n occurrences
 * of a word weigh 1/n together.
 */
const rarity = (text: string, spans: ReadonlyArray<readonly [number, number]>): Array<number> => {
  const points = Array.from(text)
  const words = spans.map(([start, end]) => points.slice(start, end).join("").toLowerCase())
  const counts = new Map<string, number>()
  for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1)
  return words.map((word) => 1 / counts.get(word)! ** 2)
}

/** The terminal results are drawn for, or `undefined` for plain output (the default). */
export const ResultTerminal = Context.Reference<TerminalStyle | undefined>("cli/ResultTerminal", {
  defaultValue: () => undefined
})

/**
 * The style for standard output as the process finds it: a terminal when stdout is one (bold unless `NO_COLOR` is set
 * or the terminal is `dumb`), plain otherwise.
 */
export const terminalStyleOf = (
  isTTY: boolean,
  columns: number | undefined,
  env: Readonly<Record<string, string | undefined>>
): TerminalStyle | undefined =>
  isTTY
    ? {
        columns: columns !== undefined && columns > 0 ? columns : 80,
        bold: env["NO_COLOR"] === undefined && env["TERM"] !== "dumb"
      }
    : undefined

/**
 * What a terminal shows of an answer: its style, and each result's words that match the query (found as the
 * analyzer of the index finds terms, so `borrowing` is marked for `borrow`).
 */
export const terminalViewOf = (
  style: TerminalStyle,
  answer: {
    readonly query: { readonly text: string }
    readonly manifest: { readonly analyzer: AnalyzerConfig }
    readonly results: ReadonlyArray<{ readonly chunk: { readonly text: string } }>
  }
): TerminalView => {
  const terms = analyze(answer.query.text, answer.manifest.analyzer)
  const spans = answer.results.map((r) => highlightSpans(r.chunk.text, terms, answer.manifest.analyzer))
  return { style, spans, weights: answer.results.map((r, i) => rarity(r.chunk.text, spans[i]!)) }
}
