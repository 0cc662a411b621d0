/**
 * The document formats read through a converter (PDF, HTML, Word, EPUB): which files they are, their limits, and
 * their conversion to a document's text. Each converter, with the libraries it needs, is loaded the first time a file
 * of its kind is read, so start-up and a run over Markdown alone do not pay for them.
 */

import { Duration, Effect, Option, Result } from "effect"
import type { PageText } from "./formats/Html.ts"

/** The files read through a converter, each one document. */
export const CONVERTED_FILE = /\.(pdf|html?|xhtml|docx|epub)$/i

/** The largest PDF, HTML, Word or EPUB file read; a larger one is skipped. */
export const MAX_CONVERTED_FILE_BYTES = 256 * 1024 * 1024

/** How long reading one such file may take; a file that takes longer is skipped. */
export const MAX_CONVERT_SECONDS = 60

/**
 * The converters' version: a document's content hash covers it, so a new version re-indexes what it reads differently
 * (raise it with any change to what a converter gives).
 */
export const CONVERTER_VERSION = 1

/**
 * A file's text (Markdown, or a PDF's pages apart by form feeds) and its own title, or why it cannot be read: within
 * `seconds` (checked between a PDF's pages, and as a bound on the whole while the converter yields to other work).
 */
export const convertFile = (
  name: string,
  bytes: Uint8Array,
  seconds: number = MAX_CONVERT_SECONDS
): Effect.Effect<Result.Result<PageText, string>> => {
  const kind = CONVERTED_FILE.exec(name)?.[1]?.toLowerCase()
  const converted: Effect.Effect<Result.Result<PageText, string>> =
    kind === "pdf"
      ? Effect.promise(() => import("./formats/Pdf.ts").then((m) => m.pdfToText(bytes, Date.now() + seconds * 1000)))
      : kind === "docx"
        ? Effect.flatMap(
            Effect.promise(() => import("./formats/Docx.ts")),
            (m) => m.docxToText(bytes)
          )
        : kind === "epub"
          ? Effect.map(
              Effect.promise(() => import("./formats/Epub.ts")),
              (m) => m.epubToText(bytes)
            )
          : Effect.map(
              Effect.promise(() => Promise.all([import("./formats/Html.ts"), import("./formats/Charset.ts")])),
              ([html, charset]) => Result.succeed(html.htmlToText(charset.decodeMarkup(bytes)))
            )
  return Effect.map(Effect.timeoutOption(converted, Duration.seconds(seconds)), (done) =>
    Option.getOrElse(done, () =>
      Result.fail(`it took longer than ${seconds} s to read, skipped (index --file-seconds raises the limit)`)
    )
  )
}
