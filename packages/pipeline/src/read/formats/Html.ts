/**
 * HTML as a document's text: what a reader of the page reads, written as Markdown so the rest of FuncPipe sees its
 * structure (headings give results their section, tables stay rows of cells, `<pre>` stays code). Navigation,
 * scripts, styles, forms, hidden elements and the page's own header and footer are left out (an article's header
 * stays); where the page marks its content (`<main>`, or `role="main"`), that alone is kept. Loaded only when an
 * HTML, Word or EPUB file is read.
 */

import { Result } from "effect"
import { Parser } from "htmlparser2"
import { MAX_DEPTH, TooDeep } from "./Xml.ts"

/** What a page gives: its text as Markdown, and its title (`<title>`, else its first heading) if it has one. */
export interface PageText {
  readonly text: string
  readonly title: string | undefined
}

/** Elements whose content a reader does not read. */
const SKIPPED = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "svg",
  "math",
  "nav",
  "aside",
  "form",
  "button",
  "select",
  "textarea",
  "iframe",
  "object",
  "embed",
  "canvas",
  "dialog"
])

/** Roles that mark a page's furniture rather than its content. */
const SKIPPED_ROLES = new Set(["navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"])

/** Elements inside which a `<header>` or `<footer>` belongs to the content (an article's byline), not the page. */
const CONTENT = new Set(["article", "main", "section"])

/** Elements that end a line of text (a block, in the page's layout). */
const BLOCKS = new Set([
  "p",
  "div",
  "section",
  "article",
  "main",
  "header",
  "footer",
  "address",
  "blockquote",
  "figure",
  "figcaption",
  "ul",
  "ol",
  "dl",
  "dt",
  "dd",
  "table",
  "thead",
  "tbody",
  "tfoot",
  "caption",
  "hr",
  "body",
  "html",
  "details",
  "summary",
  "fieldset",
  "legend",
  "li",
  "tr"
])

/** Elements with no closing tag: they never enclose text. */
const VOID = new Set(["br", "hr", "img", "input", "meta", "link", "area", "base", "col", "source", "track", "wbr"])

const HEADING = /^h([1-6])$/

