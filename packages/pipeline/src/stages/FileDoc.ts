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
