/**
 * `npm run bench:formats -- [--html-mb N] [--pdf-mb N] [--dir PATH] [--keep]`: indexing speed and peak memory of the
 * CLI on folders of realistic HTML pages and PDF files, each at least 200 MB by default.
 *
 * - HTML: the benchmark's synthetic documents (`Corpus.ts`) as web pages, each with a head, styles, a script, a
 *   navigation bar, a footer, sections under `<h2>` headings and a table, a hundred to a folder.
 * - PDF: the synthetic text typeset by Debian's groff (`groff -ms -Tpdf`: running header, page numbers, hyphenated
 *   justified lines) into 24 distinct reports of about 60 pages, each copied under new names until the folder holds
 *   the size asked for (pdf.js parses every copy in full). Skipped, with a note, where groff is not installed.
 */
import { spawnSync } from "node:child_process"
import { copyFileSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { cliBundle, runNode } from "./Child.ts"
import { syntheticDocs } from "./Corpus.ts"
import { count, fixed, kibToMb, markdownTable } from "./Table.ts"

const { values: flags } = parseArgs({
  options: {
    "html-mb": { type: "string", default: "200" },
    "pdf-mb": { type: "string", default: "200" },
    dir: { type: "string" },
    keep: { type: "boolean", default: false }
  }
})
const HTML_BYTES = Number(flags["html-mb"]) * 1e6
const PDF_BYTES = Number(flags["pdf-mb"]) * 1e6
const work = flags.dir ?? join(tmpdir(), "funcpipe-bench-formats")
const log = (line: string) => void process.stderr.write(`${line}\n`)

const bundle = cliBundle()
if (bundle === undefined) {
  console.error("bench:formats: the CLI is not built; run npm run build first")
  process.exit(2)
}

const escapeHtml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** A web page of a synthetic document: sections of five paragraphs under headings, a table, and the page's furniture. */
const pageOf = (doc: { readonly title: string; readonly body: string }, n: number): string => {
  const paragraphs = doc.body.split(/(?<=\.) /).reduce<Array<string>>((out, sentence, i) => {
    if (i % 4 === 0) out.push(sentence)
    else out[out.length - 1] += ` ${sentence}`
    return out
  }, [])
  const sections = paragraphs
    .map((p, i) => `${i % 5 === 0 ? `<h2>Section ${i / 5 + 1}</h2>` : ""}<p>${escapeHtml(p)}</p>`)
    .join("\n")
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(doc.title)}</title>` +
    "<style>body{font-family:sans-serif}nav a{margin:0 1em}</style>" +
    `<script>window.analytics=${JSON.stringify({ page: n })}</script></head><body>` +
    '<nav><a href="/">Home</a><a href="/docs">Docs</a><a href="/blog">Blog</a><a href="/about">About</a></nav>' +
    `<main><h1>${escapeHtml(doc.title)}</h1>\n${sections}\n` +
    `<table><tr><th>Item</th><th>Value</th></tr><tr><td>Page</td><td>${n}</td></tr></table></main>` +
    "<footer>Copyright 2026 Example. All rights reserved.</footer></body></html>\n"
  )
}

const writeHtml = (dir: string): { files: number; bytes: number } => {
  let files = 0
  let bytes = 0
  for (const doc of syntheticDocs(42, HTML_BYTES * 0.8)) {
    const folder = join(dir, String(Math.floor(files / 100)).padStart(4, "0"))
    if (files % 100 === 0) mkdirSync(folder, { recursive: true })
    const page = pageOf(doc, files)
    writeFileSync(join(folder, `${doc.id}.html`), page)
    bytes += Buffer.byteLength(page)
    files++
    if (bytes >= HTML_BYTES) break
  }
  return { files, bytes }
}

/** groff's input for a report of synthetic text: a title, a running header and footer, justified hyphenated text. */
const roffOf = (title: string, body: string) =>
  [
    ".ds CH Synthetic Report",
    ".ds CF Page %",
    ".hy 1",
    ".TL",
    title,
    ...body.split(/(?<=\.) /).flatMap((s, i) => (i % 5 === 0 ? [".PP", s] : [s]))
  ]
    .map((line) => (line.startsWith(".") ? line : line.replace(/^[.']/, "\\&$&")))
    .join("\n")

const writePdfs = (dir: string): { files: number; bytes: number; pages: number } | string => {
  if (spawnSync("groff", ["--version"]).status !== 0) return "groff is not installed (apt install groff)"
  mkdirSync(dir, { recursive: true })
  const sources: Array<{ path: string; bytes: number; pages: number }> = []
  let text = ""
  let made = 0
  for (const doc of syntheticDocs(7, 24 * 150_000)) {
    text += ` ${doc.body}`
    if (text.length < 150_000) continue
    const path = join(dir, `source-${made}.pdf`)
    const rendered = spawnSync("groff", ["-ms", "-Tpdf"], { input: roffOf(`Report ${made}`, text), maxBuffer: 1 << 28 })
    if (rendered.status !== 0) return `groff failed: ${rendered.stderr.toString().trim()}`
    writeFileSync(path, rendered.stdout)
    const pages = (rendered.stdout.toString("latin1").match(/\/Type\s*\/Page\b/g) ?? []).length
    sources.push({ path, bytes: rendered.stdout.length, pages })
    text = ""
    if (++made === 24) break
  }
  let files = 0
  let bytes = 0
  let pages = 0
  while (bytes < PDF_BYTES) {
    const source = sources[files % sources.length]!
    copyFileSync(source.path, join(dir, `report-${String(files).padStart(5, "0")}.pdf`))
    bytes += source.bytes
    pages += source.pages
    files++
  }
  for (const source of sources) rmSync(source.path)
  return { files, bytes, pages }
}

const index = async (label: string, folder: string) => {
  const db = join(work, `${label}.db`)
  rmSync(db, { force: true })
  log(`${label}: indexing…`)
  const run = await runNode([bundle.path, "index", folder, "--index", db, "--json"], join(work, "rss.txt"))
  if (run.code !== 0) throw new Error(`${label}: index failed (${run.code}): ${run.stderr.trim()}`)
  const report = JSON.parse(run.stdout) as { readonly documents: number; readonly chunks: number }
  return { run, documents: report.documents, chunks: report.chunks, size: statSync(db).size }
}

rmSync(work, { recursive: true, force: true })
mkdirSync(work, { recursive: true })
log(`formats: work folder ${work}, load ${loadavg()[0]!.toFixed(2)}`)
const rows: Array<Array<string>> = []
log("writing the HTML pages…")
const html = writeHtml(join(work, "html"))
const htmlRun = await index("html", join(work, "html"))
rows.push([
  "HTML pages",
  count(html.files),
  fixed(html.bytes / 1e6, 1),
  fixed(htmlRun.run.wallMs / 1000, 2),
  `${fixed(html.bytes / 1e6 / (htmlRun.run.wallMs / 1000), 1)} MB/s`,
  kibToMb(htmlRun.run.peakRssKiB),
  count(htmlRun.chunks)
])
log("typesetting the PDF files with groff…")
const pdf = writePdfs(join(work, "pdf"))
let note = ""
if (typeof pdf === "string") note = `PDF: skipped, ${pdf}.`
else {
  const pdfRun = await index("pdf", join(work, "pdf"))
  rows.push([
    "PDF files (groff)",
    count(pdf.files),
    fixed(pdf.bytes / 1e6, 1),
    fixed(pdfRun.run.wallMs / 1000, 2),
    `${fixed(pdf.pages / (pdfRun.run.wallMs / 1000), 0)} pages/s (${count(pdf.pages)} pages)`,
    kibToMb(pdfRun.run.peakRssKiB),
    count(pdfRun.chunks)
  ])
}
console.log(`## Indexing documents of each format (load ${loadavg()[0]!.toFixed(2)} at the end)`)
console.log()
console.log(markdownTable(["folder", "files", "MB", "index wall s", "speed", "peak RSS MB", "chunks"], rows))
if (note !== "") console.log(`\n${note}`)
if (!flags.keep) rmSync(work, { recursive: true, force: true })
