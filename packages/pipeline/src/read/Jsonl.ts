/** Reads JSON Lines into documents, one result per non-blank line, from whole text or incrementally from bytes. */

import { decodeAs } from "@funcpipe/domain/Decode"
import { joinLabels, RawDoc } from "@funcpipe/domain/Document"
import { Result } from "effect"
import { concatBytes } from "../base/Bytes.ts"
import { BadRecord } from "./BadRecord.ts"
import {
  atLine,
  type ByteReader,
  type DocResult,
  dropBom,
  formatBytes,
  type LineResult,
  MAX_RECORD_BYTES,
  strictUtf8
} from "./ByteReader.ts"

const decodeDoc = decodeAs(RawDoc, "document")

/** The first of `keys` that `record` holds (not null), or `undefined`. */
const firstKey = (record: Record<string, unknown>, keys: ReadonlyArray<string>): string | undefined =>
  keys.find((k) => record[k] !== undefined && record[k] !== null)

/** A JSON value as a message names it ("the number 5", "a list"). */
const kindOf = (value: unknown): string =>
  typeof value === "number"
    ? `the number ${value}`
    : typeof value === "boolean"
      ? `${value}`
      : value === null
        ? "null"
        : Array.isArray(value)
          ? "a list"
          : typeof value === "object"
            ? "an object"
            : "a string"

const asId = (value: unknown): unknown => (typeof value === "number" && Number.isInteger(value) ? String(value) : value)

/** A list of labels becomes the text `labelsOf` splits back into them; anything else is left for the checks. */
const asCategories = (value: unknown): unknown =>
  value === undefined
    ? null
    : Array.isArray(value) && value.every((v) => typeof v === "string")
      ? joinLabels(value)
      : value

/**
 * One line of JSON Lines (without its line break): the id from `doc_id`, `id` or `_id` (a string or an integer), the
 * body from `abstract`, `body` or `text`, an optional `title` (default empty) and optional `categories` (a string or
 * a list of strings). `undefined` for a blank line; a line that is not such an object is a `BadRecord` naming
 * `source` and `lineNumber` (1-based).
 */
export const parseJsonlLine = (line: string, lineNumber: number, source: string): DocResult | undefined => {
  if (line.trim() === "") return undefined
  const bad = (reason: string) => Result.fail(new BadRecord({ source, line: lineNumber, reason }))
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch (error) {
    return bad(`not valid JSON (${error instanceof Error ? error.message : String(error)})`)
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return bad("expected a JSON object with an id and a body")
  }
  const record = value as Record<string, unknown>
  const idKey = firstKey(record, ["doc_id", "id", "_id"])
  const bodyKey = firstKey(record, ["abstract", "body", "text"])
  if (idKey === undefined) return bad("the object has no doc_id, id or _id")
  if (bodyKey === undefined) return bad("the object has no abstract, body or text")
  const docId = asId(record[idKey])
  const body = record[bodyKey]
  const title = record["title"] ?? ""
  const categories = asCategories(record["categories"])
  // Wrong kinds of values are named here, in the file's own terms, before the schema checks the rest.
  if (typeof docId !== "string") return bad(`"${idKey}" must be a string or a whole number, not ${kindOf(docId)}`)
  if (typeof body !== "string") return bad(`"${bodyKey}" must be a string, not ${kindOf(body)}`)
  if (typeof title !== "string") return bad(`"title" must be a string, not ${kindOf(title)}`)
  if (categories !== null && typeof categories !== "string") {
    const raw = record["categories"]
    const found = Array.isArray(raw) ? `a list holding ${kindOf(raw.find((v) => typeof v !== "string"))}` : kindOf(raw)
    return bad(`"categories" must be a string or a list of strings, not ${found}`)
  }
  const decoded = decodeDoc({ docId, title, body, categories })
  return Result.mapError(decoded, (error) => new BadRecord({ source, line: lineNumber, reason: error.message }))
}

/**
 * JSON Lines text into documents: lines end at `\n` or `\r\n`, each non-blank line is read by `parseJsonlLine`.
 */
export const parseJsonlDocs = (text: string, source: string): ReadonlyArray<DocResult> => {
  const out: Array<DocResult> = []
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const result = parseJsonlLine(lines[i]!, i + 1, source)
    if (result !== undefined) out.push(result)
  }
  return out
}

/** The reason a JSONL line that is not UTF-8 is skipped. */
export const LINE_NOT_UTF8 = "the line is not UTF-8 text, skipped; convert the file to UTF-8 to index it"

