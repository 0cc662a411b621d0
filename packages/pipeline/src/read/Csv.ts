/** Reads CSV into documents row by row, as the reference's per-row reader does, from text or from bytes in pieces. */

import { decodeAs } from "@funcpipe/domain/Decode"
import { RawDoc } from "@funcpipe/domain/Document"
import { Result } from "effect"
import { concatBytes } from "../base/Bytes.ts"
import { BadRecord } from "./BadRecord.ts"
import {
  atLine,
  BINARY_FILE,
  type ByteReader,
  completeUtf8Length,
  type DocResult,
  dropBom,
  formatBytes,
  type LineResult,
  MAX_RECORD_BYTES,
  NOT_UTF8,
  strictUtf8
} from "./ByteReader.ts"

/** One CSV record: its fields and the 1-based line it starts on, or the reason it could not be read. */
export interface CsvRecord {
  readonly line: number
  readonly fields: Result.Result<ReadonlyArray<string>, string>
}

/** An incremental CSV splitter: fed text in pieces of any size, it returns the records each piece completes. */
export interface CsvSplitter {
  /** The records completed by this piece of text (a piece may end anywhere, even between `\r` and `\n`). */
  readonly push: (text: string) => ReadonlyArray<CsvRecord>
  /** The records left at the end of the text; call once, after the last piece. */
  readonly end: () => ReadonlyArray<CsvRecord>
  /** The 1-based line the text read so far ends on. */
  readonly line: () => number
  /** True once a record was too long: the splitter reported it and ignores the rest. */
  readonly stopped: () => boolean
}

const COMMA = 0x2c
const QUOTE = 0x22
const CR = 0x0d
const LF = 0x0a

/**
 * Where the splitter is: "record" between records; "field" at the start of a field; "unquoted"/"quoted" inside one;
 * "quote" after a quote inside a quoted field (the closing one, or the first of `""`).
 */
type SplitState = "record" | "field" | "unquoted" | "quoted" | "quote"

/** A splitter's state between pieces, in one object so each parse state can be a function of its own. */
interface Splitting {
  readonly maxRecordChars: number
  state: SplitState
  fields: Array<string>
  field: string
  recordChars: number
  line: number
  recordLine: number
  /** A `\r` that ended the last piece: it may be the start of `\r\n`. */
  carry: string
  stopped: boolean
  /** The records completed by the piece being read, handed back by `push` or `end`. */
  out: Array<CsvRecord>
}

/** Ends the field in progress; the next one starts. */
const endField = (s: Splitting): SplitState => {
  s.fields.push(s.field)
  s.field = ""
  return "field"
}

/** Ends the record in progress and hands it back; the next one starts. */
const endRecord = (s: Splitting): SplitState => {
  endField(s)
  s.out.push({ line: s.recordLine, fields: Result.succeed(s.fields) })
  s.fields = []
  s.recordChars = 0
  return "record"
}

/** Adds `text` to the field; `false` when the record grew too long, which is reported and stops the splitter. */
const append = (s: Splitting, text: string): boolean => {
  s.field += text
  s.recordChars += text.length
  if (s.recordChars <= s.maxRecordChars) return true
  s.out.push({
    line: s.recordLine,
    fields: Result.fail(
      `the record that starts on line ${s.recordLine} is longer than ${formatBytes(s.maxRecordChars)}, so the rest ` +
        `of the file is skipped; is a quote left open?`
    )
  })
  s.stopped = true
  s.field = ""
  s.fields = []
  return false
}

/** Between records: a line break is a blank line (an empty record); anything else starts a field. */
const atRecord = (s: Splitting, i: number, breakWidth: number): number => {
  s.recordLine = s.line
  if (breakWidth === 0) {
    s.state = "field"
    return i
  }
  s.out.push({ line: s.line, fields: Result.succeed([]) })
  s.line++
  return i + breakWidth
}

/** At the start of a field: a quote opens a quoted field, anything else an unquoted one. */
const atField = (s: Splitting, i: number, c: number): number => {
  if (c !== QUOTE) {
    s.state = "unquoted"
    return i
  }
  s.state = "quoted"
  return i + 1
}

