/** Turns a Markdown or plain-text file into a document. */
import { Result } from "effect"
import { decodeAs } from "@funcpipe/domain/Decode"
import { RawDoc } from "@funcpipe/domain/Document"
import { BadRecord } from "./BadRecord.ts"

const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/m
const decodeDoc = decodeAs(RawDoc, "document")

/**
 * The document for the file at `relativePath` (its doc id, with `/` separators): the title is the first Markdown
 * heading of a `.md` file, otherwise the file name; the body is the whole text; there are no categories.
 */
export const fileDoc = (relativePath: string, text: string): Result.Result<RawDoc, BadRecord> => {
  const name = relativePath.slice(relativePath.lastIndexOf("/") + 1)
  const match = relativePath.toLowerCase().endsWith(".md") ? heading.exec(text) : null
  const title = match?.[1]?.trim() || name
  return Result.mapError(
    decodeDoc({ docId: relativePath, title, body: text, categories: null }),
    (error) => new BadRecord({ source: relativePath, line: 0, reason: error.message })
  )
}

/**
 * The labels that keep the doc ids of several paths apart, from each path's components (`/a/x/docs` is
 * `["a", "x", "docs"]`): with one path, none (`undefined`); with several, each path's shortest ending that no other
 * path shares (`docs`, or `x/docs` when `/b/y/docs` is given too). A text file under a labelled directory gets the
 * doc id `label/relative path`; a text file named directly gets its label as doc id. The labels depend only on the
 * paths, so the same command gives the same doc ids every run.
 */
export const rootLabels = (paths: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<string | undefined> => {
  if (paths.length < 2) return paths.map(() => undefined)
  const ending = (parts: ReadonlyArray<string>, n: number) => parts.slice(Math.max(0, parts.length - n)).join("/")
  return paths.map((parts, i) => {
    let n = 1
    while (n < parts.length && paths.some((other, j) => j !== i && ending(other, n) === ending(parts, n))) n++
    return ending(parts, n) || "/"
  })
}
