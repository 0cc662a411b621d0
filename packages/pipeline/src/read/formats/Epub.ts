/**
 * An EPUB book as a document's text: its chapters in reading order (the package's spine), each read as HTML, with the
 * book's title from its metadata. A book whose chapters are encrypted (DRM) is skipped with that reason; fonts
 * obfuscated as the EPUB and Adobe specifications allow (in books without DRM) are not DRM. The container is
 * unpacked by `Zip.ts`, its XML read by `Xml.ts`.
 */

import { Result } from "effect"
import { decodeMarkup } from "./Charset.ts"
import { htmlToText, type PageText } from "./Html.ts"
import { MAX_DEPTH, parseXml, TooDeep } from "./Xml.ts"
import { unzipWithin } from "./Zip.ts"

/** An element of a container or package file: its name without a namespace prefix, its attributes, its own text. */
interface Element {
  readonly name: string
  readonly attributes: Record<string, string>
  text: string
}

/**
 * The elements of an XML document, in order, each with the text directly inside it (text goes to the innermost open
 * element only, so the work is linear in the file's size).
 */
const elementsOf = (xml: string): Array<Element> => {
  const found: Array<Element> = []
  const open: Array<Element> = []
  parseXml(xml, {
    open: (name, attributes) => {
      const element = { name: name.slice(name.indexOf(":") + 1).toLowerCase(), attributes, text: "" }
      found.push(element)
      open.push(element)
    },
    text: (data) => {
      const innermost = open[open.length - 1]
      if (innermost !== undefined) innermost.text += data
    },
    close: () => void open.pop()
  })
  return found
}

/** A path inside the container, resolved against the folder of `base` (`OEBPS/content.opf`). */
const resolve = (base: string, href: string): string => {
  const parts = base.split("/").slice(0, -1)
  const path = href.split("#")[0]!
  let decoded = path
  try {
    decoded = decodeURIComponent(path)
  } catch {
    // A malformed escape (`%zz`): the path as written.
  }
  for (const part of decoded.split("/")) {
    if (part === "..") parts.pop()
    else if (part !== "." && part !== "") parts.push(part)
  }
  return parts.join("/")
}

/** The font obfuscation algorithms of the IDPF and Adobe: not DRM, and only ever applied to fonts. */
const FONT_OBFUSCATION = new Set(["http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"])

const utf8 = new TextDecoder("utf-8")

/** The text of an EPUB file's chapters, in spine order, and its title; or why it cannot be read. */
const readBook = (bytes: Uint8Array): Result.Result<PageText, string> => {
  // First the small files that say where everything is; the chapters once the spine names them.
  const head = unzipWithin(bytes, (name) => name === "META-INF/container.xml" || name === "META-INF/encryption.xml")
  if (Result.isFailure(head)) return Result.fail(head.failure)
  const container = head.success["META-INF/container.xml"]
  if (container === undefined) return Result.fail("it is not an EPUB book: it has no META-INF/container.xml")
  const rootfile = elementsOf(utf8.decode(container)).find((e) => e.name === "rootfile")?.attributes["full-path"]
  if (rootfile === undefined) return Result.fail("it is not an EPUB book: its container names no package document")
  const opfFiles = unzipWithin(bytes, (name) => name === rootfile)
  if (Result.isFailure(opfFiles)) return Result.fail(opfFiles.failure)
  const opf = opfFiles.success[rootfile]
  if (opf === undefined) return Result.fail(`it is damaged: its package document ${rootfile} is missing`)
  const elements = elementsOf(utf8.decode(opf))
  const title = elements
    .find((e) => e.name === "title")
    ?.text.replace(/\s+/g, " ")
    .trim()
  const hrefs = new Map<string, string>()
  for (const e of elements) {
    if (e.name === "item" && e.attributes["id"] !== undefined && e.attributes["href"] !== undefined) {
      hrefs.set(e.attributes["id"], resolve(rootfile, e.attributes["href"]))
    }
  }
  const spine = elements
    .filter((e) => e.name === "itemref" && e.attributes["linear"] !== "no")
    .flatMap((e) => {
      const path = hrefs.get(e.attributes["idref"] ?? "")
      return path === undefined ? [] : [path]
    })
  if (spine.length === 0) return Result.fail("it is not an EPUB book: its package lists no chapters")
  const wanted = new Set(spine)
  // Encrypted chapters are DRM; obfuscated fonts are not.
  const encryption = head.success["META-INF/encryption.xml"]
  if (encryption !== undefined) {
    let algorithm = ""
    for (const e of elementsOf(utf8.decode(encryption))) {
      if (e.name === "encryptionmethod") algorithm = e.attributes["Algorithm"] ?? ""
      else if (e.name === "cipherreference" && !FONT_OBFUSCATION.has(algorithm)) {
        const target = resolve("", e.attributes["URI"] ?? "")
        if (wanted.has(target) || !/\.(?:otf|ttf|woff2?)$/i.test(target)) {
          return Result.fail("it is encrypted (DRM): only books without DRM can be read")
        }
      }
    }
  }
  const chapters = unzipWithin(bytes, (name) => wanted.has(name))
  if (Result.isFailure(chapters)) return Result.fail(chapters.failure)
  const texts: Array<string> = []
  for (const path of spine) {
    const chapter = chapters.success[path]
    if (chapter === undefined) continue
    const page = htmlToText(decodeMarkup(chapter))
    if (Result.isFailure(page)) return Result.fail(page.failure)
    if (page.success.text !== "") texts.push(page.success.text)
  }
  const text = texts.join("\n\n")
  return Result.succeed({ text, title: title === "" ? undefined : (title ?? /^#{1,6} (.+)$/m.exec(text)?.[1]) })
}

/** The text of an EPUB file's chapters, in spine order, and its title; or why it cannot be read. */
export const epubToText = (bytes: Uint8Array): Result.Result<PageText, string> => {
  try {
    return readBook(bytes)
  } catch (error) {
    if (error instanceof TooDeep) return Result.fail(`its XML nests more than ${MAX_DEPTH} elements deep: damaged`)
    throw error
  }
}
