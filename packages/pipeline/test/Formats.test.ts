/**
 * HTML, Word and EPUB files read as documents: the text a reader reads, written as Markdown (headings, lists, table
 * rows), the document's own title, and each bad or hostile file one skip with its reason while the others are read.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Result, Stream } from "effect"
import { strToU8, zipSync } from "fflate"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { decodeMarkup } from "../src/read/formats/Charset.ts"
import { docxToText } from "../src/read/formats/Docx.ts"
import { epubToText } from "../src/read/formats/Epub.ts"
import { htmlToText } from "../src/read/formats/Html.ts"
import { PAGE_BREAK, pdfToText } from "../src/read/formats/Pdf.ts"
import { MAX_UNPACKED_BYTES, unzipWithin } from "../src/read/formats/Zip.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"
import { docxOf, epubOf } from "./Documents.ts"

const PAGE = `<!doctype html><html><head><title>Moon &amp; Mars</title><style>p { color: red }</style>
<script>document.write("tracking")</script></head><body>
<header><a href="/">Home</a><nav><ul><li>Menu one</li><li>Menu two</li></ul></nav></header>
<main><h1>The Moon</h1><p>The Moon is   about <b>384,000&nbsp;km</b> away.<br>Its light takes a second.</p>
<div hidden>hidden text</div><span aria-hidden="true">icon</span>
<h2>Facts</h2><table><tr><th>Name</th><th>Radius</th></tr><tr><td>Moon</td><td>1,737 km</td></tr></table>
<ul><li>One</li><li>Two</li></ul><pre>let x  = 1
let y = 2</pre></main>
<aside>Related links</aside><footer>© 2026 Example</footer></body></html>`

/** A page's text and title, which must convert. */
const page = (html: string) => Result.getOrThrow(htmlToText(html))

describe("HTML", () => {
  it("keeps what a reader reads, as Markdown, and leaves out navigation, scripts, styles and the page's furniture", () => {
    const { text, title } = page(PAGE)
    assert.strictEqual(title, "Moon & Mars")
    assert.strictEqual(
      text,
      [
        "# The Moon",
        "The Moon is about 384,000\u00a0km away. Its light takes a second.",
        "## Facts",
        "| Name | Radius |\n| Moon | 1,737 km |",
        "- One\n- Two",
        "```\nlet x  = 1\nlet y = 2\n```"
      ].join("\n\n")
    )
    for (const left of ["Menu", "tracking", "color", "hidden text", "icon", "Related", "2026", "Home"]) {
      assert.notInclude(text, left)
    }
  })

  it("reads the whole body of a page without <main>, and takes the first heading as title when there is no <title>", () => {
    const { text, title } = page("<body><h2>Notes</h2><p>First.</p><p>Second &lt;b&gt;.</p></body>")
    assert.strictEqual(text, "## Notes\n\nFirst.\n\nSecond <b>.")
    assert.strictEqual(title, "Notes")
    assert.strictEqual(page("<p>no heading</p>").title, undefined)
  })

  it("reads hostile markup without failing: deep nesting, tags never closed, a huge text node", () => {
    const deep = `${"<div><span>".repeat(500)}deep${"</span></div>".repeat(500)}`
    assert.strictEqual(page(deep).text, "deep")
    const stray = `<p>${"<b>".repeat(1000)}text${"</i>".repeat(100_000)}</p>`
    assert.strictEqual(page(stray).text, "text")
    const unclosed = "<main><h2>Open<p>para <b>bold <table><tr><td>cell"
    assert.strictEqual(page(unclosed).text, "## Open\n\npara bold\n\n| cell |")
    const huge = page(`<p>${"word ".repeat(200_000)}</p>`).text
    assert.strictEqual(huge.length, "word ".length * 200_000 - 1)
  })

  it("keeps an article's header, a table inside a cell with that cell, list items with paragraphs, and code as code", () => {
    const html =
      "<body><nav>menu</nav><article><header><h1>Notes</h1></header><p># of people: four</p>" +
      "<table><tr><td>outer A</td><td>outer B<table><tr><td>inner</td></tr></table></td><td>outer C</td></tr></table>" +
      "<ul><li><p>first</p></li><li><p>second</p><p>more</p></li></ul>" +
      "<pre># install\n  make install</pre></article><footer>site footer</footer></body>"
    assert.strictEqual(
      page(html).text,
      [
        "# Notes",
        "\\# of people: four",
        "| outer A | outer B inner | outer C |",
        "- first\n- second",
        "more",
        "```\n# install\n  make install\n```"
      ].join("\n\n")
    )
    assert.strictEqual(page(html).title, "Notes")
  })

  it('ends the content a role="main" element marks where that element ends', () => {
    const html = '<body><div role="main"><p>kept</p></div><div>after</div><footer>page footer</footer></body>'
    assert.strictEqual(page(html).text, "kept")
  })

  it("refuses markup nested deeper than it reads (its cost would grow with the square of the depth)", () => {
    const read = htmlToText(`${"<div>".repeat(5000)}x`)
    assert.isTrue(Result.isFailure(read))
    if (Result.isFailure(read)) assert.include(read.failure, "nests more than")
  })

  it("decodes the encoding a page declares, and windows-1252 where UTF-8 does not fit", () => {
    const latin = Uint8Array.from([...strToU8('<meta charset="iso-8859-1"><p>caf'), 0xe9, ...strToU8("</p>")])
    assert.include(page(decodeMarkup(latin)).text, "café")
    const unlabelled = Uint8Array.from([...strToU8("<p>na"), 0xef, ...strToU8("ve</p>")])
    assert.include(page(decodeMarkup(unlabelled)).text, "naïve")
    assert.include(page(decodeMarkup(strToU8("<p>naïve 😀</p>"))).text, "naïve 😀")
  })
})

