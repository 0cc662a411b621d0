/** Reads JSON Lines text into documents, one result per non-blank line. */
import { Result } from "effect"
import { decodeAs } from "@funcpipe/domain/Decode"
import { RawDoc } from "@funcpipe/domain/Document"
import { BadRecord } from "./BadRecord.ts"

const decodeDoc = decodeAs(RawDoc, "document")

const firstOf = (record: Record<string, unknown>, keys: ReadonlyArray<string>): unknown => {
  const key = keys.find((k) => record[k] !== undefined && record[k] !== null)
  return key === undefined ? undefined : record[key]
}

const asId = (value: unknown): unknown => (typeof value === "number" && Number.isInteger(value) ? String(value) : value)

const asCategories = (value: unknown): unknown =>
  value === undefined ? null : Array.isArray(value) && value.every((v) => typeof v === "string") ? value.join(" ") : value

/**
 * One JSON object per line: the id from `doc_id`, `id` or `_id` (a string or an integer), the body from `abstract`,
 * `body` or `text`, an optional `title` (default empty) and optional `categories` (a string or a list of strings).
 * Blank lines are skipped; a line that is not such an object is a `BadRecord` naming `source` and the line.
 */
export const parseJsonlDocs = (text: string, source: string): ReadonlyArray<Result.Result<RawDoc, BadRecord>> => {
  const out: Array<Result.Result<RawDoc, BadRecord>> = []
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!
    if (raw.trim() === "") continue
    const bad = (reason: string) => out.push(Result.fail(new BadRecord({ source, line: i + 1, reason })))
    let value: unknown
    try {
      value = JSON.parse(raw)
    } catch (error) {
      bad(`not valid JSON (${error instanceof Error ? error.message : String(error)})`)
      continue
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      bad("expected a JSON object with an id and a body")
      continue
    }
    const record = value as Record<string, unknown>
    const docId = asId(firstOf(record, ["doc_id", "id", "_id"]))
    const body = firstOf(record, ["abstract", "body", "text"])
    if (docId === undefined) {
      bad("the object has no doc_id, id or _id")
      continue
    }
    if (body === undefined) {
      bad("the object has no abstract, body or text")
      continue
    }
    const decoded = decodeDoc({ docId, title: record["title"] ?? "", body, categories: asCategories(record["categories"]) })
    out.push(Result.mapError(decoded, (error) => new BadRecord({ source, line: i + 1, reason: error.message })))
  }
  return out
}
