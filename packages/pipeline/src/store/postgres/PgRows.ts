/** A document's row in the PostgreSQL store: how the writer encodes its fields and search data, and how a snapshot loads rows back, a page at a time. */

import { IndexManifest } from "@funcpipe/domain/Manifest"
import { Effect, Schema } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { deflateBody, type PackReader } from "../../index/BodyPack.ts"
import { type ChunkRecord, type DocRecord, type TermTable, typed } from "../IndexStore.ts"
import { withGraphs } from "../LoadedGraphs.ts"
import { type LoadedDoc, snapshotLoader } from "../LoadedSnapshot.ts"
import { IndexCorrupt } from "../StoreErrors.ts"
import { type GraphTables, loadGraphs } from "./PgGraphs.ts"

export { decodeManifestJson as decodeManifest } from "@funcpipe/domain/Manifest"
export const encodeManifest = Schema.encodeSync(Schema.fromJsonString(IndexManifest))
export const decodeRoots = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Array(Schema.String)))

/** A document's row as the writer inserts it. */
export type Row = Record<string, string | number | null | Uint8Array>

/** Rows the writer buffers before one multi-row insert, and the bytes they may hold. */
export const FLUSH_ROWS = 256
export const FLUSH_BYTES = 8 * 1024 * 1024

export const COLUMNS = "doc_id, source, title, categories, hash, chunks, body, spans, lengths, terms, term_ids, vectors"

export const bytesOf = (array: Uint16Array | Uint32Array | Float64Array): Uint8Array =>
  new Uint8Array(array.buffer, array.byteOffset, array.byteLength)

/**
 * A document's row: its chunks' spans, term counts and vectors as little-endian typed arrays, and its terms as the
 * document's own vocabulary (space-separated: a term never holds a space) with each chunk's terms numbered into it.
 */
export const rowOf = (
  packs: PackReader,
  doc: DocRecord,
  chunks: ReadonlyArray<ChunkRecord>,
  terms: TermTable,
  vectors: Float64Array
): Row => {
  const local = new Map<number, number>()
  const vocabulary: Array<string> = []
  const spans = new Uint32Array(2 * chunks.length)
  const lengths = new Uint32Array(chunks.length)
  let total = 0
  for (const chunk of chunks) total += chunk.to - chunk.from
  const ids = new Uint32Array(total)
  let at = 0
  chunks.forEach((chunk, c) => {
    spans[2 * c] = chunk.start
    spans[2 * c + 1] = chunk.end
    lengths[c] = chunk.to - chunk.from
    for (let i = chunk.from; i < chunk.to; i++) {
      const id = terms.ids[i]!
      let n = local.get(id)
      if (n === undefined) {
        local.set(id, (n = vocabulary.length))
        vocabulary.push(terms.vocabulary[id]!)
      }
      ids[at++] = n
    }
  })
  return {
    doc_id: doc.docId,
    source: doc.source,
    title: doc.title,
    categories: doc.categories,
    hash: doc.hash,
    chunks: chunks.length,
    body: deflateBody(packs, doc.body),
    spans: bytesOf(spans),
    lengths: bytesOf(lengths),
    terms: vocabulary.join(" "),
    term_ids: bytesOf(vocabulary.length <= 0x10000 ? Uint16Array.from(ids) : ids),
    vectors: bytesOf(vectors.slice())
  }
}

/** Documents read per statement when a snapshot loads: one page of rows is held at a time, never the whole index. */
const LOAD_PAGE = 1000

/**
 * Loads the documents of `documents` that `where` selects into a snapshot, a page of rows at a time in id order, each
 * row's search data going into the snapshot's segment and then let go. Run it inside one repeatable-read
 * transaction, so every page comes from one committed state. The fiber yields between pages, so a process that
 * loads a large index keeps serving its other work (a cluster runner its heartbeats).
 */
