/** The persistent indexing workflow: read the paths, plan the changes against the stored index, write them atomically. */

import { AnalyzerConfig, ChunkerConfig, CleanerConfig } from "@funcpipe/domain/Config"
import type { RawDoc } from "@funcpipe/domain/Document"
import { FORMAT_VERSION, IndexManifest, type IndexSettings } from "@funcpipe/domain/Manifest"
import { isKeepAll, keepAll, mapPaths, printRule, type Rule } from "@funcpipe/domain/Rule"
import { Clock, Effect, Option, Path, Result, Schema, Stream } from "effect"
import { describeMigration, planMigration } from "../index/Migration.ts"
import type { PreparedBatch } from "../index/prepare/Prepare.ts"
import { Preparer } from "../index/prepare/Preparer.ts"
import { hashDoc, pruneReason, type SyncPlan, samePaths } from "../index/Sync.ts"
import { Embedder } from "../models/Embedder.ts"
import { cachedEmbedder, EmbeddingCache } from "../models/EmbeddingCache.ts"
import { claimer, emptyAfterCleaning, type Skip } from "../read/Claim.ts"
import { DocumentSource, type SourcedDoc, type SourceRecord } from "../read/DocumentSource.ts"
import { keepChange, keepTest } from "../read/Keep.ts"
import { DimensionMismatch } from "../search/Cosine.ts"
import { ModelMismatch } from "../search/Retrieve.ts"
import { type ChunkRecord, type DocWrite, IndexStore, type IndexWriter, type StoredEntry } from "../store/IndexStore.ts"

/** The stored index was built with other settings; the message says what changed and how to go on. */
export class SettingsChanged extends Schema.TaggedError<SettingsChanged>()("SettingsChanged", {
  location: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return (
      `the index at ${this.location} cannot be updated: ${this.detail}. Run the same command with --rebuild ` +
      `to rebuild it from scratch with the new settings`
    )
  }
}

/** The run would delete more of the index than it may without `--prune`; nothing was written. */
export class PruneNeeded extends Schema.TaggedError<PruneNeeded>()("PruneNeeded", {
  location: Schema.String,
  deleted: Schema.Int,
  stored: Schema.Int,
  reason: Schema.String
}) {
  override get message(): string {
    return (
      `this run would delete ${this.deleted} of the ${this.stored} documents in ${this.location} (${this.reason}), ` +
      `so it changed nothing. Check the paths; to delete them, run again with --prune (add --dry-run to list them)`
    )
  }
}

/** Every record under the paths was skipped, so the run had nothing to index; nothing was written. */
export class NothingToIndex extends Schema.TaggedError<NothingToIndex>()("NothingToIndex", {
  location: Schema.String,
  skipped: Schema.Int,
  first: Schema.String
}) {
  override get message(): string {
    const records = this.skipped === 1 ? "the only record" : `all ${this.skipped} records`
    return (
      `nothing to index: ${records} under the paths could not be read (${this.first}), so ${this.location} ` +
      `was left as it was`
    )
  }
}

/** The keep rule matched none of the documents read, so the run would have emptied the index; nothing was written. */
export class NothingKept extends Schema.TaggedError<NothingKept>()("NothingKept", {
  location: Schema.String,
  rule: Schema.String,
  dropped: Schema.Int
}) {
  override get message(): string {
    return (
      `the keep rule ${this.rule} kept none of the ${this.dropped} documents under the paths, so ` +
      `${this.location} was left as it was; check the rule (values and labels compare exactly, case included)`
    )
  }
}

/** How an index run cleans, chunks and writes. */
export interface IndexOptions {
  /**
   * Which documents the index holds (default: all); the others are not indexed, and deleted if they were. Its
   * `source under` paths are resolved against the working directory.
   */
  readonly keep?: Rule
  readonly cleaner?: CleanerConfig
  readonly chunker?: ChunkerConfig
  readonly analyzer?: AnalyzerConfig
  /** Plan only: read and compare, write nothing. */
  readonly dryRun?: boolean
  /** Replace the whole index, whatever it was built with. */
  readonly rebuild?: boolean
  /** Delete the documents no longer found however many they are (see `pruneReason`); without it such a run fails. */
  readonly prune?: boolean
  /** Documents per embedding batch. */
  readonly batchSize?: number
  /**
   * Called after each batch with the documents read so far; `total` is 0 until the run knows it (at the end).
   * `stage` is `embedding` while a costly model embeds ahead of the write, `indexing` after.
   */
  readonly progress?: (done: number, total: number, stage: "embedding" | "indexing") => Effect.Effect<void>
}