/** A comma ends the field and a line break the record: where scanning goes on then, or -1 for any other character. */
const fieldEnd = (s: Splitting, i: number, c: number, breakWidth: number): number => {
  if (c === COMMA) {
    s.state = endField(s)
    return i + 1
  }
  if (breakWidth > 0) {
    s.state = endRecord(s)
    s.line++
    return i + breakWidth
  }
  return -1
}

/** Inside an unquoted field: a comma or line break ends it; a run of other characters (stray quotes too) joins it. */
const inUnquoted = (s: Splitting, text: string, i: number, n: number, c: number, breakWidth: number): number => {
  const ended = fieldEnd(s, i, c, breakWidth)
  if (ended >= 0) return ended
  let j = i + 1
  while (j < n) {
    const d = text.charCodeAt(j)
    if (d === COMMA || d === CR || d === LF) break
    j++
  }
  append(s, text.slice(i, j))
  return j
}

/** Inside a quoted field: all up to the next quote joins it, line breaks as written (each counts one line). */
const inQuoted = (s: Splitting, text: string, i: number, n: number, c: number): number => {
  if (c === QUOTE) {
    s.state = "quote"
    return i + 1
  }
  let j = i
  while (j < n) {
    const d = text.charCodeAt(j)
    if (d === QUOTE) break
    if (d === LF || (d === CR && !(j + 1 < n && text.charCodeAt(j + 1) === LF))) s.line++
    j++
  }
  append(s, text.slice(i, j))
  return j
}

/** After a quote: `""` is a quote; after a closing quote, other text joins the field (as Python's csv reads it). */
const afterQuote = (s: Splitting, i: number, c: number, breakWidth: number): number => {
  if (c === QUOTE) {
    if (append(s, '"')) s.state = "quoted"
    return i + 1
  }
  const ended = fieldEnd(s, i, c, breakWidth)
  if (ended >= 0) return ended
  s.state = "unquoted"
  return i
}

/** Reads `text[0, n)`; a `\r` at `n - 1` is never the start of a `\r\n` still to come (the caller holds it back). */
const readText = (s: Splitting, text: string, n: number): void => {
  let i = 0
  while (i < n && !s.stopped) {
    const c = text.charCodeAt(i)
    const breakWidth = c === LF ? 1 : c === CR ? (i + 1 < n && text.charCodeAt(i + 1) === LF ? 2 : 1) : 0
    switch (s.state) {
      case "record":
        i = atRecord(s, i, breakWidth)
        break
      case "field":
        i = atField(s, i, c)
        break
      case "unquoted":
        i = inUnquoted(s, text, i, n, c, breakWidth)
        break
      case "quoted":
        i = inQuoted(s, text, i, n, c)
        break
      case "quote":
        i = afterQuote(s, i, c, breakWidth)
        break
    }
  }
}

/** The records a piece completes; a `\r` ending it is held back, since a `\n` may start the next piece. */
const pushText = (s: Splitting, piece: string): ReadonlyArray<CsvRecord> => {
  s.out = []
  if (s.stopped) return s.out
  const text = s.carry === "" ? piece : s.carry + piece
  const held = text.length > 0 && text.charCodeAt(text.length - 1) === CR
  s.carry = held ? "\r" : ""
  readText(s, text, held ? text.length - 1 : text.length)
  return s.out
}

/** Why a quoted field still open at the end of the text loses the rest of the file, with the lines lost. */
const unclosedQuote = (s: Splitting): string => {
  const last = /[\r\n]$/.test(s.field) ? s.line - 1 : s.line // the file's last line, not the empty one after it
  const lost = last > s.recordLine ? `lines ${s.recordLine} to ${last}` : `line ${s.recordLine}`
  return (
    `a quoted field that starts on line ${s.recordLine} is never closed, so ${lost} (the rest of ` +
    `the file) could not be read as rows; close the quote to read them`
  )
}

