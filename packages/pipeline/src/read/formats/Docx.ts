/**
 * A Word document (`.docx`) as a document's text, written as Markdown: paragraphs, headings (paragraphs in Word's
 * "Heading 1" … "Heading 6" and "Title" styles, by the style names in `word/styles.xml`), list items (paragraphs with
 * numbering), and tables as rows of cells. The title is the document's own (its core properties), else its first
 * heading. The XML is read in one streaming pass (`htmlparser2` in XML mode), so time and memory follow the size of
 * the document; a DOM-building converter took 2.6 GB for 10 MB of document XML.
 */

import { Result } from "effect"
import type { PageText } from "./Html.ts"
import { MAX_DEPTH, parseXml, TooDeep } from "./Xml.ts"
import { unzipWithin } from "./Zip.ts"

const utf8 = new TextDecoder("utf-8")

/** Word's paragraph styles by id: the heading level each gives (1–6; "Title" counts as 1), where it gives one. */
const headingStyles = (xml: string | undefined): Map<string, number> => {
  const levels = new Map<string, number>()
  if (xml === undefined) return levels
  let id: string | undefined
  parseXml(xml, {
    open: (name, attributes) => {
      if (name === "w:style") id = attributes["w:styleId"]
      else if (name === "w:name" && id !== undefined) {
        const styleName = (attributes["w:val"] ?? "").toLowerCase()
        const level = /^heading ([1-6])$/.exec(styleName)?.[1]
        if (level !== undefined) levels.set(id, Number(level))
        else if (styleName === "title") levels.set(id, 1)
      }
    },
    close: (name) => {
      if (name === "w:style") id = undefined
    }
  })
  return levels
}

/** The `dc:title` of a document's core properties, if it has one. */
const coreTitle = (xml: string): string | undefined => {
  let inTitle = false
  let title = ""
  parseXml(xml, {
    open: (name) => {
      if (name === "dc:title") inTitle = true
    },
    text: (data) => {
      if (inTitle) title += data
    },
    close: (name) => {
      if (name === "dc:title") inTitle = false
    }
  })
  const trimmed = title.replace(/\s+/g, " ").trim()
  return trimmed === "" ? undefined : trimmed
}

/** A paragraph's text as Markdown would misread it at a line's start (`# x`, `- x`, `| x`) made plain with a `\`. */
const literal = (text: string) => (/^(?:#{1,6}(?:\s|$)|[-+*]\s|\|)/.test(text) ? `\\${text}` : text)

/** The document's body as Markdown. */
const bodyText = (xml: string, styles: ReadonlyMap<string, number>): string => {
  const blocks: Array<string> = []
  let paragraph: Array<string> = []
  let inText = false
  let level = 0
  let listed = false
  /** The open tables' rows being filled: cells of the current row of each, innermost last. */
  const rows: Array<Array<string>> = []
  /** The cell being filled in the innermost table, or none outside a table. */
  let cell: Array<string> | undefined
  const cells: Array<Array<string> | undefined> = []
  /** Whether the last block is a table row or list item, which the next of its kind joins. */
  let run: "row" | "item" | undefined
  const push = (text: string, kind: "row" | "item" | undefined) => {
    if (kind !== undefined && run === kind) blocks[blocks.length - 1] += `\n${text}`
    else blocks.push(text)
    run = kind
  }
  parseXml(xml, {
    open: (name, attributes) => {
      switch (name) {
        case "w:p":
          paragraph = []
          level = 0
          listed = false
          break
        case "w:pStyle":
          level = styles.get(attributes["w:val"] ?? "") ?? 0
          break
        case "w:numPr":
          listed = true
          break
        case "w:t":
          inText = true
          break
        case "w:tab":
          paragraph.push(" ")
          break
        case "w:br":
        case "w:cr":
          paragraph.push(" ")
          break
        case "w:tbl":
          cells.push(cell)
          rows.push([])
          cell = undefined
          break
        case "w:tr":
          if (rows.length > 0) rows[rows.length - 1] = []
          break
        case "w:tc":
          cell = []
          break
      }
    },
    text: (data) => {
      if (inText) paragraph.push(data)
    },
    close: (name) => {
      switch (name) {
        case "w:t":
          inText = false
          break
        case "w:p": {
          const text = paragraph.join("").replace(/\s+/g, " ").trim()
          paragraph = []
          if (text === "") break
          if (cell !== undefined) cell.push(text)
          else if (level > 0) push(`${"#".repeat(level)} ${text}`, undefined)
          else if (listed) push(`- ${text}`, "item")
          else push(literal(text), undefined)
          break
        }
        case "w:tc":
          if (cell !== undefined && rows.length > 0) rows[rows.length - 1]!.push(cell.join(" ").replace(/\|/g, "\\|"))
          cell = undefined
          break
        case "w:tr": {
          const row = rows[rows.length - 1]
          if (row !== undefined && row.some((c) => c !== "")) {
            // A row of a table inside a cell is part of that cell's text; an outer table's row is a block.
            if (rows.length > 1) cells[cells.length - 1]?.push(row.join(" "))
            else push(`| ${row.join(" | ")} |`, "row")
          }
          if (row !== undefined) rows[rows.length - 1] = []
          break
        }
        case "w:tbl":
          rows.pop()
          cell = cells.pop()
          break
      }
    }
  })
  return blocks.join("\n\n")
}

/** The text and title of a `.docx` file, or why it cannot be read. */
export const docxToText = (bytes: Uint8Array): Result.Result<PageText, string> => {
  const parts = unzipWithin(
    bytes,
    (name) => name === "word/document.xml" || name === "word/styles.xml" || name === "docProps/core.xml"
  )
  if (Result.isFailure(parts)) return Result.fail(parts.failure)
  const document = parts.success["word/document.xml"]
  if (document === undefined) return Result.fail("it is not a Word document: it has no word/document.xml")
  const styles = parts.success["word/styles.xml"]
  const core = parts.success["docProps/core.xml"]
  try {
    const text = bodyText(utf8.decode(document), headingStyles(styles === undefined ? undefined : utf8.decode(styles)))
    const title = core === undefined ? undefined : coreTitle(utf8.decode(core))
    return Result.succeed({ text, title: title ?? /^#{1,6} (.+)$/m.exec(text)?.[1] })
  } catch (error) {
    if (error instanceof TooDeep) return Result.fail(`its XML nests more than ${MAX_DEPTH} elements deep: damaged`)
    throw error
  }
}