/**
 * What an index run did (or, with `dryRun`, would do). `documents` and `chunks` are what the index holds after the
 * run (with `dryRun`: what it holds now, as nothing is written).
 */
export interface IndexReport {
  readonly plan: SyncPlan
  readonly chunksWritten: number
  readonly documents: number
  readonly chunks: number
  /** With `dryRun`: why the real run would need `prune` to make its deletions (undefined when it would not). */
  readonly pruneNeeded: string | undefined
  readonly skipped: ReadonlyArray<Skip>
  /** The keep rule applied, its paths absolute (`keepAll` without one). */
  readonly keep: Rule
  /** Documents read that the keep rule left out (deleted from the index if they were in it). */
  readonly dropped: number
  /** How the keep rule differs from the one the index was built with, or `undefined`. */
  readonly keepChanged: { readonly from: string; readonly to: string } | undefined
  readonly dryRun: boolean
  readonly rebuilt: boolean
  readonly elapsedMillis: number
}

/**
 * A document of this run that must be (re)written: its record and hash, in read order. A document new to the index
 * needs no hash to be planned, and gets it from the preparer (`hashDocs`), which may make it on another thread.
 */
interface Pending {
  readonly sourced: SourcedDoc
  readonly hash: string | undefined
}

/**
 * A document to write once its batch has gone to be prepared: all but its body, which the preparing thread has.
 * Keeping the bodies of the 4,096 documents in flight made them outlive the young generation (a 210 MB run: 320 ms
 * less collection on the main thread, 15-20 MB less peak memory without them).
 */
interface Pended {
  readonly sourced: Pick<SourcedDoc, "source" | "line"> & {
    readonly doc: Pick<RawDoc, "docId" | "title" | "categories">
  }
  readonly hash: string | undefined
}

const withoutBody = ({ hash, sourced: { doc, line, source } }: Pending): Pended => ({
  hash,
  sourced: { source, line, doc: { docId: doc.docId, title: doc.title, categories: doc.categories } }
})

/**
 * Makes the index at the `IndexStore` mirror the documents under `paths`: new documents are added, changed ones
 * (another content hash) re-chunked and re-embedded, unchanged ones left alone without embedding, and documents no
 * longer found are deleted. Documents stream through clean → chunk → analyze → embed in batches of `batchSize` and
 * are written as they go, so memory does not grow with the corpus. Everything, the settings check and the sync plan
 * included, happens inside one write transaction: an interrupted run leaves the previous index, and two runs cannot
 * interleave. If the index was built with other settings the run fails with `SettingsChanged` unless `rebuild` is set.
 *
 * With a costly model (`Embedder.costly`) and an `EmbeddingCache` in the context, the documents to write are embedded
 * first, outside the write transaction, into the cache; the transaction then finds their vectors there. So a slow
 * model does not hold the lock, and a run stopped while embedding, run again, embeds only what it had not.
 */