export const loadSnapshot = Effect.fnUntraced(function* (
  sql: SqlClient.SqlClient,
  documents: Statement.Identifier,
  location: string,
  manifest: IndexManifest,
  where: Statement.Fragment,
  graphTables?: GraphTables
) {
  const loader = snapshotLoader(location, manifest)
  const corrupt = (error: unknown) =>
    error instanceof IndexCorrupt ? error : new IndexCorrupt({ location, detail: String(error) })
  // Where each document's chunks are, by row id: what the graphs' rows are mapped to.
  const loaded = new Map<number, { readonly first: number; readonly chunks: number }>()
  let positions = 0
  let after = 0n
  for (;;) {
    const rows = yield* sql<Record<string, unknown>>`
      SELECT id, ${sql.literal(COLUMNS)} FROM ${documents} WHERE id > ${after} AND ${where} ORDER BY id
      LIMIT ${LOAD_PAGE}`
    yield* Effect.try({
      try: () => {
        for (const row of rows) {
          const doc = loadedDoc(location, row)
          loader.add(doc)
          const id = Number(row["id"])
          if (!Number.isSafeInteger(id))
            throw new IndexCorrupt({ location, detail: "a document's row id is out of range" })
          if (graphTables !== undefined) loaded.set(id, { first: positions, chunks: doc.chunks })
          positions += doc.chunks
        }
      },
      catch: corrupt
    })
    if (rows.length < LOAD_PAGE) break
    const last = rows[rows.length - 1]!["id"]
    if (typeof last !== "bigint") return yield* new IndexCorrupt({ location, detail: "a document's row id is damaged" })
    after = last
  }
  const snapshot = yield* Effect.try({ try: loader.finish, catch: corrupt })
  if (graphTables === undefined || manifest.ann === undefined) return snapshot
  const { damage, graphs } = yield* loadGraphs(sql, graphTables, manifest, loaded, positions)
  return yield* Effect.try({ try: () => withGraphs(snapshot, graphs, damage, location), catch: corrupt })
})

/** A loaded document from its row; `IndexCorrupt` (thrown) when a column is not what the writer wrote. */
const loadedDoc = (location: string, row: Record<string, unknown>): LoadedDoc => {
  const docId = row["doc_id"]
  const bad = (what: string) =>
    new IndexCorrupt({ location, detail: `the ${what} of document ${JSON.stringify(docId)} are unreadable` })
  const chunks = row["chunks"]
  const spans = typed(row["spans"], 4, (b, o, n) => new Uint32Array(b, o, n))
  const lengths = typed(row["lengths"], 4, (b, o, n) => new Uint32Array(b, o, n))
  const vectors = typed(row["vectors"], 8, (b, o, n) => new Float64Array(b, o, n))
  const terms = row["terms"]
  const body = row["body"]
  if (typeof chunks !== "number" || spans === undefined || lengths === undefined || !(body instanceof Uint8Array)) {
    throw bad("chunks")
  }
  if (vectors === undefined) throw bad("vectors")
  if (typeof terms !== "string") throw bad("terms")
  let total = 0
  for (let c = 0; c < lengths.length; c++) total += lengths[c]!
  const idBytes = row["term_ids"]
  const width = total === 0 ? 2 : idBytes instanceof Uint8Array ? idBytes.byteLength / total : 0
  const termIds =
    width === 2
      ? typed(idBytes, 2, (b, o, n) => new Uint16Array(b, o, n))
      : width === 4
        ? typed(idBytes, 4, (b, o, n) => new Uint32Array(b, o, n))
        : undefined
  if (termIds === undefined) throw bad("terms")
  // Plain type checks here (a load reads every document); the full rules are checked where a document is decoded.
  const { categories, hash, source, title } = row
  if (
    typeof docId !== "string" ||
    docId === "" ||
    typeof source !== "string" ||
    typeof title !== "string" ||
    typeof hash !== "string" ||
    !(typeof categories === "string" || categories === null)
  )
    throw bad("fields")
  return {
    docId,
    source,
    title,
    categories,
    hash,
    chunks,
    body,
    spans,
    lengths,
    terms: terms === "" ? [] : terms.split(" "),
    termIds,
    vectors
  }
}
