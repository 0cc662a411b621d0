/**
 * An EPUB book as a document's text: its chapters in reading order (the package's spine), each read as HTML, with the
 * book's title from its metadata. A book with DRM (an `encryption.xml` naming encrypted content) is skipped with that
 * reason. Parsed with `htmlparser2` (the package document in XML mode) from the entries `fflate` unpacks.
 */

import { Result } from "effect"
import { Parser } from "htmlparser2"
import { decodeMarkup } from "./Charset.ts"
import { htmlToText, type PageText } from "./Html.ts"
import { unzipWithin } from "./Zip.ts"

/** The elements of an XML document, in order, with their attributes and text (enough for container and package files). */
const elementsOf = (xml: string): Array<{ name: string; attributes: Record<string, string>; text: string }> => {
  const found: Array<{ name: string; attributes: Record<string, string>; text: string }> = []
  const open: Array<{ name: string; attributes: Record<string, string>; text: string }> = []
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        const element = { name: name.toLowerCase(), attributes, text: "" }
        found.push(element)
        open.push(element)
      },
      ontext(data) {
        for (const element of open) element.text += data
      },
      onclosetag() {
        open.pop()
      }
    },
    { xmlMode: true, decodeEntities: true }
  )
  parser.write(xml)
  parser.end()
  return found
}

/** An element's name without its namespace prefix (`dc:title` is `title`). */
const local = (name: string) => name.slice(name.indexOf(":") + 1)

/** A path inside the container, resolved against the folder of `base` (`OEBPS/content.opf`). */
const resolve = (base: string, href: string): string => {
  const parts = base.split("/").slice(0, -1)
  for (const part of decodeURIComponent(href.split("#")[0]!).split("/")) {
    if (part === "..") parts.pop()
    else if (part !== "." && part !== "") parts.push(part)
  }
  return parts.join("/")
}

const utf8 = new TextDecoder("utf-8")

/** The text of an EPUB file's chapters, in spine order, and its title; or why it cannot be read. */
export const epubToText = (bytes: Uint8Array): Result.Result<PageText, string> => {
  // First the small files that say where everything is; the chapters once the spine names them.
  const head = unzipWithin(bytes, (name) => name === "META-INF/container.xml" || name === "META-INF/encryption.xml")
  if (Result.isFailure(head)) return Result.fail(head.failure)
  const container = head.success["META-INF/container.xml"]
  if (container === undefined) return Result.fail("it is not an EPUB book: it has no META-INF/container.xml")
  const encryption = head.success["META-INF/encryption.xml"]
  if (encryption !== undefined && /EncryptedData/i.test(utf8.decode(encryption))) {
    return Result.fail("it is encrypted (DRM): only books without DRM can be read")
  }
  const rootfile = elementsOf(utf8.decode(container)).find((e) => e.name === "rootfile")?.attributes["full-path"]
  if (rootfile === undefined) return Result.fail("it is not an EPUB book: its container names no package document")
  const opfFiles = unzipWithin(bytes, (name) => name === rootfile)
  if (Result.isFailure(opfFiles)) return Result.fail(opfFiles.failure)
  const opf = opfFiles.success[rootfile]
  if (opf === undefined) return Result.fail(`it is damaged: its package document ${rootfile} is missing`)
  const elements = elementsOf(utf8.decode(opf))
  const title = elements
    .find((e) => local(e.name) === "title")
    ?.text.replace(/\s+/g, " ")
    .trim()
  const hrefs = new Map<string, string>()
  for (const e of elements) {
    if (local(e.name) === "item" && e.attributes["id"] !== undefined && e.attributes["href"] !== undefined) {
      hrefs.set(e.attributes["id"], resolve(rootfile, e.attributes["href"]))
    }
  }
  const spine = elements
    .filter((e) => local(e.name) === "itemref" && e.attributes["linear"] !== "no")
    .flatMap((e) => {
      const path = hrefs.get(e.attributes["idref"] ?? "")
      return path === undefined ? [] : [path]
    })
  if (spine.length === 0) return Result.fail("it is not an EPUB book: its package lists no chapters")
  const wanted = new Set(spine)
  const chapters = unzipWithin(bytes, (name) => wanted.has(name))
  if (Result.isFailure(chapters)) return Result.fail(chapters.failure)
  const texts = spine.flatMap((path) => {
    const chapter = chapters.success[path]
    return chapter === undefined ? [] : [htmlToText(decodeMarkup(chapter)).text]
  })
  const text = texts.filter((t) => t !== "").join("\n\n")
  return Result.succeed({ text, title: title === "" ? undefined : (title ?? /^#{1,6} (.+)$/m.exec(text)?.[1]) })
}
