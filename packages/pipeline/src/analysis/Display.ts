/**
 * What a result shows of its document: the span of the original text, with the Markdown and HTML markup around the
 * words removed (comments, tags, heading and list markers, emphasis, link targets), whole words at its edges, and
 * the headings it sits under. Display only: what is indexed and scored never passes through here.
 */
import { plainPassage, type ShownChunk } from "@funcpipe/domain/Answer"
import type { CleanerConfig } from "@funcpipe/domain/Config"
import { countBelow } from "../base/Sorted.ts"
import { cleanAligned, originalSpan, unitsOf } from "./Original.ts"

/** Documents whose text has pages, apart by form feeds: PDFs. */
const PAGED = /\.pdf$/i

/** How a document's text is written, as its source's extension says. */
export type Markup = "markdown" | "plain"

/**
 * `markdown` for `.md`, `.markdown`, `.mdx`, and for the files read through a converter (`.html`, `.htm`, `.xhtml`,
 * `.docx`, `.epub`), whose text the converter writes as Markdown; `plain` for anything else.
 */
export const markupOf = (source: string): Markup =>
  /\.(?:md|markdown|mdx|html?|xhtml|docx|epub)$/i.test(source) ? "markdown" : "plain"

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
  /** For each edit, the furthest `to` of it and every edit before it: where a span's first edit is found by halving. */
  readonly reach: Int32Array
  readonly headings: ReadonlyArray<Heading>
}

const ENTITIES: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " }

/** Ranges `[from, to)` that inline rules leave alone (code), sorted; `inside` asks whether a position is in one. */
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

/** A line of a text: `[start, end)` in UTF-16 units, without its line break. */
interface Line {
  readonly start: number
  readonly end: number
}

/** The lines of a text. */
const linesOf = (text: string): Array<Line> => {
  const lines: Array<Line> = []
  let start = 0
  for (;;) {
    const end = text.indexOf("\n", start)
    if (end < 0) {
      lines.push({ start, end: text.length })
      return lines
    }
    lines.push({ start, end: end > start && text.charCodeAt(end - 1) === 0x0d ? end - 1 : end })
    start = end + 1
  }
}

const FENCE_OPEN = /^[ \t]{0,3}(`{3,}|~{3,})(.*)$/
const FENCE_CLOSE = /^[ \t]{0,3}(`{3,}|~{3,})[ \t]*$/

/**
 * The fenced code blocks of a Markdown text, as CommonMark finds them: from an opening fence line (three or more
 * backticks or tildes; a backtick fence's info text holds no backtick) to a closing one of the same character at least
 * as long, or to the end of the text. Each block's range, and the ranges of its fence lines. Line by line: linear.
 */
const fencesOf = (text: string, lines: ReadonlyArray<Line>) => {
  const blocks: Array<readonly [number, number]> = []
  const fenceLines: Array<readonly [number, number]> = []
  let open: { readonly char: string; readonly length: number; readonly start: number } | undefined
  for (const { end, start } of lines) {
    const line = text.slice(start, end)
    if (open === undefined) {
      const m = FENCE_OPEN.exec(line)
      if (m === null || (m[1]![0] === "`" && m[2]!.includes("`"))) continue
      open = { char: m[1]![0]!, length: m[1]!.length, start }
      fenceLines.push([start, end])
    } else {
      const m = FENCE_CLOSE.exec(line)
      if (m === null || m[1]![0] !== open.char || m[1]!.length < open.length) continue
      blocks.push([open.start, end])
      fenceLines.push([start, end])
      open = undefined
    }
  }
  if (open !== undefined) blocks.push([open.start, text.length])
  return { blocks, fenceLines }
}

/**
 * The code spans of a text outside `inFence`: a run of backticks up to the next run of the same length, as CommonMark
 * pairs them (a run without a partner is literal). One pass over the runs: linear.
 */