/** Text that Markdown would read as markup at a line's start (`# x`, `- x`, `> x`, `| x`), made plain with `\`. */
export const literal = (text: string): string =>
  /^(?:#{1,6}(?:\s|$)|[-+*]\s|[>|]|```|~~~)/.test(text) ? `\\${text}` : text

/**
 * Text of one output stream (the whole page, or its marked content): blocks of lines, whitespace collapsed. The
 * current line is kept as parts joined when it ends: asking whether a growing string ends in a space flattens it,
 * which made long paragraphs cost time in the square of their length.
 */
class Writer {
  private readonly blocks: Array<string> = []
  private parts: Array<string> = []
  /** Whether the current line is empty or ends in a space (where collapsed whitespace adds nothing). */
  private spaced = true
  /** A list item begun and not yet given text: its bullet goes before its first text. */
  private bullet = false
  /** Whether the last block is a run of table rows or list items, which the next one of its kind joins. */
  private run: "row" | "item" | undefined

  /** Adds inline text; runs of whitespace become one space. */
  text(data: string): void {
    let collapsed = data.replace(/[\t\n\f\r ]+/g, " ")
    if (this.spaced && collapsed.startsWith(" ")) collapsed = collapsed.slice(1)
    if (collapsed === "") return
    this.parts.push(collapsed)
    this.spaced = collapsed.endsWith(" ")
  }

  /** Starts a list item: what came before ends, and the item's text will follow a bullet. */
  item(): void {
    this.block()
    this.bullet = true
  }

  /** Ends the current line as a block of its own: a paragraph, or a list item that joins the list before it. */
  block(): void {
    const done = this.take().trim()
    if (done === "") return
    if (this.bullet) {
      this.bullet = false
      this.push(`- ${done}`, "item")
    } else this.push(literal(done), undefined)
  }

  /** Ends a list item; a bullet never given text is dropped. */
  endItem(): void {
    this.block()
    this.bullet = false
  }

  /** Adds a whole block as it is (a heading, code, or a table row that joins the rows before it). */
  whole(text: string, kind?: "row"): void {
    this.block()
    if (text.trim() !== "") this.push(text, kind)
  }

  private push(text: string, kind: "row" | "item" | undefined): void {
    if (kind !== undefined && this.run === kind) this.blocks[this.blocks.length - 1] += `\n${text}`
    else this.blocks.push(text)
    this.run = kind
  }

  /** Takes the current line's text away (for a heading, code or a cell being collected). */
  take(): string {
    const taken = this.parts.join("")
    this.parts = []
    this.spaced = true
    return taken
  }

  /** Puts text taken away back (a cell's text around a table inside it). */
  restore(text: string): void {
    if (text === "") return
    this.parts.push(text)
    this.spaced = text.endsWith(" ")
  }

  done(): string {
    this.block()
    return this.blocks.join("\n\n")
  }
}

/** An open element: whether it is left out, marks the page's content, or is content a header may belong to. */
interface Open {
  readonly name: string
  readonly skip: boolean
  readonly main: boolean
  readonly content: boolean
}

/** An open table: the cells of its current row, and what a cell it is inside held before it began. */
interface Table {
  row: Array<string> | undefined
  inCell: boolean
  /** A table inside a cell: its rows' text, which goes back into that cell. */
  readonly nested: Array<string> | undefined
  readonly saved: ReadonlyArray<string>
}

/** A code block's text fenced by a run of backticks longer than any it holds. */
const fenced = (code: string): string => {
  const longest = Math.max(2, ...Array.from(code.matchAll(/`+/g), (m) => m[0].length))
  const fence = "`".repeat(longest + 1)
  return `${fence}\n${code.replace(/^\n/, "").replace(/\s+$/, "")}\n${fence}`
}

const convert = (html: string): PageText => {
  const all = new Writer()
  const content = new Writer()
  let title: string | undefined
  let inTitle = false
  let titleText = ""
  const open: Array<Open> = []
  /** How many open elements are left out (their content is skipped while above 0). */
  let skipping = 0
  let marked = 0
  let contentDepth = 0
  let mains = 0
  let pre = 0
  let code: Array<string> = []
  let heading = 0
  const tables: Array<Table> = []
  const writers = () => (marked > 0 ? [all, content] : [all])
  const inCell = () => tables.length > 0 && tables[tables.length - 1]!.inCell

  /** Writes the heading being collected as a `#` line (at its end tag, or at a block that leaves it unclosed). */
  const endHeading = () => {
    for (const w of writers()) {
      const text = w.take().trim()
      if (text !== "") w.whole(`${"#".repeat(heading)} ${text}`)
    }
    heading = 0
  }
  /** Ends a block, or inside a table cell (which may hold paragraphs) puts a space. */
  const blockBreak = () => {
    if (heading > 0) endHeading()
    for (const w of writers()) {
      if (inCell()) w.text(" ")
      else w.block()
    }
  }

  const parser = new Parser(
    {
      onopentag(name, attributes) {
        const role = attributes["role"]?.toLowerCase()
        const skip =
          SKIPPED.has(name) ||
          (role !== undefined && SKIPPED_ROLES.has(role)) ||
          attributes["aria-hidden"] === "true" ||
          "hidden" in attributes ||
          ((name === "header" || name === "footer") && contentDepth === 0)
        const main = !skip && skipping === 0 && (name === "main" || role === "main")
        const isContent = CONTENT.has(name) || role === "main"
        if (!VOID.has(name)) {
          if (open.length >= MAX_DEPTH) throw new TooDeep()
          open.push({ name, skip, main, content: isContent })
          if (skip) skipping++
          if (isContent) contentDepth++
        }
        if (skip || skipping > 0) return
        if (name === "title") {
          inTitle = true
          return
        }
        if (main) {
          blockBreak()
          mains++
          marked++
          return
        }
        if (pre > 0) {
          if (name === "br") code.push("\n")
          if (name === "pre") pre++
          return
        }
        const level = HEADING.exec(name)?.[1]
        if (level !== undefined) {
          blockBreak()
          heading = Number(level)
          return
        }
        if (name === "pre") {
          blockBreak()
          pre = 1
          code = []
        } else if (name === "table") {
          const cell = inCell()
          const saved = cell ? writers().map((w) => w.take()) : []
          if (!cell) blockBreak()
          tables.push({ row: undefined, inCell: false, nested: cell ? [] : undefined, saved })
        } else if (name === "tr" && tables.length > 0) {
          tables[tables.length - 1]!.row = []
        } else if ((name === "td" || name === "th") && tables.length > 0) {
          const table = tables[tables.length - 1]!
          table.row ??= []
          for (const w of writers()) w.take()
          table.inCell = true
        } else if (name === "li" && !inCell()) {
          if (heading > 0) endHeading()
          for (const w of writers()) w.item()
        } else if (name === "br") {
          for (const w of writers()) w.text(" ")
        } else if (BLOCKS.has(name)) blockBreak()
      },
      ontext(data) {
        if (skipping > 0) return
        if (inTitle) titleText += data
        else if (pre > 0) code.push(data)
        else for (const w of writers()) w.text(data)
      },
      onclosetag(name) {
        if (VOID.has(name)) return
        const element = open.pop()
        if (element === undefined) return
        if (element.content) contentDepth--
        if (element.skip) {
          skipping--
          return
        }
        if (skipping > 0) return
        if (name === "title" && inTitle) {
          inTitle = false
          const text = titleText.replace(/\s+/g, " ").trim()
          if (title === undefined && text !== "") title = text
          return
        }
        if (pre > 0) {
          if (name !== "pre" || --pre > 0) return
          const text = fenced(code.join(""))
          if (code.join("").trim() !== "") for (const w of writers()) w.whole(text)
          return
        }
        if (element.main) {
          blockBreak()
          marked--
          return
        }
        if (heading > 0 && HEADING.test(name)) {
          endHeading()
          return
        }
        const table = tables[tables.length - 1]
        if ((name === "td" || name === "th") && table?.inCell === true && table.row !== undefined) {
          table.inCell = false
          // The page's and its content's cell text are the same text: the page's stands for both.
          const taken = writers().map((w) => w.take().trim())
          table.row.push(taken[0]!.replace(/\|/g, "\\|"))
          return
        }
        if (name === "tr" && table?.row !== undefined) {
          const row = table.row
          table.row = undefined
          if (row.some((cell) => cell !== "")) {
            if (table.nested !== undefined) table.nested.push(row.join(" "))
            else for (const w of writers()) w.whole(`| ${row.join(" | ")} |`, "row")
          }
          return
        }
        if (name === "table" && table !== undefined) {
          tables.pop()
          if (table.nested !== undefined) {
            // A table inside a cell: its rows become part of that cell's text.
            writers().forEach((w, i) => {
              w.restore(table.saved[i] ?? "")
              w.text(` ${table.nested!.join(" ")} `)
            })
          } else blockBreak()
          return
        }
        if (name === "li" && !inCell()) {
          if (heading > 0) endHeading()
          for (const w of writers()) w.endItem()
          return
        }
        if (BLOCKS.has(name)) blockBreak()
      }
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true, recognizeSelfClosing: true }
  )
  parser.write(html)
  parser.end()
  const kept = content.done()
  const text = mains > 0 && kept !== "" ? kept : all.done()
  return { text, title: title ?? /^#{1,6} (.+)$/m.exec(text)?.[1] }
}

/**
 * The text of an HTML page as Markdown: headings as `#` lines, list items as `- ` lines, table rows as `| a | b |`
 * lines, `<pre>` fenced as code, paragraphs apart by a blank line; entities decoded; text that Markdown would take for
 * markup escaped. A page nested more than `MAX_DEPTH` elements deep is refused (its cost would grow with the square of
 * the depth).
 */
export const htmlToText = (html: string): Result.Result<PageText, string> => {
  try {
    return Result.succeed(convert(html))
  } catch (error) {
    if (error instanceof TooDeep) return Result.fail(`its markup nests more than ${MAX_DEPTH} elements deep`)
    throw error
  }
}