/** The reason a JSONL line with a NUL byte is skipped. */
export const LINE_HAS_NUL = "the line contains NUL bytes (binary data), skipped"

const LF = 0x0a
const CR = 0x0d

/**
 * Reads JSON Lines from bytes in pieces, with the records of `parseJsonlDocs` on the decoded text: lines split at `\n`
 * bytes, one `\r` before it dropped, a leading byte order mark dropped. Unlike the whole-text reader, each line is
 * decoded on its own, so a line that is not UTF-8, holds a NUL byte or is longer than `maxLineBytes` is a `BadRecord`
 * for that line and the lines around it are read. Memory: one piece plus the line in progress.
 */
export const jsonlReader = (source: string, maxLineBytes: number = MAX_RECORD_BYTES): ByteReader => {
  const decoder = strictUtf8()
  /** The bytes of the line in progress (no `\n` yet), unless it is being skipped as too long. */
  let pending: Array<Uint8Array> = []
  let pendingLength = 0
  let skipping = false
  /** The number of the next line to complete. */
  let line = 1
  const tooLong = `the line is longer than ${formatBytes(maxLineBytes)}, skipped`
  const bad = (lineNumber: number, reason: string): LineResult =>
    Result.fail(new BadRecord({ source, line: lineNumber, reason }))

  /** One line's bytes (without `\n`); `terminated` when a `\n` ended it, so that one `\r` before it goes too. */
  const readLine = (bytes: Uint8Array, terminated: boolean, out: Array<LineResult>): void => {
    const lineNumber = line++
    if (bytes.length > maxLineBytes) return void out.push(bad(lineNumber, tooLong))
    if (bytes.includes(0)) return void out.push(bad(lineNumber, LINE_HAS_NUL))
    let text: string
    try {
      text = decoder.decode(bytes)
    } catch {
      return void out.push(bad(lineNumber, LINE_NOT_UTF8))
    }
    if (lineNumber === 1) text = dropBom(text)
    if (terminated && text.charCodeAt(text.length - 1) === CR) text = text.slice(0, -1)
    const result = parseJsonlLine(text, lineNumber, source)
    if (result !== undefined) out.push(atLine(result, lineNumber))
  }

  /** Whole lines, each ending in `\n`: decoded at once when clean (the fast path), else line by line. */
  const readLines = (block: Uint8Array, out: Array<LineResult>): void => {
    if (block.length <= maxLineBytes && !block.includes(0)) {
      let text: string | undefined
      try {
        text = decoder.decode(block)
      } catch {
        text = undefined
      }
      if (text !== undefined) {
        if (line === 1) text = dropBom(text)
        let start = 0
        for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
          const cr = end > start && text.charCodeAt(end - 1) === CR
          const raw = text.slice(start, cr ? end - 1 : end)
          const lineNumber = line++
          const result = parseJsonlLine(raw, lineNumber, source)
          if (result !== undefined) out.push(atLine(result, lineNumber))
          start = end + 1
        }
        return
      }
    }
    let start = 0
    for (let end = block.indexOf(LF); end !== -1; end = block.indexOf(LF, start)) {
      readLine(block.subarray(start, end), true, out)
      start = end + 1
    }
  }

  const hold = (bytes: Uint8Array, out: Array<LineResult>): void => {
    if (skipping || bytes.length === 0) return
    if (pendingLength + bytes.length > maxLineBytes) {
      out.push(bad(line, tooLong))
      pending = []
      pendingLength = 0
      skipping = true
      return
    }
    pending.push(bytes.slice())
    pendingLength += bytes.length
  }

  return {
    push: (bytes) => {
      const out: Array<LineResult> = []
      const last = bytes.lastIndexOf(LF)
      if (last === -1) {
        hold(bytes, out)
        return out
      }
      let start = 0
      if (skipping || pendingLength > 0) {
        // The line in progress ends at the first `\n`: read it (unless it was already reported as too long).
        const first = bytes.indexOf(LF)
        if (skipping) {
          skipping = false
          line++
        } else {
          readLine(concatBytes([...pending, bytes.subarray(0, first)]), true, out)
        }
        pending = []
        pendingLength = 0
        start = first + 1
      }
      if (start <= last) readLines(bytes.subarray(start, last + 1), out)
      hold(bytes.subarray(last + 1), out)
      return out
    },
    end: () => {
      const out: Array<LineResult> = []
      if (!skipping && pendingLength > 0) readLine(concatBytes(pending), false, out)
      pending = []
      pendingLength = 0
      return out
    },
    done: () => false
  }
}
