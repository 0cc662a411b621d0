/**
 * A Word document (`.docx`) as a document's text: `mammoth` turns it into HTML (headings from Word's heading styles,
 * tables, lists), which is read as any page is (`htmlToText`); the title is the document's own (its core properties),
 * else its first heading. Mammoth is given the container's parts as `unzipWithin` unpacked them (within its limits,
 * images left out), packed again without compression, so a zip bomb cannot reach mammoth's own unpacking.
 */

import { Effect, Result } from "effect"
import { zipSync } from "fflate"
import { Parser } from "htmlparser2"
import mammoth from "mammoth"
import { htmlToText, type PageText } from "./Html.ts"
import { unzipWithin } from "./Zip.ts"

/** The `dc:title` of a document's core properties, if it has one. */
const coreTitle = (xml: string): string | undefined => {
  let inTitle = false
  let title = ""
  const parser = new Parser(
    {
      onopentag(name) {
        if (name.toLowerCase() === "dc:title") inTitle = true
      },
      ontext(data) {
        if (inTitle) title += data
      },
      onclosetag(name) {
        if (name.toLowerCase() === "dc:title") inTitle = false
      }
    },
    { xmlMode: true, decodeEntities: true }
  )
  parser.write(xml)
  parser.end()
  const trimmed = title.replace(/\s+/g, " ").trim()
  return trimmed === "" ? undefined : trimmed
}

/** The text and title of a `.docx` file, or why it cannot be read. */
export const docxToText = (bytes: Uint8Array): Effect.Effect<Result.Result<PageText, string>> =>
  Effect.gen(function* () {
    const parts = unzipWithin(bytes, (name) => !name.startsWith("word/media/"))
    if (Result.isFailure(parts)) return Result.fail(parts.failure)
    if (parts.success["word/document.xml"] === undefined) {
      return Result.fail("it is not a Word document: it has no word/document.xml")
    }
    const stored = zipSync(parts.success, { level: 0 })
    const converted = yield* Effect.tryPromise(() =>
      mammoth.convertToHtml({ buffer: Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength) })
    ).pipe(Effect.result)
    if (Result.isFailure(converted)) {
      const cause = converted.failure.cause
      return Result.fail(`it is damaged: ${cause instanceof Error ? cause.message : String(cause)}`)
    }
    const page = htmlToText(converted.success.value)
    const core = parts.success["docProps/core.xml"]
    const title = core === undefined ? undefined : coreTitle(new TextDecoder("utf-8").decode(core))
    return Result.succeed({ text: page.text, title: title ?? page.title })
  })
