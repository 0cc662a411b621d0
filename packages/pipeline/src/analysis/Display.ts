/**
 * What a result shows of its document: the span of the original text, with the Markdown and HTML markup around the
 * words removed (comments, tags, heading and list markers, emphasis, link targets), whole words at its edges, and
 * the headings it sits under. Display only: what is indexed and scored never passes through here.
 */
import { plainPassage, type ShownChunk } from "@funcpipe/domain/Answer"
import type { CleanerConfig } from "@funcpipe/domain/Config"
import { cleanAligned, originalSpan } from "./Original.ts"

/** How a document's text is written, as its source's extension says. */
export type Markup = "markdown" | "plain"

/** `markdown` for `.md`, `.markdown`, `.mdx`; `plain` for anything else. */
export const markupOf = (source: string): Markup => (/\.(?:md|markdown|mdx)$/i.test(source) ? "markdown" : "plain")

/** A part of the original to leave out of display, `[from, to)` in UTF-16 units, or to show as `as` instead. */
interface Edit {
  readonly from: number
  readonly to: number
  readonly as: string
}

/** A heading: where its line starts, its level (1–6) and its text without markup. */
export interface Heading {
  readonly at: number
  readonly level: number
  readonly text: string
}

/** A document prepared for display: its markup's edits in order, and its headings. */
export interface DisplayDoc {
  readonly original: string
  readonly edits: ReadonlyArray<Edit>
  readonly headings: ReadonlyArray<Heading>
}

const ENTITIES: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " }

/** Ranges `[from, to)` that inline rules leave alone (code), sorted; `inside` asks whether a position is in one. */
const rangesOf = (text: string, pattern: RegExp): Array<readonly [number, number]> =>
  Array.from(text.matchAll(pattern), (m) => [m.index, m.index + m[0].length] as const)

const insideOf = (ranges: ReadonlyArray<readonly [number, number]>) => (at: number) => {
  let lo = 0
  let hi = ranges.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (ranges[mid]![1] <= at) lo = mid + 1
    else hi = mid
  }
  return lo < ranges.length && ranges[lo]![0] <= at
}

