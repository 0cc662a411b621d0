/** Incremental reading of a file's bytes into documents: each piece yields the records it completes, in file order. */

import type { RawDoc } from "@funcpipe/domain/Document"
import { Result } from "effect"
import { concatBytes } from "../base/Bytes.ts"
import { BadRecord } from "./BadRecord.ts"

/** One record of a file: a document, or the reason this record (or the rest of the file) was skipped. */
export type DocResult = Result.Result<RawDoc, BadRecord>

/** A document with the 1-based line of the file it starts on. */
export interface LineDoc {
  readonly doc: RawDoc
  readonly line: number
}

/** One record of a file read in pieces: a document with its line, or the reason it was skipped. */
export type LineResult = Result.Result<LineDoc, BadRecord>

/** `result` with the line its document starts on. */
export const atLine = (result: DocResult, line: number): LineResult => Result.map(result, (doc) => ({ doc, line }))

/**
 * A parser fed a file's bytes in order, in pieces of any size (a piece may end inside a UTF-8 character or a line
 * break). `push` returns the records the piece completes, `end` (called once, after the last piece) the rest. Once
 * `done()` is true the reader ignores further input, so the caller can stop reading the file. Whatever the pieces,
 * the records are the same. A reader holds at most one record's bytes plus one piece, never the whole file, and it
 * copies what it keeps of a piece: the caller may reuse the piece's buffer once `push` returns.
 */
export interface ByteReader {
  readonly push: (bytes: Uint8Array) => ReadonlyArray<LineResult>
  readonly end: () => ReadonlyArray<LineResult>
  readonly done: () => boolean
}

/** The reason a file with NUL bytes near its start (binary, or UTF-16 text, as such files usually are) is skipped. */
export const BINARY_FILE = "a binary file (it contains NUL bytes), skipped"

/** The reason a file that is not UTF-8 is skipped. */
export const NOT_UTF8 = "not UTF-8 text, skipped; convert it to UTF-8 to index it"

/** How many leading bytes decide whether a file is binary (a NUL among them), as `git` decides it. */
export const BINARY_SNIFF_BYTES = 8000

/** The largest JSONL line or CSV record read, in bytes; a longer one is a `BadRecord`, so memory stays bounded. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024

/** `bytes` for people: `64 MiB`, `8 KiB`, `10 bytes`. */
export const formatBytes = (bytes: number): string =>
  bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0
    ? `${bytes / (1024 * 1024)} MiB`
    : bytes >= 1024 && bytes % 1024 === 0
      ? `${bytes / 1024} KiB`
      : `${bytes} bytes`

/** A UTF-8 decoder that throws on malformed input and keeps byte order marks, so callers drop only the leading one. */
export const strictUtf8 = () => new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** `text` without a leading byte order mark. */
export const dropBom = (text: string): string => (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)

/**
 * Where `bytes` stop holding whole UTF-8 characters: its length, or the start of a character cut off at the end.
 * Malformed bytes are left for the decoder to reject.
 */
export const completeUtf8Length = (bytes: Uint8Array): number => {
  const last = bytes.length - 1
  for (let at = last; at >= 0 && at >= last - 3; at--) {
    const byte = bytes[at]!
    if ((byte & 0xc0) === 0x80) continue // a continuation byte: the character starts further back
    const width = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return at + width > bytes.length ? at : bytes.length
  }
  return bytes.length
}

/**
 * `reader`, unless the first `sniffBytes` bytes of the file hold a NUL byte: then the file is binary (or UTF-16) and
 * becomes one `BadRecord` for the whole file (line 0), and nothing of it is parsed. The head is held back until
 * `sniffBytes` bytes have come, so the answer does not depend on how the file is cut into pieces.
 */
export const sniffBinary = (
  reader: ByteReader,
  source: string,
  sniffBytes: number = BINARY_SNIFF_BYTES
): ByteReader => {
  let head: Array<Uint8Array> | undefined = []
  let headLength = 0
  let binary = false
  const release = (): ReadonlyArray<LineResult> => {
    const bytes = concatBytes(head!)
    head = undefined
    if (bytes.subarray(0, sniffBytes).includes(0)) {
      binary = true
      return [Result.fail(new BadRecord({ source, line: 0, reason: BINARY_FILE }))]
    }
    return bytes.length === 0 ? [] : reader.push(bytes)
  }
  return {
    push: (bytes) => {
      if (binary) return []
      if (head === undefined) return reader.push(bytes)
      head.push(bytes.slice())
      headLength += bytes.length
      return headLength >= sniffBytes ? release() : []
    },
    end: () => {
      const released = head === undefined ? [] : release()
      return binary ? released : [...released, ...reader.end()]
    },
    done: () => binary || reader.done()
  }
}
