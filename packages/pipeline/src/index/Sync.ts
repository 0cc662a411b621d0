/** Incremental indexing: which documents to add, replace, keep or delete, decided from content hashes. */
import { hash } from "node:crypto"

/**
 * SHA-256 (hex) of a raw document's id, title, body and categories. Equal hashes mean the document would index the
 * same way under the same settings, so it need not be embedded again.
 */
export const hashDoc = (doc: {
  readonly docId: string
  readonly title: string
  readonly body: string
  readonly categories: string | null
}): string =>
  // The one-shot hash: a third cheaper than createHash … digest on a 2 KB document.
  hash("sha256", JSON.stringify([doc.docId, doc.title, doc.body, doc.categories]), "hex")

/** A document as the index knows it: its id, content hash and the file it came from. */
export interface DocEntry {
  readonly docId: string
  readonly hash: string
  readonly source: string
}

/**
 * Whether a document just read is the one the index holds: the same content hash (see `hashDoc`), read from the same
 * file. The one test of "unchanged" for every run, plan and write; `before` is the stored entry, if any.
 */
export const isUnchanged = (
  before: { readonly hash: string; readonly source: string } | undefined,
  hash: string | undefined,
  source: string
): boolean => before !== undefined && before.hash === hash && before.source === source

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
    else if (!isUnchanged(before, doc.hash, doc.source)) updated.push(doc.docId)
    else unchanged.push(doc.docId)
  }
  const deleted = stored.filter((d) => !seen.has(d.docId)).map((d) => d.docId)
  return { added, updated, unchanged, deleted }
}

/** Up to this many documents a run may delete without `--prune` (when it reads the paths the index was built from). */
export const PRUNE_FREE_DOCUMENTS = 5

/** Up to this share of the index a run may delete without `--prune` (when it reads the paths it was built from). */
export const PRUNE_FREE_SHARE = 0.1

/**
 * Why deleting `deleted` of the `stored` documents needs the user's say-so (`--prune`), or `undefined` when it does
 * not: a run over other paths than the index was built from (`sameRoots` false) deletes nothing unasked, and a run
 * over the same paths deletes at most `PRUNE_FREE_DOCUMENTS` documents or `PRUNE_FREE_SHARE` of the index, whichever
 * is more. So a typo in a path cannot empty an index, while removing a few files is mirrored as usual. Pure.
 */
export const pruneReason = (deleted: number, stored: number, sameRoots: boolean): string | undefined => {
  if (deleted === 0) return undefined
  if (!sameRoots) return "the paths are not the ones the index was built from"
  const allowed = Math.max(PRUNE_FREE_DOCUMENTS, Math.floor(stored * PRUNE_FREE_SHARE))
  return deleted > allowed
    ? `that is more than ${allowed} documents (${Math.round(PRUNE_FREE_SHARE * 100)}% of the index, or ` +
        `${PRUNE_FREE_DOCUMENTS}, whichever is more)`
    : undefined
}

/** Whether two lists of paths name the same set of paths. */
export const samePaths = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean => {
  const left = new Set(a)
  const right = new Set(b)
  return left.size === right.size && [...left].every((p) => right.has(p))
}