// A fenced code block, from its opening fence line to its closing one (or the end of the text).
const FENCED = /^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:^[ \t]{0,3}\1[ \t]*$|(?![\s\S]))/gm
const FENCE_LINE = /^[ \t]{0,3}(?:`{3,}|~{3,})[^\n]*$/gm
const CODE_SPAN = /(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)/g
const COMMENT = /<!--[\s\S]*?(?:-->|(?![\s\S]))/g
const FRONT_MATTER = /^---[ \t]*\r?\n[\s\S]*?\r?\n---[ \t]*(?:\r?\n|$)/
// A tag's name starts lower case or has two letters or more, so that a type such as `Vec<T>` keeps its `<T>`.
const TAG = /<\/?(?:[a-z][A-Za-z0-9-]*|[A-Z][A-Za-z0-9-]+)(?:\s[^<>]*)?\/?>/g
const ATX = /^[ \t]{0,3}(#{1,6})(?:[ \t]+|$)([^\n]*?)(?:[ \t]+#+)?[ \t]*$/gm
const SETEXT = /^([ \t]{0,3}\S[^\n]*)\r?\n[ \t]{0,3}(=+|-+)[ \t]*$/gm
const RULE_LINE = /^[ \t]{0,3}(?:(?:[-*_][ \t]*){3,}|=+)$/gm
const QUOTE = /^[ \t]{0,3}(?:>[ \t]?)+/gm
const BULLET = /^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+/gm
const IMAGE_OR_LINK = /(!?)\[([^\]\n]*)\](?:\(([^)\n]*)\)|\[([^\]\n]*)\])/g
const LINK_DEFINITION = /^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*\S[^\n]*$/gm
const AUTOLINK = /<((?:https?|mailto|ftp):[^<>\s]+)>/g
const STRONG = /\*\*|__|~~/g
const EMPHASIS = /(?<![\p{L}\p{N}\\*_])[*_](?=[^\s*_])|(?<=[^\s*_\\])[*_](?![\p{L}\p{N}*_])/gu
const ESCAPE = /\\([!-/:-@[-`{-~])/g
const ENTITY = /&(?:#(\d{1,7})|#x([0-9a-fA-F]{1,6})|([a-zA-Z]+));/g

/** The text of a heading's line, its inline markup removed. */
const inlineText = (line: string): string => displayText(prepareMarkdown(line, false), 0, line.length)

/** The edits and headings of a Markdown text. */
const prepareMarkdown = (original: string, withHeadings = true): DisplayDoc => {
  const edits: Array<Edit> = []
  const hide = (from: number, to: number) => {
    if (to > from) edits.push({ from, to, as: "" })
  }
  const fenced = rangesOf(original, FENCED)
  const inFence = insideOf(fenced)
  const code = [...fenced, ...rangesOf(original, CODE_SPAN).filter(([from]) => !inFence(from))].sort(
    (a, b) => a[0] - b[0]
  )
  const inCode = insideOf(code)
  const each = (pattern: RegExp, f: (m: RegExpExecArray) => void, anywhere = false) => {
    for (const m of original.matchAll(pattern)) if (anywhere || !inCode(m.index)) f(m)
  }
  each(FENCE_LINE, (m) => hide(m.index, m.index + m[0].length), true)
  for (const [from, to] of code) {
    if (original[from] !== "`" || inFence(from)) continue
    const ticks = /^`+/.exec(original.slice(from))![0].length
    hide(from, from + ticks)
    hide(to - ticks, to)
  }
  const front = FRONT_MATTER.exec(original)
  if (front !== null) hide(0, front[0].length)
  each(COMMENT, (m) => hide(m.index, m.index + m[0].length))
  each(TAG, (m) => hide(m.index, m.index + m[0].length))
  each(AUTOLINK, (m) => {
    hide(m.index, m.index + 1)
    hide(m.index + m[0].length - 1, m.index + m[0].length)
  })
  each(LINK_DEFINITION, (m) => hide(m.index, m.index + m[0].length))
  const headings: Array<Heading> = []
  each(ATX, (m) => {
    const markerEnd = m.index + m[0].indexOf(m[1]!) + m[1]!.length
    const textStart = m[2] === "" ? markerEnd : original.indexOf(m[2]!, markerEnd)
    hide(m.index, textStart)
    hide(textStart + m[2]!.length, m.index + m[0].length)
    if (withHeadings) headings.push({ at: m.index, level: m[1]!.length, text: inlineText(m[2]!) })
  })
  each(SETEXT, (m) => {
    if (withHeadings && !/^[ \t]{0,3}(?:[-*+]|#|>)/.test(m[1]!)) {
      headings.push({ at: m.index, level: m[2]![0] === "=" ? 1 : 2, text: inlineText(m[1]!.trim()) })
    }
  })
  each(RULE_LINE, (m) => hide(m.index, m.index + m[0].length))
  each(QUOTE, (m) => hide(m.index, m.index + m[0].length))
  each(BULLET, (m) => hide(m.index, m.index + m[0].length))
  each(IMAGE_OR_LINK, (m) => {
    const textStart = m.index + m[1]!.length + 1
    hide(m.index, textStart)
    hide(textStart + m[2]!.length, m.index + m[0].length)
  })
  each(STRONG, (m) => hide(m.index, m.index + m[0].length))
  each(EMPHASIS, (m) => hide(m.index, m.index + 1))
  each(ESCAPE, (m) => hide(m.index, m.index + 1))
  each(ENTITY, (m) => {
    const decimal = m[1]
    const hex = m[2]
    const point = decimal !== undefined ? Number(decimal) : hex !== undefined ? Number.parseInt(hex, 16) : undefined
    const as =
      point !== undefined
        ? point <= 0x10ffff && (point < 0xd800 || point > 0xdfff)
          ? String.fromCodePoint(point)
          : undefined
        : ENTITIES[m[3]!.toLowerCase()]
    if (as !== undefined) edits.push({ from: m.index, to: m.index + m[0].length, as })
  })
  edits.sort((a, b) => a.from - b.from || b.to - a.to)
  headings.sort((a, b) => a.at - b.at)
  return { original, edits, headings }
}

/** A document ready for `displayText` and `headingPath`: plain text has no edits and no headings. */
export const prepareDisplay = (original: string, markup: Markup): DisplayDoc =>
  markup === "markdown" ? prepareMarkdown(original) : { original, edits: [], headings: [] }

/**
 * The display form of the original's units `[from, to)`: the edits applied (a hidden part left out, however little of
 * it is inside), every run of whitespace one space, no space at either end.
 */
export const displayText = (doc: DisplayDoc, from: number, to: number): string => {
  const { edits, original } = doc
  let out = ""
  let at = from
  for (const edit of edits) {
    if (edit.to <= at) continue
    if (edit.from >= to) break
    if (edit.from >= at) {
      out += original.slice(at, edit.from) + edit.as
      at = Math.min(edit.to, to)
    } else at = Math.min(Math.max(at, edit.to), to)
  }
  out += original.slice(at, to)
  return out.replace(/\s+/g, " ").trim()
}

/** Letters, marks and digits: what a cut at the edge of a passage should not split. */
const WORD_UNIT = /[\p{L}\p{M}\p{N}]/u
/** How far an edge may move outwards to reach the end of a word, in UTF-16 units. */
const WORD_REACH = 40

/**
 * `[from, to)` moved outwards to whole words: a span that starts or ends inside a word takes all of it (up to
 * `WORD_REACH` units each way; a longer word stays cut).
 */
export const wholeWords = (original: string, from: number, to: number): readonly [number, number] => {
  let start = from
  while (from - start < WORD_REACH && inWord(original, start)) start--
  let end = to
  while (end - to < WORD_REACH && inWord(original, end)) end++
  return [start, end]
}

/** Whether a cut at `at` would fall inside a word: word characters on both sides. */
const inWord = (original: string, at: number): boolean =>
  at > 0 && at < original.length && WORD_UNIT.test(original[at - 1]!) && WORD_UNIT.test(original[at]!)

/** The headings the original's position `at` is under, outermost first (`Chapter 4 › Ownership`). */
export const headingPath = (doc: DisplayDoc, at: number): ReadonlyArray<string> => {
  const path: Array<Heading> = []
  for (const heading of doc.headings) {
    if (heading.at > at) break
    while (path.length > 0 && path[path.length - 1]!.level >= heading.level) path.pop()
    path.push(heading)
  }
  return path.map((h) => h.text).filter((text) => text !== "")
}

/**
 * What a result shows of its chunk (`ShownChunk`): the chunk's span of the original text, out to whole words, markup
 * removed, on one line; the headings it starts under, outermost first (Markdown documents; empty otherwise); and where
 * the document was read from.
 */
export type ChunkView = ShownChunk

/** A document's texts as a store gives them: its source, its cleaned body, its body as written (if kept). */
export interface DocumentTexts {
  readonly source: string
  readonly cleaned: string
  readonly original: string | undefined
}

/**
 * The views of a document's chunks, given its source, its cleaned body and its body as written (`undefined` when the
 * index kept only the cleaned one: passages are then cut from the cleaned text, and have no headings). The
 * document's alignment and markup are worked out once, for all of its chunks.
 */
export const chunkViewer = (
  text: DocumentTexts,
  cleaner: Pick<CleanerConfig, "rules">
): ((start: number, end: number) => ChunkView) => {
  const written = text.original ?? text.cleaned
  const aligned = cleanAligned(written, text.original === undefined ? { rules: [] } : cleaner)
  const doc = prepareDisplay(written, markupOf(text.source))
  return (start, end) => {
    const [from, to] = originalSpan(aligned, start, end)
    const [wordsFrom, wordsTo] = wholeWords(written, from, to)
    return { passage: displayText(doc, wordsFrom, wordsTo), section: headingPath(doc, from), source: text.source }
  }
}

/**
 * Where the headings of a Markdown text start (UTF-16 units, in order): ATX (`# Title`) and setext (a line over `===`
 * or `---`) headings outside fenced code. What the `markdown` chunker keeps chunks from crossing.
 */
export const headingStarts = (original: string): Array<number> => {
  const inFence = insideOf(rangesOf(original, FENCED))
  const starts: Array<number> = []
  for (const m of original.matchAll(ATX)) if (!inFence(m.index)) starts.push(m.index)
  for (const m of original.matchAll(SETEXT)) {
    if (!inFence(m.index) && !/^[ \t]{0,3}(?:[-*+]|#|>)/.test(m[1]!)) starts.push(m.index)
  }
  return starts.sort((a, b) => a - b)
}

/**
 * Each document's viewer, by the texts object a store gave for it. A store gives the same object while it keeps the
 * document's body in memory, so a document in the results of many queries is aligned and parsed once; the memo holds
 * nothing the store has let go.
 */
const viewers = new WeakMap<DocumentTexts, (start: number, end: number) => ChunkView>()

/**
 * What each of `chunks` shows, its document's texts read with `textOf` (cleaned with `cleaner`); a chunk whose
 * document has no texts there shows its cleaned text.
 */
export const shownChunks = (
  textOf: (docId: string) => DocumentTexts | undefined,
  cleaner: Pick<CleanerConfig, "rules">,
  chunks: ReadonlyArray<{ readonly docId: string; readonly start: number; readonly end: number; readonly text: string }>
): ReadonlyArray<ChunkView> =>
  chunks.map((chunk) => {
    const text = textOf(chunk.docId)
    if (text === undefined) return { passage: plainPassage(chunk.text), section: [], source: "" }
    let viewer = viewers.get(text)
    if (viewer === undefined) viewers.set(text, (viewer = chunkViewer(text, cleaner)))
    return viewer(chunk.start, chunk.end)
  })