export const indexPaths = Effect.fn("indexPaths")(function* (paths: ReadonlyArray<string>, options: IndexOptions = {}) {
  const store = yield* IndexStore
  const model = yield* Embedder
  const source = yield* DocumentSource
  const path = yield* Path.Path
  const startedAt = yield* Clock.currentTimeMillis
  const settings: IndexSettings = {
    formatVersion: FORMAT_VERSION,
    model: model.model,
    dimensions: model.dimensions,
    modelFingerprint: model.fingerprint,
    cleaner: options.cleaner ?? CleanerConfig.default,
    chunker: options.chunker ?? ChunkerConfig.default,
    analyzer: options.analyzer ?? AnalyzerConfig.default
  }
  const rebuild = options.rebuild === true
  const dryRun = options.dryRun === true
  const prune = options.prune === true
  const batchSize = options.batchSize ?? 64
  const progress = options.progress ?? (() => Effect.void)
  const roots = paths.map((p) => path.resolve(p))
  const keep = mapPaths(options.keep ?? keepAll, (p) => path.resolve(p))
  const keeps = keepTest(keep, (file) => path.resolve(file))
  const preparer = yield* Preparer
  // A costly model's vectors go through the embedding cache when there is one; a cheap one's are simply made again.
  const cache = model.costly === true ? yield* Effect.serviceOption(EmbeddingCache) : Option.none()
  const embedder = Option.match(cache, { onNone: () => model, onSome: (c) => cachedEmbedder(model, c) })

  if (Option.isSome(cache) && !dryRun) {
    // A costly model embeds first, without the write lock: what this run will write goes through the cache, so the
    // run below finds every vector there. Its plan is remade under the lock; this one only decides what to embed.
    const stored = rebuild
      ? new Map<string, StoredEntry>()
      : yield* store.transaction((w) => w.storedDocs, { readOnly: true })
    const claim = claimer(keeps)
    let embedded = 0
    yield* source.read(roots).pipe(
      Stream.filterMap((record) => {
        const claimed = claim.take(record)
        if (claimed._tag !== "Kept") return Result.failVoid
        const { doc, source: file } = claimed.sourced
        const before = stored.get(doc.docId)
        return before !== undefined && before.hash === hashDoc(doc) && before.source === file
          ? Result.failVoid
          : Result.succeed(doc)
      }),
      Stream.grouped(batchSize),
      Stream.mapEffect((docs) => preparer.prepare(docs, settings), { concurrency: preparer.concurrency }),
      Stream.runForEach((prepared) =>
        Effect.gen(function* () {
          yield* embedder.embedMany(prepared.docs.flatMap((d) => d.texts))
          embedded += prepared.docs.length
          yield* progress(embedded, 0, "embedding")
        })
      )
    )
  }

  return yield* store.transaction(
    (writer) =>
      Effect.gen(function* () {
        const existing = yield* writer.manifest
        if (Option.isSome(existing) && !rebuild) {
          const migration = planMigration(existing.value, settings)
          if (migration._tag !== "Compatible") {
            return yield* new SettingsChanged({ location: store.location, detail: describeMigration(migration) })
          }
        }
        const stored = rebuild ? new Map<string, StoredEntry>() : yield* writer.storedDocs
        const storedRoots = yield* writer.roots
        if (rebuild && !dryRun) yield* writer.clear

        const added: Array<string> = []
        const updated: Array<string> = []
        const unchanged: Array<string> = []
        const deleted: Array<string> = []
        const skipped: Array<Skip> = []
        /** Doc ids the keep rule left out. */
        const dropped = new Set<string>()
        let keptChunks = 0
        let written = 0
        let read = 0

        /** Plans one record: skipped, unchanged, or to be written (returned). */
        const claim = claimer(keeps)
        const planRecord = (record: SourceRecord): Pending | undefined => {
          const claimed = claim.take(record)
          if (claimed._tag === "Skipped") return void skipped.push(claimed.skip)
          const { doc, source: file } = claimed.sourced
          if (claimed._tag === "Dropped") return void dropped.add(doc.docId)
          read++
          const before = stored.get(doc.docId)
          const hash = before === undefined ? undefined : hashDoc(doc)
          if (before !== undefined && before.hash === hash && before.source === file) {
            unchanged.push(doc.docId)
            keptChunks += before.chunks
            return undefined
          }
          ;(before === undefined ? added : updated).push(doc.docId)
          return dryRun ? undefined : { sourced: claimed.sourced, hash }
        }

        /** Embeds a prepared batch and writes its documents. */
        const write = ({
          batch,
          prepared
        }: {
          readonly batch: ReadonlyArray<Pended>
          readonly prepared: PreparedBatch
        }) =>
          Effect.gen(function* () {
            const docs: Array<DocToWrite> = []
            for (let i = 0; i < batch.length; i++) {
              const { hash, sourced } = batch[i]!
              const made = hash ?? prepared.flat.hashes?.[i]
              if (made === undefined) return yield* Effect.die(new Error("the preparer left a new document unhashed"))
              docs.push({ ...sourced, hash: made })
            }
            // Through the cache, when the model is costly: the pass before the lock has put every vector there.
            const counts = yield* writePrepared(writer, settings.dimensions, docs, prepared).pipe(
              Effect.provideService(Embedder, embedder)
            )
            for (let i = 0; i < batch.length; i++) {
              if (counts[i]! > 0) {
                written += counts[i]!
                continue
              }
              const { doc } = batch[i]!.sourced
              // Not a document of the index: skipped (and its older version, if any, deleted).
              skipped.push(emptyAfterCleaning(batch[i]!.sourced))
              read--
              const wasAdded = added.lastIndexOf(doc.docId)
              if (wasAdded !== -1) added.splice(wasAdded, 1)
              else if (updated.includes(doc.docId)) {
                updated.splice(updated.lastIndexOf(doc.docId), 1)
                deleted.push(doc.docId)
                yield* writer.deleteDoc(doc.docId)
              }
            }
            yield* progress(read, 0, "indexing")
          })

        // Batches are prepared (clean, chunk, analyze) ahead on the preparer's threads while earlier ones are written.
        yield* source.read(roots).pipe(
          Stream.map(planRecord),
          Stream.filter((pending): pending is Pending => pending !== undefined),
          Stream.grouped(batchSize),
          Stream.mapEffect(
            (batch) => {
              const pended = batch.map(withoutBody)
              return Effect.map(
                preparer.prepare(
                  batch.map((p) => p.sourced.doc),
                  {
                    ...settings,
                    localVectors: preparesVectors(embedder),
                    hashDocs: batch.some((p) => p.hash === undefined)
                  }
                ),
                (prepared) => ({ batch: pended, prepared })
              )
            },
            { concurrency: preparer.concurrency }
          ),
          Stream.runForEach(write)
        )
        yield* progress(read, read, "indexing")

        if (read === 0 && skipped.length > 0) {
          const { line, reason, source } = skipped[0]!
          const first = `${line > 0 ? `${source}:${line}` : source}: ${reason}`
          return yield* new NothingToIndex({ location: store.location, skipped: skipped.length, first })
        }
        if (read === 0 && dropped.size > 0) {
          return yield* new NothingKept({ location: store.location, rule: printRule(keep), dropped: dropped.size })
        }
        const keepChanged = Option.isSome(existing) ? keepChange(existing.value.keep, keep) : undefined
        const gone = [...stored.keys()].filter((docId) => !claim.has(docId) || dropped.has(docId))
        const pruneReasonNow = prune ? undefined : pruneReason(gone.length, stored.size, samePaths(storedRoots, roots))
        // A rule that now leaves out documents the index holds deletes them; the user is told that is why.
        const pruneNeeded =
          pruneReasonNow === undefined || keepChanged === undefined
            ? pruneReasonNow
            : `${pruneReasonNow}; the keep rule changed from ${keepChanged.from} to ${keepChanged.to}`
        if (pruneNeeded !== undefined && !dryRun) {
          return yield* new PruneNeeded({
            location: store.location,
            deleted: gone.length,
            stored: stored.size,
            reason: pruneNeeded
          })
        }
        deleted.push(...gone)
        if (!dryRun) {
          for (const docId of gone) yield* writer.deleteDoc(docId)
          const now = yield* Clock.currentTimeMillis
          yield* writer.putRoots(roots)
          yield* writer.putManifest(
            new IndexManifest({
              ...settings,
              ...(isKeepAll(keep) ? {} : { keep }),
              createdAt: Option.isSome(existing) && !rebuild ? existing.value.createdAt : now,
              updatedAt: now,
              documents: read,
              chunks: keptChunks + written
            })
          )
        }
        const plan: SyncPlan = { added, updated, unchanged, deleted }
        const now = Option.match(existing, { onNone: () => ({ documents: 0, chunks: 0 }), onSome: (m) => m })
        return {
          plan,
          chunksWritten: written,
          documents: dryRun ? now.documents : read,
          chunks: dryRun ? now.chunks : keptChunks + written,
          pruneNeeded,
          skipped,
          keep,
          dropped: dropped.size,
          keepChanged,
          dryRun,
          rebuilt: rebuild,
          elapsedMillis: (yield* Clock.currentTimeMillis) - startedAt
        } satisfies IndexReport
      }),
    { readOnly: dryRun }
  )
})