const codeSpansOf = (text: string, inFence: (at: number) => boolean): Array<readonly [number, number, number]> => {
  const runs: Array<readonly [number, number]> = []
  for (let i = text.indexOf("`"); i >= 0; i = text.indexOf("`", i)) {
    let j = i
    while (text.charCodeAt(j) === 0x60) j++
    if (!inFence(i)) runs.push([i, j - i])
    i = j
  }
  // For each length, the runs of that length in order, and how far the search for a partner has got.
  const byLength = new Map<number, { readonly at: Array<number>; next: number }>()
  runs.forEach(([, length], r) => {
    const list = byLength.get(length)
    if (list === undefined) byLength.set(length, { at: [r], next: 0 })
    else list.at.push(r)
  })
  const spans: Array<readonly [number, number, number]> = []
  for (let r = 0; r < runs.length; ) {
    const [start, length] = runs[r]!
    const list = byLength.get(length)!
    while (list.next < list.at.length && list.at[list.next]! <= r) list.next++
    if (list.next === list.at.length) {
      r++
      continue
    }
    const partner = list.at[list.next]!
    spans.push([start, runs[partner]![0] + length, length])
    r = partner + 1
  }
  return spans
}

/** An ATX heading's level and text, `undefined` for another line. Linear: no backtracking over the line. */
const atxHeading = (
  line: string
): { readonly level: number; readonly text: string; readonly from: number } | undefined => {
  const m = /^[ \t]{0,3}(#{1,6})(?=[ \t]|$)/.exec(line)
  if (m === null) return undefined
  let from = m[0].length
  while (from < line.length && (line[from] === " " || line[from] === "\t")) from++
  let to = line.length
  while (to > from && (line[to - 1] === " " || line[to - 1] === "\t")) to--
  // A closing run of #s, after a space (or the whole text), is not part of the heading.
  let hashes = to
  while (hashes > from && line[hashes - 1] === "#") hashes--
  if (hashes < to && (hashes === from || line[hashes - 1] === " " || line[hashes - 1] === "\t")) {
    to = hashes
    while (to > from && (line[to - 1] === " " || line[to - 1] === "\t")) to--
  }
  return { level: m[1]!.length, text: line.slice(from, to), from }
}

const SETEXT_UNDERLINE = /^[ \t]{0,3}(=+|-+)[ \t]*$/

/** The headings of a Markdown text outside its fenced code: ATX (`# Title`) and setext (a line over `===` or `---`). */
const headingsOf = (text: string, lines: ReadonlyArray<Line>, inFence: (at: number) => boolean) => {
  const found: Array<{
    readonly line: Line
    readonly atx: boolean
    readonly level: number
    readonly text: string
    readonly from: number
  }> = []
  lines.forEach((line, i) => {
    if (inFence(line.start)) return
    const content = text.slice(line.start, line.end)
    const atx = atxHeading(content)
    if (atx !== undefined) {
      found.push({ line, atx: true, ...atx })
      return
    }
    const next = lines[i + 1]
    if (next === undefined || content.trim() === "" || /^[ \t]{0,3}(?:[-*+]|#|>)/.test(content)) return
    const underline = SETEXT_UNDERLINE.exec(text.slice(next.start, next.end))
    if (underline === null || inFence(next.start)) return
    found.push({ line, atx: false, level: underline[1]![0] === "=" ? 1 : 2, text: content.trim(), from: 0 })
  })
  return found
}

const COMMENT = /<!--[\s\S]*?(?:-->|(?![\s\S]))/g
const FRONT_MATTER = /^---[ \t]*\r?\n[\s\S]*?\r?\n---[ \t]*(?:\r?\n|$)/
/**
 * HTML's element names: only these make a tag, and only with `name=value` attributes, so that `Vec<u8>` or
 * `a<b and c>d` keep their text.
 */
const TAG_NAMES =
  "a|abbr|address|article|aside|audio|b|bdi|bdo|big|blockquote|body|br|button|caption|center|cite|code|col|" +
  "colgroup|dd|del|details|dfn|div|dl|dt|em|embed|figcaption|figure|font|footer|form|h[1-6]|head|header|hr|html|i|" +
  "iframe|img|input|ins|kbd|label|li|link|main|mark|meta|nav|ol|p|picture|pre|q|s|samp|script|section|select|small|" +
  "source|span|strike|strong|style|sub|summary|sup|table|tbody|td|textarea|tfoot|th|thead|time|tr|tt|u|ul|var|video|wbr"
const TAG = new RegExp(`</?(?:${TAG_NAMES})(?:\\s+[\\w:-]+\\s*=\\s*(?:"[^"]*"|'[^']*'|[^\\s"'=<>\`]+))*\\s*/?>`, "gi")
const RULE_LINE = /^[ \t]{0,3}(?:(?:[-*_][ \t]*){3,}|=+)$/gm
const QUOTE = /^[ \t]{0,3}(?:>[ \t]?)+/gm
const BULLET = /^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+/gm
// Link text and targets are bounded (and a target may hold one level of parentheses), so that a run of brackets costs
// a bounded look-ahead each.
const IMAGE_OR_LINK = /(!?)\[([^[\]\n]{0,500})\](?:\(((?:[^()\n]|\([^()\n]{0,500}\)){0,2000})\)|\[([^\]\n]{0,500})\])/g
const LINK_DEFINITION = /^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*\S[^\n]*$/gm
const AUTOLINK = /<((?:https?|mailto|ftp):[^<>\s]+)>/g
// Emphasis is removed only where an opening delimiter has its closing one on the same line (within 500 characters),
// so that `*args, **kwargs` or `2 * 3` keep their stars.
const STRONG = /(?<![\\*_~])(\*\*|__|~~)(?=[^\s*_~])[^\n]{0,500}?[^\s\\*_~]\1(?![*_~])/g
const EMPHASIS = /(?<![\p{L}\p{N}\\*_])([*_])(?=[^\s*_])[^\n]{0,500}?[^\s*_\\]\1(?![\p{L}\p{N}*_])/gu
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
  const lines = linesOf(original)
  const { blocks, fenceLines } = fencesOf(original, lines)
  const inFence = insideOf(blocks)
  const spans = codeSpansOf(original, inFence)
  const code = [...blocks, ...spans.map(([from, to]) => [from, to] as const)].sort((a, b) => a[0] - b[0])
  const inCode = insideOf(code)
  const each = (pattern: RegExp, f: (m: RegExpExecArray) => void) => {
    for (const m of original.matchAll(pattern)) if (!inCode(m.index)) f(m)
  }
  for (const [from, to] of fenceLines) hide(from, to)
  for (const [from, to, ticks] of spans) {
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
  for (const heading of headingsOf(original, lines, inFence)) {
    // An ATX heading's markers before and after its text are hidden; a setext heading's underline is a rule line.
    if (heading.atx) {
      const textStart = heading.line.start + heading.from
      hide(heading.line.start, textStart)
      hide(textStart + heading.text.length, heading.line.end)
    }
    if (withHeadings) headings.push({ at: heading.line.start, level: heading.level, text: inlineText(heading.text) })
  }
  each(RULE_LINE, (m) => hide(m.index, m.index + m[0].length))
  each(QUOTE, (m) => hide(m.index, m.index + m[0].length))
  each(BULLET, (m) => hide(m.index, m.index + m[0].length))
  each(IMAGE_OR_LINK, (m) => {
    const textStart = m.index + m[1]!.length + 1
    hide(m.index, textStart)
    hide(textStart + m[2]!.length, m.index + m[0].length)
  })
  for (const pattern of [STRONG, EMPHASIS]) {
    each(pattern, (m) => {
      const width = m[1]!.length
      hide(m.index, m.index + width)
      hide(m.index + m[0].length - width, m.index + m[0].length)
    })
  }
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
  return { original, edits, reach: reachOf(edits), headings }
}

/** A document ready for `displayText` and `headingPath`: plain text has no edits and no headings. */
export const prepareDisplay = (original: string, markup: Markup): DisplayDoc =>
  markup === "markdown" ? prepareMarkdown(original) : { original, edits: [], reach: new Int32Array(0), headings: [] }

/** The running maximum of the edits' ends. */
const reachOf = (edits: ReadonlyArray<Edit>): Int32Array => {
  const reach = new Int32Array(edits.length)
  let furthest = 0
  edits.forEach((edit, i) => {
    furthest = Math.max(furthest, edit.to)
    reach[i] = furthest
  })
  return reach
}

/**
 * The display form of the original's units `[from, to)`: the edits applied (a hidden part left out, however little of
 * it is inside), every run of whitespace one space, no space at either end.
 */
export const displayText = (doc: DisplayDoc, from: number, to: number): string => {
  const { edits, original, reach } = doc
  let out = ""
  let at = from
  // The first edit that reaches past `from`: every one before it ends at or before it.
  let lo = 0
  let hi = edits.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (reach[mid]! <= from) lo = mid + 1
    else hi = mid
  }
  for (let e = lo; e < edits.length; e++) {
    const edit = edits[e]!
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

/** A document's texts for display, as a store gives them: where it was read from, its cleaned body and as written. */
export interface DocumentText {
  readonly source: string
  /** The cleaned body: chunk spans count its code points. */
  readonly cleaned: string
  /** The body as written; `undefined` in an index of format 2, which kept only the cleaned body. */
  readonly original: string | undefined
}

/**
 * What each chunk of a document shows (`ShownChunk`: its span of the original out to whole words, markup removed, on
 * one line; the headings it starts under; the source), given the document's source, its cleaned body and its body as
 * written (`undefined` when the index kept only the cleaned one: passages are then cut from the cleaned text, and have
 * no headings). The document's alignment and markup are worked out once, for all of its chunks.
 */
export const chunkViewer = (
  text: DocumentText,
  cleaner: Pick<CleanerConfig, "rules">
): ((start: number, end: number) => ShownChunk) => {
  const written = text.original ?? text.cleaned
  const aligned = cleanAligned(written, text.original === undefined ? { rules: [] } : cleaner)
  // Cleaned text has lost its line breaks, and with them what makes Markdown: it is shown as plain text.
  const doc = prepareDisplay(written, text.original === undefined ? "plain" : markupOf(text.source))
  const unitAt = unitsOf(aligned.text)
  // A PDF's pages are apart by form feeds in its text (`read/formats/Pdf.ts`): where each page after the first starts.
  const paged = PAGED.test(text.source) && text.original !== undefined
  const pageStarts: Array<number> = []
  if (paged) for (let at = written.indexOf("\f"); at >= 0; at = written.indexOf("\f", at + 1)) pageStarts.push(at)
  const pageAt = (from: number): number | undefined => (paged ? countBelow(pageStarts, from) + 1 : undefined)
  // What each chunk shows, kept once made: a server shows the same chunks again and again, and making a passage took a
  // quarter of a query's time under load. The key is exact for starts below 2^21 (end < 2^32); others are not kept.
  const made = new Map<number, ShownChunk>()
  return (start, end) => {
    const key = start < 2 ** 21 ? start * 2 ** 32 + end : -1
    const kept = made.get(key)
    if (kept !== undefined) return kept
    const [from, to] = originalSpan(aligned, start, end, unitAt)
    const [wordsFrom, wordsTo] = wholeWords(written, from, to)
    const page = pageAt(from)
    const shown = {
      passage: displayText(doc, wordsFrom, wordsTo),
      section: headingPath(doc, from),
      source: text.source,
      ...(page === undefined ? {} : { page })
    }
    if (key >= 0) made.set(key, shown)
    return shown
  }
}

/**
 * Where the headings of a Markdown text start (UTF-16 units, in order): ATX (`# Title`) and setext (a line over `===`
 * or `---`) headings outside fenced code. What the `markdown` chunker keeps chunks from crossing.
 */
export const headingStarts = (original: string): Array<number> => {
  const lines = linesOf(original)
  const inFence = insideOf(fencesOf(original, lines).blocks)
  return headingsOf(original, lines, inFence).map((heading) => heading.line.start)
}

/**
 * Each document's viewer, by the texts object a store gave for it. A store gives the same object while it keeps the
 * document's body in memory, so a document in the results of many queries is aligned and parsed once; the memo holds
 * nothing the store has let go. A document of more than `MEMO_UNITS` is not kept (its alignment would take eight
 * bytes a character): only the results of one query share its viewer.
 */
const viewers = new WeakMap<DocumentText, (start: number, end: number) => ShownChunk>()
const MEMO_UNITS = 1 << 20

/**
 * What each of `chunks` shows, its document's texts read with `textOf` (cleaned with `cleaner`); a chunk whose
 * document has no texts there shows its cleaned text.
 */
export const shownChunks = (
  textOf: (docId: string) => DocumentText | undefined,
  cleaner: Pick<CleanerConfig, "rules">,
  chunks: ReadonlyArray<{ readonly docId: string; readonly start: number; readonly end: number; readonly text: string }>
): ReadonlyArray<ShownChunk> => {
  const here = new Map<string, ((start: number, end: number) => ShownChunk) | undefined>()
  return chunks.map((chunk) => {
    let viewer = here.get(chunk.docId)
    if (!here.has(chunk.docId)) {
      const text = textOf(chunk.docId)
      viewer = text === undefined ? undefined : viewers.get(text)
      if (text !== undefined && viewer === undefined) {
        viewer = chunkViewer(text, cleaner)
        if ((text.original ?? text.cleaned).length <= MEMO_UNITS) viewers.set(text, viewer)
      }
      here.set(chunk.docId, viewer)
    }
    return viewer?.(chunk.start, chunk.end) ?? { passage: plainPassage(chunk.text), section: [], source: "" }
  })
}