/** A PDF of the fixtures (made by `fixtures/pdf/make.sh` with groff, qpdf and ghostscript). */
const pdf = (name: string) => new Uint8Array(readFileSync(new URL(`./fixtures/pdf/${name}.pdf`, import.meta.url)))
const pdfText = (name: string) => Effect.promise(() => pdfToText(pdf(name), 60, Date.now))

describe("PDF files", () => {
  it.effect("give their pages apart by form feeds, broken words mended, running header and footer dropped", () =>
    Effect.gen(function* () {
      const { text, title } = Result.getOrThrow(yield* pdfText("report"))
      assert.strictEqual(title, "Lunar Survey Report")
      const pages = text.split(PAGE_BREAK)
      assert.strictEqual(pages.length, 3)
      // groff broke "telecommunications" and "incomprehensibility" at line ends, on every page.
      assert.notMatch(text, /telecommu-|incomprehensi-/)
      assert.strictEqual(text.match(/telecommunications/g)?.length, 36)
      // "Lunar Survey Report" heads every page and "Page N" ends every page: neither is text.
      assert.notInclude(text, "Lunar Survey Report")
      assert.notMatch(text, /Page \d/)
      assert.include(pages[2], "The closing paragraph names the seismometer.")
      assert.match(pages[0]!, /^Chapter 1 considers/)
    })
  )

  it.effect("read a page of two columns column by column", () =>
    Effect.gen(function* () {
      const { text } = Result.getOrThrow(yield* pdfText("columns"))
      const order = [...text.matchAll(/Paragraph (\d+)/g)].map((m) => Number(m[1]))
      assert.deepStrictEqual(
        order,
        Array.from({ length: 22 }, (_, i) => i + 1)
      )
    })
  )

  it.effect("are one skip each when encrypted, truncated, without a text layer, or past the time limit", () =>
    Effect.gen(function* () {
      for (const [name, reason] of [
        ["encrypted", "encrypted (password-protected)"],
        ["truncated", "not a readable PDF"],
        ["scanned", "no text layer"]
      ] as const) {
        const read = yield* pdfText(name)
        assert.isTrue(Result.isFailure(read), name)
        if (Result.isFailure(read)) assert.include(read.failure, reason)
      }
      const late = yield* Effect.promise(() => pdfToText(pdf("report"), -1, Date.now))
      assert.isTrue(Result.isFailure(late))
      if (Result.isFailure(late)) assert.include(late.failure, "--file-seconds")
    })
  )
})

