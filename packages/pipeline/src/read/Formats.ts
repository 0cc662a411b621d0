/**
 * The document formats read through a converter (HTML, Word, EPUB): which files they are, their limits, and their
 * conversion to a document's text. Each converter, with the libraries it needs, is loaded the first time a file of its
 * kind is read, so start-up and a run over Markdown alone do not pay for them.
 */

import { Effect, Result } from "effect"
import type { PageText } from "./formats/Html.ts"

/** The files read through a converter, each one document. */
export const CONVERTED_FILE = /\.(html?|xhtml|docx|epub)$/i

/** The largest HTML, Word or EPUB file read; a larger one is skipped. */
export const MAX_CONVERTED_FILE_BYTES = 256 * 1024 * 1024

/**
 * The converters' version: a document's content hash covers it, so a new version re-indexes what it reads differently
 * (raise it with any change to what a converter gives).
 */
export const CONVERTER_VERSION = 1

/** A file's text as Markdown and its own title, or why it cannot be read. */
export const convertFile = (name: string, bytes: Uint8Array): Effect.Effect<Result.Result<PageText, string>> => {
  const kind = CONVERTED_FILE.exec(name)?.[1]?.toLowerCase()
  if (kind === "docx")
    return Effect.flatMap(
      Effect.promise(() => import("./formats/Docx.ts")),
      (m) => m.docxToText(bytes)
    )
  if (kind === "epub")
    return Effect.map(
      Effect.promise(() => import("./formats/Epub.ts")),
      (m) => m.epubToText(bytes)
    )
  return Effect.map(
    Effect.promise(() => Promise.all([import("./formats/Html.ts"), import("./formats/Charset.ts")])),
    ([html, charset]) => Result.succeed(html.htmlToText(charset.decodeMarkup(bytes)))
  )
}
