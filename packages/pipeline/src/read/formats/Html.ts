/**
 * HTML as a document's text: what a reader of the page reads, written as Markdown so the rest of FuncPipe sees its
 * structure (headings give results their section, tables stay rows of cells). Navigation, scripts, styles, forms,
 * hidden elements and the page's own header and footer are left out; where the page marks its content (`<main>`),
 * that alone is kept. Loaded only when an HTML, DOCX or EPUB file is read.
 */

import { Parser } from "htmlparser2"

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
  "legend"
])

/** Elements with no closing tag: they never enclose text. */
const VOID = new Set(["br", "hr", "img", "input", "meta", "link", "area", "base", "col", "source", "track", "wbr"])

const HEADING = /^h([1-6])$/

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

  /** Adds inline text; runs of whitespace become one space (inside `<pre>`, the text is kept as it is). */
  text(data: string, pre: boolean): void {
    if (data === "") return
    if (pre) {
      this.parts.push(data)
      this.spaced = data.endsWith(" ")
      return
    }
    let collapsed = data.replace(/[\t\n\f\r ]+/g, " ")
    if (this.spaced && collapsed.startsWith(" ")) collapsed = collapsed.slice(1)
    if (collapsed === "") return
    this.parts.push(collapsed)
    this.spaced = collapsed.endsWith(" ")
  }

  /** Whether the last block is a run of table rows or list items, which the next one of its kind joins. */
  private run: "row" | "item" | undefined

  /** Ends the current line as a block of its own (a paragraph, or a list item that joins the list before it). */
  block(): void {
    const done = this.take().trim()
    if (done === "") return
    this.push(done, done.startsWith("- ") ? "item" : undefined)
  }

  /** Adds a whole block (a heading, or a table row that joins the rows before it), ending what came before. */
  whole(text: string, kind?: "row"): void {
    this.block()
    if (text.trim() !== "") this.push(text, kind)
  }

  private push(text: string, kind: "row" | "item" | undefined): void {
    if (kind !== undefined && this.run === kind) this.blocks[this.blocks.length - 1] += `\n${text}`
    else this.blocks.push(text)
    this.run = kind
  }

  /** Takes the current line's text away (for a heading or a cell being collected). */
  take(): string {
    const taken = this.parts.join("")
    this.parts = []
    this.spaced = true
    return taken
  }

  done(): string {
    this.block()
    return this.blocks.join("\n\n")
  }
}

/**
 * The text of an HTML page as Markdown: headings as `#` lines, list items as `- ` lines, table rows as `| a | b |`
 * lines, paragraphs apart by a blank line, `<pre>` kept as written. Entities are decoded.
 */
export const htmlToText = (html: string): PageText => {
  const all = new Writer()
  const content = new Writer()
  let title: string | undefined
  let inTitle = false
  let titleText = ""
  /** How many open elements are left out (their content is skipped while above 0). */
  let skipping = 0
  const skippedStack: Array<boolean> = []
  let pre = 0
  /** Inside `<main>` (or `role="main"`): that content is also kept apart, and is the text when the page has it. */
  let marked = 0
  let mains = 0
  let heading = 0
  let cells: Array<string> | undefined
  let inCell = false
  const writers = () => (marked > 0 ? [all, content] : [all])
  /** Writes the heading being collected as a `#` line (at its end tag, or at a block that leaves it unclosed). */
  const endHeading = () => {
    for (const w of writers()) {
      const text = w.take().trim()
      if (text !== "") w.whole(`${"#".repeat(heading)} ${text}`)
    }
    heading = 0
  }
  /** Ends a block, or inside a table cell (which Word's converter fills with paragraphs) puts a space. */
  const blockBreak = () => {
    if (heading > 0) endHeading()
    for (const w of writers()) {
      if (inCell) w.text(" ", false)
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
          // The page's own header and footer (not an article's), when they are not inside marked content.
          ((name === "header" || name === "footer") && marked === 0 && mains === 0)
        if (!VOID.has(name)) skippedStack.push(skip)
        if (skip) {
          if (!VOID.has(name)) skipping++
          return
        }
        if (skipping > 0) return
        if (name === "title") {
          inTitle = true
          return
        }
        if (name === "main" || role === "main") {
          mains++
          marked++
        }
        const level = HEADING.exec(name)?.[1]
        if (level !== undefined) {
          for (const w of writers()) w.block()
          heading = Number(level)
          return
        }
        if (name === "pre") {
          for (const w of writers()) w.block()
          pre++
        } else if (name === "tr") {
          for (const w of writers()) w.block()
          cells = []
        } else if ((name === "td" || name === "th") && cells !== undefined) {
          for (const w of writers()) w.take()
          inCell = true
        } else if (name === "li" && !inCell) {
          for (const w of writers()) {
            w.block()
            w.text("- ", true)
          }
        } else if (name === "br") {
          for (const w of writers()) w.text(pre > 0 ? "\n" : " ", pre > 0)
        } else if (BLOCKS.has(name) || name === "li") blockBreak()
      },
      ontext(data) {
        if (skipping > 0) return
        if (inTitle) {
          titleText += data
          return
        }
        for (const w of writers()) w.text(data, pre > 0)
      },
      onclosetag(name) {
        if (!VOID.has(name)) {
          const skipped = skippedStack.pop()
          if (skipped === true) {
            skipping--
            return
          }
        }
        if (skipping > 0) return
        if (name === "title") {
          inTitle = false
          const text = titleText.replace(/\s+/g, " ").trim()
          if (title === undefined && text !== "") title = text
          return
        }
        if (heading > 0 && HEADING.test(name)) {
          endHeading()
          return
        }
        if ((name === "td" || name === "th") && inCell && cells !== undefined) {
          inCell = false
          // One stream's cell text stands for both (the page's and its content's are the same text).
          const taken = writers().map((w) => w.take().trim())
          cells.push(taken[0]!.replace(/\|/g, "\\|"))
          return
        }
        if (name === "tr" && cells !== undefined) {
          if (cells.some((cell) => cell !== "")) for (const w of writers()) w.whole(`| ${cells.join(" | ")} |`, "row")
          cells = undefined
          return
        }
        if (name === "pre") {
          pre = Math.max(0, pre - 1)
          for (const w of writers()) w.block()
          return
        }
        if (name === "main" && marked > 0) {
          for (const w of writers()) w.block()
          marked--
          return
        }
        if (BLOCKS.has(name) || name === "li") blockBreak()
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