describe("Word documents", () => {
  const blocks = [
    { heading: 1 as const, text: "Installing" },
    { text: "Run the installer." },
    { text: "# of steps: three" },
    { heading: 2 as const, text: "Linux" },
    {
      table: [
        ["Option", "Meaning"],
        ["--prefix", "where it goes"]
      ]
    }
  ]

  it("give headings, paragraphs and tables, with the title of their properties or else their first heading", () => {
    const { text, title } = Result.getOrThrow(docxToText(docxOf(blocks, "Install Guide")))
    assert.strictEqual(title, "Install Guide")
    assert.strictEqual(
      text,
      "# Installing\n\nRun the installer.\n\n\\# of steps: three\n\n## Linux\n\n| Option | Meaning |\n| --prefix | where it goes |"
    )
    assert.strictEqual(Result.getOrThrow(docxToText(docxOf(blocks))).title, "Installing")
  })

  it("keep a table inside a table's cell with that cell", () => {
    const inner = "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>inner</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    const cell = (content: string) => `<w:tc>${content}</w:tc>`
    const para = (text: string) => `<w:p><w:r><w:t>${text}</w:t></w:r></w:p>`
    const xml = `<w:tbl><w:tr>${cell(para("outer A"))}${cell(para("outer B") + inner)}${cell(para("outer C"))}</w:tr></w:tbl>`
    const { text } = Result.getOrThrow(docxToText(docxOf([{ raw: xml }])))
    assert.strictEqual(text, "| outer A | outer B inner | outer C |")
  })

  it("are one skip each when truncated, not a Word file, a password-protected (OLE) file, or nested too deep", () => {
    const whole = docxOf([{ text: "hello" }])
    const cases = [
      [whole.subarray(0, whole.length - 40), "not a readable ZIP container"],
      [whole.subarray(0, 200), "not a readable ZIP container"],
      [zipSync({ "notes.txt": strToU8("hi") }), "not a Word document"],
      // An encrypted Office file is an OLE compound file, not a ZIP.
      [
        Uint8Array.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, ...new Array(500).fill(0)]),
        "password-protected"
      ],
      [docxOf([{ raw: `${"<w:sdt>".repeat(5000)}${"</w:sdt>".repeat(5000)}` }]), "nests more than"]
    ] as const
    for (const [bytes, reason] of cases) {
      const read = docxToText(bytes)
      assert.isTrue(Result.isFailure(read), reason)
      if (Result.isFailure(read)) assert.include(read.failure, reason)
    }
  })
})

describe("EPUB books", () => {
  it("give their chapters in the spine's order, with the book's title", () => {
    const book = epubOf("Tides", ["<h1>Two</h1><p>Neap tides.</p>", "<h1>One</h1><p>Spring tides.</p>"])
    const { text, title } = Result.getOrThrow(epubToText(book))
    assert.strictEqual(title, "Tides")
    assert.strictEqual(text, "# One\n\nSpring tides.\n\n# Two\n\nNeap tides.")
  })

  it("are read with obfuscated fonts (not DRM), and with a malformed escape in a chapter's path", () => {
    const fonts = epubOf("Fonts", ["<p>Readable.</p>"], { obfuscatedFont: true })
    assert.strictEqual(Result.getOrThrow(epubToText(fonts)).text, "Readable.")
    const odd = epubOf("Odd", ["<p>Odd path.</p>"], { href: () => "text/ch0.xhtml%zz" })
    assert.isTrue(Result.isSuccess(epubToText(odd)))
  })

  it("are one skip each with DRM, without a container, or truncated", () => {
    const book = epubOf("Tides", ["<p>x</p>"])
    const cases = [
      [epubOf("Locked", ["<p>x</p>"], { encrypted: true }), "DRM"],
      [zipSync({ "OEBPS/content.opf": strToU8("<package/>") }), "no META-INF/container.xml"],
      [book.subarray(0, book.length / 2), "not a readable ZIP container"]
    ] as const
    for (const [bytes, reason] of cases) {
      const read = epubToText(bytes)
      assert.isTrue(Result.isFailure(read))
      if (Result.isFailure(read)) assert.include(read.failure, reason)
    }
  })
})

/** `zip` with every entry's declared unpacked size set to `size` (the central directory's and the local headers'). */
const declaring = (zip: Uint8Array, size: number): Uint8Array => {
  const out = zip.slice()
  const view = new DataView(out.buffer)
  for (let at = 0; at + 4 <= out.length; at++) {
    const signature = view.getUint32(at, true)
    if (signature === 0x04034b50) view.setUint32(at + 22, size, true)
    else if (signature === 0x02014b50) view.setUint32(at + 24, size, true)
  }
  return out
}

