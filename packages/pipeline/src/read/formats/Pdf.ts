/**
 * A PDF as a document's text, page by page, with a form feed (U+000C) between pages so results can say the page they
 * start on. Text is taken from the PDF's text layer with `unpdf` (Mozilla's pdf.js, built to run without a worker or a
 * canvas), in the order the pages draw it, which is reading order for the single- and multi-column layouts word
 * processors and typesetters write. Loaded only when a PDF is read.
 *
 * - Lines are rebuilt from the text items: a new line where pdf.js ends one or the baseline moves; a space where
 *   two items stand apart. A paragraph break where the gap to the next line is well over a line's height.
 * - A word broken at a line's end (`infor-` / `mation`) is joined again: a line ending in a letter and a hyphen, with
 *   the next starting with a lower-case letter. A compound broken at its own hyphen (`well-` / `known`) is joined
 *   too; that is the price of the rule.
 * - Running headers and footers are dropped: a page's first or last line that, with its digits ignored, is the first
 *   (or last) line of at least 60 % of the pages of a document of three pages or more (a title and a page number,
 *   `Page 3 of 10`, `- 3 -`).
 * - A document without a text layer on any page (a scan) has nothing to read: FuncPipe does no OCR.
 */

import { Result } from "effect"
import { getDocumentProxy } from "unpdf"
import type { PageText } from "./Html.ts"

/** The form feed between pages in a PDF's text. */
export const PAGE_BREAK = "\f"

interface Item {
  readonly str: string
  readonly transform: ReadonlyArray<number>
  readonly width: number
  readonly height: number
  readonly hasEOL: boolean
}

interface Line {
  text: string
  readonly y: number
  readonly size: number
}

/** A page's lines, top to bottom as drawn, from its text items. */
const linesOf = (items: ReadonlyArray<Item>): Array<Line> => {
  const lines: Array<Line> = []
  let line: Line | undefined
  let endX = 0
  for (const item of items) {
    const [, , , scaleY = 0, x = 0, y = 0] = item.transform
    const size = Math.abs(scaleY) || item.height || 1
    if (item.str !== "") {
      if (line === undefined || Math.abs(y - line.y) > size / 2) {
        line = { text: item.str, y, size }
        lines.push(line)
      } else {
        const gap = x - endX
        const spaced = line.text.endsWith(" ") || item.str.startsWith(" ")
        line.text += !spaced && gap > size * 0.15 ? ` ${item.str}` : item.str
      }
      endX = x + item.width
    }
    if (item.hasEOL) line = undefined
  }
  for (const l of lines) l.text = l.text.replace(/\s+/g, " ").trim()
  return lines.filter((l) => l.text !== "")
}

/** A line with its digits left out, to tell a running header or footer (`Page 3`, `Page 4`) from text. */
const shapeOf = (text: string) => text.replace(/\d+/g, "#").toLowerCase()

/** The running headers (first lines) and footers (last lines) of a document's pages, by shape. */
const runningLines = (pages: ReadonlyArray<ReadonlyArray<Line>>): { first: Set<string>; last: Set<string> } => {
  const first = new Set<string>()
  const last = new Set<string>()
  if (pages.length < 3) return { first, last }
  for (const [kept, pick] of [
    [first, (lines: ReadonlyArray<Line>) => lines[0]],
    [last, (lines: ReadonlyArray<Line>) => lines.at(-1)]
  ] as const) {
    const counts = new Map<string, number>()
    for (const lines of pages) {
      const line = pick(lines)
      if (line !== undefined) counts.set(shapeOf(line.text), (counts.get(shapeOf(line.text)) ?? 0) + 1)
    }
    for (const [shape, count] of counts) if (count >= 0.6 * pages.length) kept.add(shape)
  }
  return { first, last }
}

/** A page's text: lines joined, broken words mended, paragraphs apart by a blank line. */
const pageText = (lines: ReadonlyArray<Line>): string => {
  let text = ""
  lines.forEach((line, i) => {
    if (i === 0) {
      text = line.text
      return
    }
    const before = lines[i - 1]!
    const paragraph = Math.abs(before.y - line.y) > 1.8 * Math.max(before.size, line.size)
    if (!paragraph && /\p{L}[-\u00ad]$/u.test(text) && /^\p{Ll}/u.test(line.text)) text = text.slice(0, -1) + line.text
    else text += (paragraph ? "\n\n" : "\n") + line.text
  })
  return text
}

/** Why a file that took longer than its time was skipped. */
export const lateReason = (seconds: number): string =>
  `it took longer than ${seconds} s to read, skipped (index --file-seconds raises the limit)`

/** Why pdf.js could not open a file, in words for its skip line. */
const openProblem = (error: unknown): string => {
  const name = typeof error === "object" && error !== null && "name" in error ? String(error.name) : ""
  const message = error instanceof Error ? error.message : String(error)
  if (name === "PasswordException") return "it is encrypted (password-protected): FuncPipe cannot read it"
  return `it is not a readable PDF (${message}): truncated or damaged`
}

/**
 * The text of a PDF's pages and its title (its metadata's, else none), or why it cannot be read. Stops with a reason
 * once `seconds` have passed by `now` (milliseconds: the caller's clock), checked between pages.
 */
export const pdfToText = async (
  bytes: Uint8Array,
  seconds: number,
  now: () => number
): Promise<Result.Result<PageText, string>> => {
  const deadline = now() + seconds * 1000
  const late = () => Result.fail(lateReason(seconds))
  let doc: Awaited<ReturnType<typeof getDocumentProxy>>
  try {
    // pdf.js takes the buffer over and wants a plain Uint8Array (not a Buffer): it is given a copy.
    doc = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 })
  } catch (error) {
    return Result.fail(openProblem(error))
  }
  try {
    const pages: Array<Array<Line>> = []
    for (let p = 1; p <= doc.numPages; p++) {
      if (now() > deadline) return late()
      const page = await doc.getPage(p)
      const content = await page.getTextContent()
      pages.push(linesOf(content.items.filter((item) => "str" in item) as ReadonlyArray<Item>))
      page.cleanup()
    }
    if (pages.every((lines) => lines.length === 0)) {
      return Result.fail("it has no text layer (a scanned document?): FuncPipe does not read text from images (no OCR)")
    }
    const running = runningLines(pages)
    const texts = pages.map((lines) => {
      const kept = lines.filter(
        (line, i) =>
          !(i === 0 && running.first.has(shapeOf(line.text))) &&
          !(i === lines.length - 1 && running.last.has(shapeOf(line.text)))
      )
      return pageText(kept)
    })
    const info = (await doc.getMetadata().catch(() => undefined))?.info as { readonly Title?: unknown } | undefined
    const title = typeof info?.Title === "string" && info.Title.trim() !== "" ? info.Title.trim() : undefined
    return Result.succeed({ text: texts.join(`\n${PAGE_BREAK}\n`), title })
  } catch (error) {
    return Result.fail(`it is damaged (${error instanceof Error ? error.message : String(error)})`)
  } finally {
    await doc.loadingTask.destroy().catch(() => undefined)
  }
}
