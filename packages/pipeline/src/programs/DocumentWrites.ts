/** Writing prepared documents into an open transaction, and the HTTP API's document writes: put and delete. */

import { AnalyzerConfig, ChunkerConfig, CleanerConfig } from "@funcpipe/domain/Config"
import type { RawDoc } from "@funcpipe/domain/Document"
import {
  DEFAULT_VECTOR_STORAGE,
  FORMAT_VERSION,
  IndexManifest,
  type IndexSettings,
  type VectorStorage
} from "@funcpipe/domain/Manifest"
import { Clock, Effect, Option } from "effect"
import type { PreparedBatch } from "../index/prepare/Prepare.ts"
import { Preparer } from "../index/prepare/Preparer.ts"
import { hashDoc, isUnchanged } from "../index/Sync.ts"
import { roundToFloat32 } from "../index/VectorCodec.ts"
import { Embedder } from "../models/Embedder.ts"
import { DimensionMismatch, ModelMismatch } from "../search/QueryErrors.ts"
import { type ChunkRecord, type DocWrite, IndexStore, type IndexWriter } from "../store/IndexStore.ts"

/** A document to write (its body is in the prepared batch), with where it came from and its content hash. */
export interface DocToWrite {
  readonly doc: Pick<RawDoc, "docId" | "title" | "categories">
  readonly source: string
  readonly hash: string
}

/**
 * Embeds a prepared batch (`prepared.docs[i]` is `docs[i]` cleaned, chunked and analyzed) and writes each document
 * with chunks through `writer`, replacing any earlier version. Returns each document's chunk count; a document with
 * none (nothing left after cleaning) is not written, and what to do about it is the caller's decision. Vectors
 * finer than float32 are rounded to it when the index stores them so (`storage`).
 */
export const writePrepared = Effect.fnUntraced(function* (
  writer: IndexWriter,
  dimensions: number,
  storage: VectorStorage,
  docs: ReadonlyArray<DocToWrite>,
  prepared: PreparedBatch
) {
  const embedder = yield* Embedder
  // Chunks the preparing threads embedded already (local-sha256) are not embedded again.
  const embeddings = yield* embedder.embedMany(prepared.docs.flatMap((d) => d.texts))
  const d = dimensions
  const terms = { vocabulary: prepared.vocabulary, ids: prepared.termIds }
  const counts: Array<number> = []
  const writes: Array<DocWrite> = []
  let chunkIndex = 0
  let embedded = 0
  let termAt = 0
  for (let i = 0; i < docs.length; i++) {
    const { doc, hash, source } = docs[i]!
    const { body, ends, starts, vectors: given } = prepared.docs[i]!
    if (given !== undefined && given.length !== starts.length * d) {
      return yield* new DimensionMismatch({ expected: d, actual: given.length / Math.max(1, starts.length) })
    }
    const vectors = given ?? new Float64Array(starts.length * d)
    const chunks: Array<ChunkRecord> = []
    for (let c = 0; c < starts.length; c++) {
      if (given === undefined) {
        const vector = embeddings[embedded++]!.vector
        if (vector.length !== d) return yield* new DimensionMismatch({ expected: d, actual: vector.length })
        vectors.set(vector, c * d)
      }
      const count = prepared.termCounts[chunkIndex++]!
      chunks.push({ start: starts[c]!, end: ends[c]!, from: termAt, to: termAt + count })
      termAt += count
    }
    counts.push(chunks.length)
    if (chunks.length === 0) continue
    if (storage === "float32") roundToFloat32(vectors, d)
    writes.push({
      doc: { docId: doc.docId, source, title: doc.title, categories: doc.categories, hash, body },
      chunks,
      vectors
    })
  }
  yield* writer.putDocs(writes, terms)
  return counts
})

/**
 * Whether the preparing threads can make the vectors: only for the reference `local-sha256` embedder itself, a pure
 * function of the text (an embedder that wraps it, to count calls for example, gets the texts).
 */
export const preparesVectors = (embedder: Embedder["Service"]): boolean =>
  embedder.embedMany === Embedder.localSha256.embedMany &&
  embedder.model === Embedder.localSha256.model &&
  embedder.fingerprint === Embedder.localSha256.fingerprint

/** The settings the index was built with, checked against the `Embedder`; the defaults for an index not built yet. */
const settingsOf = Effect.fnUntraced(function* (existing: Option.Option<IndexManifest>) {
  const embedder = yield* Embedder
  if (Option.isNone(existing)) {
    return {
      formatVersion: FORMAT_VERSION,
      model: embedder.model,
      dimensions: embedder.dimensions,
      modelFingerprint: embedder.fingerprint,
      cleaner: CleanerConfig.default,
      chunker: ChunkerConfig.default,
      analyzer: AnalyzerConfig.default,
      vectorStorage: DEFAULT_VECTOR_STORAGE
    } satisfies IndexSettings
  }
  const m = existing.value
  const settingsDiffer = m.modelFingerprint !== undefined && m.modelFingerprint !== embedder.fingerprint
  if (m.model !== embedder.model || m.dimensions !== embedder.dimensions || settingsDiffer) {
    return yield* new ModelMismatch({ index: m.model, query: embedder.model })
  }
  return { ...m, modelFingerprint: embedder.fingerprint } satisfies IndexSettings
})