describe("ZIP containers", () => {
  const entry = { "word/document.xml": strToU8("<w:document>".repeat(100)) }

  it("are refused before inflating when they say they unpack to far more than their size (a zip bomb)", () => {
    const read = unzipWithin(declaring(zipSync(entry), 0xf0000000), () => true)
    assert.isTrue(Result.isFailure(read))
    if (Result.isFailure(read)) assert.include(read.failure, "zip bomb")
    assert.isBelow(MAX_UNPACKED_BYTES, 0xf0000000)
  })

  it("are damaged when an entry unpacks to more than it says (inflating stops past what it says)", () => {
    const read = unzipWithin(declaring(zipSync(entry), 10), () => true)
    assert.isTrue(Result.isFailure(read))
    if (Result.isFailure(read)) assert.include(read.failure, "more than it says")
    // The same entry, honest, unpacks whole.
    assert.strictEqual(Result.getOrThrow(unzipWithin(zipSync(entry), () => true))["word/document.xml"]!.length, 1200)
  })
})

describe("a folder of documents", () => {
  const Base = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)

  it.effect("is indexed whole, each bad file one skip, and results say the section they start in", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "funcpipe-formats-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      writeFileSync(join(dir, "page.html"), PAGE)
      writeFileSync(
        join(dir, "guide.docx"),
        docxOf([{ heading: 1, text: "Installing" }, { heading: 2, text: "Linux" }, { text: "Use the tarball." }])
      )
      writeFileSync(join(dir, "book.epub"), epubOf("Tides", ["<h1>Neap</h1><p>Neap tides are small.</p>"]))
      writeFileSync(join(dir, "broken.docx"), "not a zip at all")
      writeFileSync(join(dir, "locked.epub"), epubOf("Locked", ["<p>x</p>"], { encrypted: true }))
      writeFileSync(join(dir, "empty.html"), "<html><body><script>x()</script></body></html>")
      copyFileSync(new URL("./fixtures/pdf/report.pdf", import.meta.url), join(dir, "report.pdf"))
      copyFileSync(new URL("./fixtures/pdf/encrypted.pdf", import.meta.url), join(dir, "encrypted.pdf"))
      copyFileSync(new URL("./fixtures/pdf/columns.pdf", import.meta.url), join(dir, "columns.pdf"))
      const records = yield* DocumentSource.use((source) => Stream.runCollect(source.read([dir]))).pipe(
        Effect.provide(DocumentSource.layer)
      )
      const skipped = records.flatMap((r) => (Result.isFailure(r) ? [r.failure.message] : []))
      assert.deepStrictEqual(
        skipped.map((m) => m.split(":")[0]),
        ["broken.docx", "empty.html", "encrypted.pdf", "locked.epub"]
      )
      assert.include(skipped[0], "not a readable ZIP container")
      assert.include(skipped[1], "no text to index")
      assert.include(skipped[2], "password-protected")
      assert.include(skipped[3], "DRM")
      const read = records.flatMap((r) => (Result.isSuccess(r) ? [[r.success.doc.docId, r.success.doc.title]] : []))
      assert.deepStrictEqual(read, [
        ["book.epub", "Tides"],
        ["columns.pdf", "columns.pdf"],
        ["guide.docx", "Installing"],
        ["page.html", "Moon & Mars"],
        ["report.pdf", "Lunar Survey Report"]
      ])
      const file = join(dir, "index.db")
      yield* indexPaths([dir]).pipe(Effect.provide(Layer.mergeAll(layerSqlite(file), DocumentSource.layer)))
      const answer = yield* queryIndex("tarball", 3, { mode: "lexical" }).pipe(Effect.provide(layerSqlite(file)))
      assert.strictEqual(answer.results[0]!.chunk.docId, "guide.docx")
      // The one chunk of the file starts under its first heading.
      assert.deepStrictEqual(answer.shown![0]!.section, ["Installing"])
      assert.strictEqual(answer.shown![0]!.passage, "Installing Linux Use the tarball.")
      assert.isUndefined(answer.shown![0]!.page)
      // A PDF's results say the page they start on.
      const closing = yield* queryIndex("seismometer", 1, { mode: "lexical" }).pipe(Effect.provide(layerSqlite(file)))
      assert.strictEqual(closing.results[0]!.chunk.docId, "report.pdf")
      assert.strictEqual(closing.shown![0]!.page, 3)
      const early = yield* queryIndex("committee 2", 1, { mode: "lexical" }).pipe(Effect.provide(layerSqlite(file)))
      assert.strictEqual(early.shown![0]!.page, 1)
      // A PDF of one page: page 1 too.
      const single = yield* queryIndex("oceans answer", 1, { mode: "lexical" }).pipe(Effect.provide(layerSqlite(file)))
      assert.deepStrictEqual([single.results[0]!.chunk.docId, single.shown![0]!.page], ["columns.pdf", 1])
    }).pipe(Effect.scoped, Effect.provide(Base))
  )
})
