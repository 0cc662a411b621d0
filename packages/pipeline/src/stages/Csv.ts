/** Reads CSV text into documents row by row, as the reference's per-row reader does. */
import { Result } from "effect"
import { decodeAs } from "@funcpipe/domain/Decode"
import { RawDoc } from "@funcpipe/domain/Document"
import { BadRecord } from "./BadRecord.ts"

/** One CSV record: its fields and the 1-based line it starts on, or the reason it could not be read. */
export interface CsvRecord {
  readonly line: number
  readonly fields: Result.Result<ReadonlyArray<string>, string>
}

/**
 * Splits CSV text into records (RFC 4180: `,` separates, `"` quotes, `""` is a quote inside quotes, quoted fields may
 * hold line breaks, records end at `\r\n`, `\n` or `\r`). Like Python's `csv` module it keeps line breaks inside
 * quotes as written, takes a stray quote inside an unquoted field literally, and yields an empty record for a blank
 * line. A quoted field still open at the end of the text is an error for that record.
 */
export const csvRecords = (text: string): ReadonlyArray<CsvRecord> => {
  type State = "record" | "field" | "unquoted" | "quoted" | "quote"
  const records: Array<CsvRecord> = []
  let state: State = "record"
  let fields: Array<string> = []
  let field = ""
  let line = 1
  let recordLine = 1
  const endField = (): State => {
    fields.push(field)
    field = ""
    return "field"
  }
  const endRecord = (): State => {
    endField()
    records.push({ line: recordLine, fields: Result.succeed(fields) })
    fields = []
    return "record"
  }
  const append = (ch: string, next: State): State => {
    field += ch
    return next
  }
  for (let i = 0; i < text.length; i++) {
    let c = text[i]!
    if (c === "\r" && text[i + 1] === "\n") {
      // One line break, seen as "\n"; inside quotes it is kept as written.
      i++
      c = state === "quoted" ? "\r\n" : "\n"
    }
    const isBreak = c === "\n" || c === "\r" || c === "\r\n"
    if (state === "record") {
      recordLine = line
      if (isBreak) records.push({ line, fields: Result.succeed([]) }) // a blank line
      else state = "field"
    }
    switch (state) {
      case "record":
        break
      case "field":
        state = c === "\"" ? "quoted" : c === "," ? endField() : isBreak ? endRecord() : append(c, "unquoted")
        break
      case "unquoted":
        state = c === "," ? endField() : isBreak ? endRecord() : append(c, "unquoted")
        break
      case "quoted":
        state = c === "\"" ? "quote" : append(c, "quoted")
        break
      case "quote":
        // `""` is a quote; after a closing quote, other text joins the field, as Python's csv module reads it.
        state = c === "\"" ? append(c, "quoted") : c === "," ? endField() : isBreak ? endRecord() : append(c, "unquoted")
        break
    }
    if (isBreak) line++
  }
  if (state === "quoted") {
    records.push({ line: recordLine, fields: Result.fail(`a quoted field that starts on line ${recordLine} is never closed`) })
  } else if (state !== "record") {
    endRecord()
  }
  return records
}

const COLUMNS = ["doc_id", "title", "abstract", "categories"] as const
const decodeDoc = decodeAs(RawDoc, "document")

/**
 * Reads CSV text with the header `doc_id,title,abstract,categories` (columns in any order) into one result per data
 * row: a document, or a `BadRecord` naming `source` and the row's line. Blank lines are skipped. A header with an
 * unknown or a missing column makes every row an error, as in the reference; a row with more cells than the header is
 * an error; a row without its last cells is read with `categories` null, and is an error if it lacks the doc id,
 * title or abstract. The file-level byte order mark is the decoder's business, not this parser's.
 */
export const parseCsvDocs = (text: string, source: string): ReadonlyArray<Result.Result<RawDoc, BadRecord>> => {
  const records = csvRecords(text)
  const headerRecord = records[0]
  if (headerRecord === undefined) return []
  const bad = (line: number, reason: string) => Result.fail(new BadRecord({ source, line, reason }))
  if (Result.isFailure(headerRecord.fields)) return [bad(headerRecord.line, headerRecord.fields.failure)]
  const header = headerRecord.fields.success
  const unknown = header.filter((name) => !(COLUMNS as ReadonlyArray<string>).includes(name))
  const missing = COLUMNS.filter((name) => !header.includes(name))
  const headerProblem = unknown.length > 0
    ? `the header has the unknown column ${JSON.stringify(unknown[0])}; the columns are ${COLUMNS.join(", ")}`
    : missing.length > 0
    ? `the header lacks the column ${JSON.stringify(missing[0])}; the columns are ${COLUMNS.join(", ")}`
    : new Set(header).size !== header.length
    ? `the header names a column twice; the columns are ${COLUMNS.join(", ")}`
    : undefined
  const at = (name: (typeof COLUMNS)[number]) => header.indexOf(name)
  return records.slice(1).flatMap((record): Array<Result.Result<RawDoc, BadRecord>> => {
    if (Result.isFailure(record.fields)) return [bad(record.line, record.fields.failure)]
    const cells = record.fields.success
    if (cells.length === 0) return []
    if (headerProblem !== undefined) return [bad(record.line, headerProblem)]
    if (cells.length > header.length) {
      return [bad(record.line, `the row has ${cells.length} cells but the header has ${header.length}`)]
    }
    const cell = (name: (typeof COLUMNS)[number]) => cells[at(name)]
    const lacking = (["doc_id", "title", "abstract"] as const).find((name) => cell(name) === undefined)
    if (lacking !== undefined) {
      return [bad(record.line, `the row has ${cells.length} cells and no value for ${lacking}`)]
    }
    const decoded = decodeDoc({ docId: cell("doc_id"), title: cell("title"), body: cell("abstract"), categories: cell("categories") ?? null })
    return [Result.mapError(decoded, (error) => new BadRecord({ source, line: record.line, reason: error.message }))]
  })
}