/** What `putDocuments` did: doc ids by outcome, chunks written, and what the index holds after. */
export interface PutReport {
  readonly added: ReadonlyArray<string>
  readonly updated: ReadonlyArray<string>
  readonly unchanged: ReadonlyArray<string>
  /** Documents with nothing left after cleaning: not stored (an earlier version of one is deleted). */
  readonly skipped: ReadonlyArray<{ readonly docId: string; readonly reason: string }>
  readonly chunksWritten: number
  readonly documents: number
  readonly chunks: number
}

/**
 * Adds the documents to the index, or replaces the stored ones with the same doc ids, leaving every other document
 * as it is: the same clean → chunk → analyze → embed stages as `indexPaths`, with the index's own settings (the
 * defaults for a new index), in one write transaction, so readers see all of it or none. A document whose content
 * and `source` are unchanged is not embedded again. Doc ids must be distinct (the caller checks). The index's model
 * must be the `Embedder`'s (`ModelMismatch` otherwise).
 */
export const putDocuments = Effect.fn("putDocuments")(function* (
  docs: ReadonlyArray<RawDoc>,
  source: string,
  options: { readonly batchSize?: number } = {}
) {
  const store = yield* IndexStore
  const preparer = yield* Preparer
  const batchSize = options.batchSize ?? 64
  return yield* store.transaction((writer) =>
    Effect.gen(function* () {
      const existing = yield* writer.manifest
      const settings = yield* settingsOf(existing)
      const stored = yield* writer.storedDocs
      const after = new Map<string, number>([...stored].map(([docId, entry]) => [docId, entry.chunks]))
      const added: Array<string> = []
      const updated: Array<string> = []
      const unchanged: Array<string> = []
      const skipped: Array<{ readonly docId: string; readonly reason: string }> = []
      const pending: Array<DocToWrite & { readonly doc: RawDoc }> = []
      for (const doc of docs) {
        const hash = hashDoc(doc)
        const before = stored.get(doc.docId)
        if (isUnchanged(before, hash, source)) unchanged.push(doc.docId)
        else pending.push({ doc, source, hash })
      }
      let written = 0
      for (let from = 0; from < pending.length; from += batchSize) {
        const batch = pending.slice(from, from + batchSize)
        const prepared = yield* preparer.prepare(
          batch.map((p) => p.doc),
          { ...settings, localVectors: preparesVectors(yield* Embedder) }
        )
        const counts = yield* writePrepared(
          writer,
          settings.dimensions,
          settings.vectorStorage ?? "exact",
          batch,
          prepared
        )
        for (let i = 0; i < batch.length; i++) {
          const { docId } = batch[i]!.doc
          const was = stored.has(docId)
          if (counts[i]! === 0) {
            skipped.push({ docId, reason: `${JSON.stringify(docId)} has nothing left after cleaning` })
            if (was) yield* writer.deleteDoc(docId)
            after.delete(docId)
            continue
          }
          ;(was ? updated : added).push(docId)
          after.set(docId, counts[i]!)
          written += counts[i]!
        }
      }
      const chunks = [...after.values()].reduce((sum, n) => sum + n, 0)
      if (added.length + updated.length + skipped.length > 0) {
        const now = yield* Clock.currentTimeMillis
        yield* writer.putManifest(
          new IndexManifest({
            ...settings,
            createdAt: Option.isSome(existing) ? existing.value.createdAt : now,
            updatedAt: now,
            documents: after.size,
            chunks
          })
        )
      }
      return {
        added,
        updated,
        unchanged,
        skipped,
        chunksWritten: written,
        documents: after.size,
        chunks
      } satisfies PutReport
    })
  )
})

/** What `deleteDocuments` did: the doc ids deleted, those the index did not hold, and what it holds after. */
export interface DeleteReport {
  readonly deleted: ReadonlyArray<string>
  readonly missing: ReadonlyArray<string>
  readonly documents: number
  readonly chunks: number
}

/** Deletes the documents with these doc ids and their chunks, in one write transaction; ids not stored are listed. */
export const deleteDocuments = Effect.fn("deleteDocuments")(function* (docIds: ReadonlyArray<string>) {
  const store = yield* IndexStore
  return yield* store.transaction((writer) =>
    Effect.gen(function* () {
      const existing = yield* writer.manifest
      const stored = yield* writer.storedDocs
      const deleted: Array<string> = []
      const missing: Array<string> = []
      for (const docId of new Set(docIds)) {
        if (!stored.has(docId)) {
          missing.push(docId)
          continue
        }
        yield* writer.deleteDoc(docId)
        deleted.push(docId)
      }
      const gone = new Set(deleted)
      let chunks = 0
      for (const [docId, entry] of stored) if (!gone.has(docId)) chunks += entry.chunks
      const documents = stored.size - deleted.length
      if (deleted.length > 0 && Option.isSome(existing)) {
        yield* writer.putManifest(
          new IndexManifest({ ...existing.value, updatedAt: yield* Clock.currentTimeMillis, documents, chunks })
        )
      }
      return { deleted, missing, documents, chunks } satisfies DeleteReport
    })
  )
})
