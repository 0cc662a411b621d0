/**
 * How every run takes the records it reads: a bad record is skipped with its reason, the first record of a doc id
 * claims the id (a later one is skipped, naming where the first was read), and the keep rule then takes the document
 * or leaves it out. `index`, `status`, `search` and `chunks` all read documents through this one rule.
 */

import type { RawDoc } from "@funcpipe/domain/Document"
import { Result } from "effect"
import type { SourcedDoc, SourceRecord } from "./DocumentSource.ts"

/** A record that gave no document, or a document that gave no chunks, and why. */
export interface Skip {
  readonly source: string
  readonly line: number
  readonly reason: string
}

/** What became of one record. */
export type Claim =
  | { readonly _tag: "Skipped"; readonly skip: Skip }
  | { readonly _tag: "Dropped"; readonly sourced: SourcedDoc }
  | { readonly _tag: "Kept"; readonly sourced: SourcedDoc }
  | { readonly _tag: "Unread"; readonly file: string }

/** The claims of one run. */
export interface Claimer {
  /** What becomes of `record`; call it on each record in read order. */
  readonly take: (record: SourceRecord) => Claim
  /** Whether a record of this doc id was read (kept or left out by the rule); always false with `repeats: "keep"`. */
  readonly has: (docId: string) => boolean
  /**
   * Claims a stored document of a file left unread (its record is the index's): the skip a repeat of its doc id
   * would be, or `undefined` when the id is its own.
   */
  readonly known: (docId: string, file: string) => Skip | undefined
}

/**
 * A claimer for one run. With `repeats: "keep"` a repeated doc id is taken again (the reference's `chunks` output
 * keeps every record); by default the first record wins.
 */
export const claimer = (
  keeps: (doc: RawDoc, file: string) => boolean,
  repeats: "first" | "keep" = "first"
): Claimer => {
  // Where each doc id was first read, without a string per document (a run over a large corpus keeps one entry per
  // document read): the entry is an index into `places`, which holds (file number, line) pairs.
  const firstSource = new Map<string, number>()
  const files: Array<string> = []
  const fileNumbers = new Map<string, number>()
  let places = new Int32Array(1024)
  let placeCount = 0
  const describe = (place: number) => {
    const file = files[places[2 * place]!]!
    const line = places[2 * place + 1]!
    return line > 0 ? `${file}:${line}` : file
  }
  const remember = (docId: string, file: string, line: number) => {
    let fileNumber = fileNumbers.get(file)
    if (fileNumber === undefined) {
      fileNumber = files.length
      files.push(file)
      fileNumbers.set(file, fileNumber)
    }
    if (2 * placeCount + 2 > places.length) {
      const grown = new Int32Array(places.length * 2)
      grown.set(places)
      places = grown
    }
    places[2 * placeCount] = fileNumber
    places[2 * placeCount + 1] = line
    firstSource.set(docId, placeCount++)
  }
  /** The skip of a repeated doc id, or `undefined` after claiming it for `file`. */
  const claim = (docId: string, file: string, line: number): Skip | undefined => {
    const first = firstSource.get(docId)
    if (first === undefined) return void remember(docId, file, line)
    return {
      source: file,
      line,
      reason: `the doc id ${JSON.stringify(docId)} was already read from ${describe(first)}`
    }
  }
  const take = (record: SourceRecord): Claim => {
    if (Result.isFailure(record)) {
      const failure = record.failure
      if (failure._tag === "UnreadFile") return { _tag: "Unread", file: failure.source }
      const { line, reason, source } = failure
      return { _tag: "Skipped", skip: { source, line, reason } }
    }
    const sourced = record.success
    const { doc, line, source: file } = sourced
    if (repeats === "first") {
      const skip = claim(doc.docId, file, line)
      if (skip !== undefined) return { _tag: "Skipped", skip }
    }
    return keeps(doc, file) ? { _tag: "Kept", sourced } : { _tag: "Dropped", sourced }
  }
  return { take, has: (docId) => firstSource.has(docId), known: (docId, file) => claim(docId, file, 0) }
}

/** The skip of a document whose cleaned body is empty: it has no chunks, so it could never be found. */
export const emptyAfterCleaning = ({
  doc,
  line,
  source
}: Pick<SourcedDoc, "line" | "source"> & { readonly doc: { readonly docId: string } }): Skip => ({
  source,
  line,
  reason: `${JSON.stringify(doc.docId)} has nothing left after cleaning`
})
