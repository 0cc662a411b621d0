/** Incremental indexing: which documents to add, replace, keep or delete, decided from content hashes. */
import { createHash } from "node:crypto"
import type { RawDoc } from "@funcpipe/domain/Document"

/**
 * SHA-256 (hex) of a raw document's id, title, body and categories. Equal hashes mean the document would index the
 * same way under the same settings, so it need not be embedded again.
 */
export const hashDoc = (doc: RawDoc): string =>
  createHash("sha256").update(JSON.stringify([doc.docId, doc.title, doc.body, doc.categories]), "utf8").digest("hex")

/** A document as the index knows it: its id, content hash and the file it came from. */
export interface DocEntry {
  readonly docId: string
  readonly hash: string
  readonly source: string
}

/** What a re-index run will do, by doc id. `added` and `updated` keep the order the documents were read in. */
export interface SyncPlan {
  readonly added: ReadonlyArray<string>
  readonly updated: ReadonlyArray<string>
  readonly unchanged: ReadonlyArray<string>
  readonly deleted: ReadonlyArray<string>
}

/**
 * Compares what is stored with what was just read: a new id is added, a known id with another hash (or from another
 * file) is updated, a known id with the same hash is unchanged, and a stored id that was not read is deleted. Pure.
 */
export const planSync = (stored: ReadonlyArray<DocEntry>, current: ReadonlyArray<DocEntry>): SyncPlan => {
  const known = new Map(stored.map((d) => [d.docId, d] as const))
  const seen = new Set<string>()
  const added: Array<string> = []
  const updated: Array<string> = []
  const unchanged: Array<string> = []
  for (const doc of current) {
    seen.add(doc.docId)
    const before = known.get(doc.docId)
    if (before === undefined) added.push(doc.docId)
    else if (before.hash !== doc.hash || before.source !== doc.source) updated.push(doc.docId)
    else unchanged.push(doc.docId)
  }
  const deleted = stored.filter((d) => !seen.has(d.docId)).map((d) => d.docId)
  return { added, updated, unchanged, deleted }
}