/** The records left at the end of the text: a held-back `\r`, the record in progress, or an unclosed quote. */
const endText = (s: Splitting): ReadonlyArray<CsvRecord> => {
  s.out = []
  if (s.stopped) return s.out
  readText(s, s.carry, s.carry.length)
  s.carry = ""
  if (s.stopped) return s.out
  if (s.state === "quoted") {
    s.out.push({ line: s.recordLine, fields: Result.fail(unclosedQuote(s)) })
  } else if (s.state !== "record") {
    endRecord(s)
  }
  s.state = "record"
  return s.out
}

/**
 * Splits CSV text into records as `csvRecords` does, piece by piece. A record whose fields hold more than
 * `maxRecordChars` UTF-16 code units (so more than that many bytes of UTF-8) is a failed record and stops the
 * splitter: past an unclosed quote there is no telling where records start again.
 */
export const csvSplitter = (maxRecordChars: number = Infinity): CsvSplitter => {
  const s: Splitting = {
    maxRecordChars,
    state: "record",
    fields: [],
    field: "",
    recordChars: 0,
    line: 1,
    recordLine: 1,
    carry: "",
    stopped: false,
    out: []
  }
  return {
    push: (piece) => pushText(s, piece),
    end: () => endText(s),
    line: () => s.line + (s.carry === "" ? 0 : 1),
    stopped: () => s.stopped
  }
}

/**
 * Splits CSV text into records (RFC 4180: `,` separates, `"` quotes, `""` is a quote inside quotes, quoted fields may
 * hold line breaks, records end at `\r\n`, `\n` or `\r`). Like Python's `csv` module it keeps line breaks inside
 * quotes as written, takes a stray quote inside an unquoted field literally, and yields an empty record for a blank
 * line. A quoted field still open at the end of the text is an error for that record.
 */
export const csvRecords = (text: string): ReadonlyArray<CsvRecord> => {
  const splitter = csvSplitter()
  return [...splitter.push(text), ...splitter.end()]
}

const COLUMNS = ["doc_id", "title", "abstract", "categories"] as const
const decodeDoc = decodeAs(RawDoc, "document")

/**
 * Turns CSV records into documents as `parseCsvDocs` does, a batch at a time: the first record is the header.
 * Returns the function to call with each batch of records, in order.
 */
export const csvDocs = (source: string): ((records: ReadonlyArray<CsvRecord>) => Array<LineResult>) => {
  const bad = (line: number, reason: string): LineResult => Result.fail(new BadRecord({ source, line, reason }))
  let header: ReadonlyArray<string> | undefined
  let headerProblem: string | undefined
  let at: Record<(typeof COLUMNS)[number], number> | undefined
  const row = (record: CsvRecord): LineResult | undefined => {
    if (Result.isFailure(record.fields)) return bad(record.line, record.fields.failure)
    const cells = record.fields.success
    if (cells.length === 0) return undefined
    if (headerProblem !== undefined) return bad(record.line, headerProblem)
    if (cells.length > header!.length) {
      return bad(record.line, `the row has ${cells.length} cells but the header has ${header!.length}`)
    }
    const cell = (name: (typeof COLUMNS)[number]) => cells[at![name]]
    const lacking = (["doc_id", "title", "abstract"] as const).find((name) => cell(name) === undefined)
    if (lacking !== undefined) return bad(record.line, `the row has ${cells.length} cells and no value for ${lacking}`)
    const decoded = decodeDoc({
      docId: cell("doc_id"),
      title: cell("title"),
      body: cell("abstract"),
      categories: cell("categories") ?? null
    })
    return atLine(
      Result.mapError(decoded, (error) => new BadRecord({ source, line: record.line, reason: error.message })),
      record.line
    )
  }
  let failedHeader = false
  return (records) => {
    const out: Array<LineResult> = []
    for (const record of records) {
      if (failedHeader) continue
      if (header === undefined) {
        if (Result.isFailure(record.fields)) {
          // A header that cannot be read (a quote never closed) is the only record of the file.
          failedHeader = true
          out.push(bad(record.line, record.fields.failure))
          continue
        }
        header = record.fields.success
        const names = header
        const unknown = names.filter((name) => !(COLUMNS as ReadonlyArray<string>).includes(name))
        const missing = COLUMNS.filter((name) => !names.includes(name))
        headerProblem =
          unknown.length > 0
            ? `the header has the unknown column ${JSON.stringify(unknown[0])}; the columns are ${COLUMNS.join(", ")}`
            : missing.length > 0
              ? `the header lacks the column ${JSON.stringify(missing[0])}; the columns are ${COLUMNS.join(", ")}`
              : new Set(names).size !== names.length
                ? `the header names a column twice; the columns are ${COLUMNS.join(", ")}`
                : undefined
        at = {
          doc_id: names.indexOf("doc_id"),
          title: names.indexOf("title"),
          abstract: names.indexOf("abstract"),
          categories: names.indexOf("categories")
        }
        continue
      }
      const result = row(record)
      if (result !== undefined) out.push(result)
    }
    return out
  }
}