/** A document to write (its body is in the prepared batch), with where it came from and its content hash. */
interface DocToWrite {
  readonly doc: Pick<RawDoc, "docId" | "title" | "categories">
  readonly source: string
  readonly hash: string
}

/**
 * Embeds a prepared batch (`prepared.docs[i]` is `docs[i]` cleaned, chunked and analyzed) and writes each document
 * with chunks through `writer`, replacing any earlier version. Returns each document's chunk count; a document with
 * none (nothing left after cleaning) is not written, and what to do about it is the caller's decision.
 */
const writePrepared = Effect.fnUntraced(function* (
  writer: IndexWriter,
  dimensions: number,
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
const preparesVectors = (embedder: Embedder["Service"]): boolean =>
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
      analyzer: AnalyzerConfig.default
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
        if (before !== undefined && before.hash === hash && before.source === source) unchanged.push(doc.docId)
        else pending.push({ doc, source, hash })
      }
      let written = 0
      for (let from = 0; from < pending.length; from += batchSize) {
        const batch = pending.slice(from, from + batchSize)
        const prepared = yield* preparer.prepare(
          batch.map((p) => p.doc),
          { ...settings, localVectors: preparesVectors(yield* Embedder) }
        )
        const counts = yield* writePrepared(writer, settings.dimensions, batch, prepared)
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
