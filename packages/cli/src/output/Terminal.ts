/**
 * Whether results are drawn for a person at a terminal, and how: passages as wide as the terminal with the matched
 * words in bold; plain output (pipes, files, tests) cuts them to 160 characters around the matches.
 */
import { plainPassage } from "@funcpipe/domain/Answer"
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
 * How results are drawn: for a terminal (its style) or plain, each result's shown text (its passage, or with `raw` its
 * cleaned chunk text) and the spans of that text whose words match the query (code points).
 */
export interface ResultView {
  readonly style: TerminalStyle | undefined
  readonly raw: boolean
  readonly texts: ReadonlyArray<string>
  readonly spans: ReadonlyArray<ReadonlyArray<readonly [number, number]>>
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
 * What is shown of an answer: for a terminal (`style`) or plain (`undefined`), each result's passage or, with `raw`,
 * its cleaned text, and the words in it that match the query (found as the analyzer of the index finds terms, so
 * `borrowing` is marked for `borrow`).
 */
export const resultViewOf = (
  style: TerminalStyle | undefined,
  raw: boolean,
  answer: {
    readonly query: { readonly text: string }
    readonly manifest: { readonly analyzer: AnalyzerConfig }
    readonly results: ReadonlyArray<{ readonly chunk: { readonly text: string } }>
    readonly shown?: ReadonlyArray<{ readonly passage: string }> | undefined
  }
): ResultView => {
  const terms = analyze(answer.query.text, answer.manifest.analyzer)
  const texts = answer.results.map((r, i) =>
    raw ? r.chunk.text : (answer.shown?.[i]?.passage ?? plainPassage(r.chunk.text))
  )
  return { style, raw, texts, spans: texts.map((text) => highlightSpans(text, terms, answer.manifest.analyzer)) }
}