/**
 * Reads CSV text with the header `doc_id,title,abstract,categories` (columns in any order) into one result per data
 * row: a document, or a `BadRecord` naming `source` and the row's line. Blank lines are skipped. A header with an
 * unknown or a missing column makes every row an error, as in the reference; a row with more cells than the header is
 * an error; a row without its last cells is read with `categories` null, and is an error if it lacks the doc id,
 * title or abstract. The file-level byte order mark is the decoder's business, not this parser's.
 */
export const parseCsvDocs = (text: string, source: string): ReadonlyArray<DocResult> =>
  csvDocs(source)(csvRecords(text)).map((result) => Result.map(result, ({ doc }) => doc))

/**
 * Reads a CSV file from bytes in pieces, with the records of `parseCsvDocs` on the decoded text (a leading byte
 * order mark dropped). The text is decoded as it comes, so a NUL byte or bytes that are not UTF-8 are found where
 * they are: the rows before are read, then one `BadRecord` naming the line ends the file. So does a record longer
 * than `maxRecordBytes` (usually a quote left open). Memory: one piece plus the record in progress.
 */
export const csvReader = (source: string, maxRecordBytes: number = MAX_RECORD_BYTES): ByteReader => {
  const decoder = strictUtf8()
  const splitter = csvSplitter(maxRecordBytes)
  const docs = csvDocs(source)
  let carry: Uint8Array | undefined // the start of a character cut off at the end of the last piece
  let started = false
  let failed = false

  const text = (piece: string): Array<LineResult> => {
    if (!started && piece.length > 0) {
      started = true
      piece = dropBom(piece)
    }
    return docs(splitter.push(piece))
  }
  const fail = (out: Array<LineResult>, reason: string): Array<LineResult> => {
    failed = true
    out.push(Result.fail(new BadRecord({ source, line: splitter.line(), reason })))
    return out
  }
  /** Whole characters; at a NUL or a malformed byte, the lines before it are read and the file ends there. */
  const bytes = (whole: Uint8Array): Array<LineResult> => {
    if (!whole.includes(0)) {
      try {
        return text(decoder.decode(whole))
      } catch {
        // Found below, line by line.
      }
    }
    const out: Array<LineResult> = []
    let start = 0
    while (start < whole.length && !splitter.stopped()) {
      const lf = whole.indexOf(0x0a, start)
      const end = lf === -1 ? whole.length : lf + 1
      const line = whole.subarray(start, end)
      if (line.includes(0)) return fail(out, BINARY_FILE)
      let decoded: string
      try {
        decoded = decoder.decode(line)
      } catch {
        return fail(out, NOT_UTF8)
      }
      out.push(...text(decoded))
      start = end
    }
    return out
  }

  return {
    push: (piece) => {
      if (failed || splitter.stopped()) return []
      const all = carry === undefined ? piece : concatBytes([carry, piece])
      const cut = completeUtf8Length(all)
      carry = cut < all.length ? all.slice(cut) : undefined
      return bytes(all.subarray(0, cut))
    },
    end: () => {
      if (failed || splitter.stopped()) return []
      // The file ends inside a character.
      if (carry !== undefined) return fail([], NOT_UTF8)
      return docs(splitter.end())
    },
    done: () => failed || splitter.stopped()
  }
}
