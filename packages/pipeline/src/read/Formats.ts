/**
 * The document formats read through a converter (PDF, HTML, Word, EPUB): which files they are, their limits, and
 * their conversion to a document's text. Each converter, with the libraries it needs, is loaded the first time a file
 * of its kind is read, so start-up and a run over Markdown alone do not pay for them.
 */

import { Clock, Duration, Effect, Option, Result } from "effect"
import type { PageText } from "./formats/Html.ts"

/** The files read through a converter, each one document. */
export const CONVERTED_FILE = /\.(pdf|html?|xhtml|docx|epub)$/i

/** The largest PDF, HTML, Word or EPUB file read; a larger one is skipped. */
export const MAX_CONVERTED_FILE_BYTES = 256 * 1024 * 1024

/** How long reading one such file may take; a file that takes longer is skipped. */
export const MAX_CONVERT_SECONDS = 60

/**
 * The converters' version, recorded in each converted file's stamp: a new version reads those files again, and
 * re-indexes the ones whose text it reads differently (raise it with any change to what a converter gives).
 */
export const CONVERTER_VERSION = 1

/**
 * A module loaded on first use and kept: later files of its kind are converted without waiting for a promise (a
 * wait per file made a folder of small pages read at half the speed of the same text as Markdown).
 */
const loadedOnce = <A>(load: () => Promise<A>): Effect.Effect<A> => {
  let loaded: A | undefined
  return Effect.suspend(() =>
    loaded !== undefined ? Effect.succeed(loaded) : Effect.map(Effect.promise(load), (module) => (loaded = module))
  )
}

const pdfModule = loadedOnce(() => import("./formats/Pdf.ts"))
const docxModule = loadedOnce(() => import("./formats/Docx.ts"))
const epubModule = loadedOnce(() => Promise.all([import("./formats/Epub.ts")]))
const htmlModules = loadedOnce(() => Promise.all([import("./formats/Html.ts"), import("./formats/Charset.ts")]))

/**
 * A file's text (Markdown, or a PDF's pages apart by form feeds) and its own title, or why it cannot be read. A PDF,
 * whose converter waits on its own work, is given `seconds` (checked between its pages too); HTML, Word and EPUB are
 * converted in one synchronous pass each, linear in their size (nesting is bounded), which a timer could not stop.
 */
export const convertFile = (
  name: string,
  bytes: Uint8Array,
  seconds: number = MAX_CONVERT_SECONDS
): Effect.Effect<Result.Result<PageText, string>> => {
  const kind = CONVERTED_FILE.exec(name)?.[1]?.toLowerCase()
  if (kind === "pdf") {
    return Effect.flatMap(pdfModule, (m) =>
      Effect.map(
        Effect.timeoutOption(
          Effect.gen(function* () {
            const clock = yield* Clock.Clock
            return yield* Effect.promise(() => m.pdfToText(bytes, seconds, () => clock.currentTimeMillisUnsafe()))
          }),
          Duration.seconds(seconds)
        ),
        (done) => Option.getOrElse(done, () => Result.fail(m.lateReason(seconds)))
      )
    )
  }
  if (kind === "docx") return Effect.map(docxModule, (m) => m.docxToText(bytes))
  if (kind === "epub") return Effect.map(epubModule, ([m]) => m.epubToText(bytes))
  return Effect.map(htmlModules, ([html, charset]) => html.htmlToText(charset.decodeMarkup(bytes)))
}
