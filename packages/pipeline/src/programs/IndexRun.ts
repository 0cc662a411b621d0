/** The persistent indexing workflow: read the paths, plan the changes against the stored index, write them atomically. */
import { Clock, Effect, Option, Path, Result, Schema, Stream } from "effect"
import { AnalyzerConfig, ChunkerConfig, CleanerConfig } from "@funcpipe/domain/Config"
import { FORMAT_VERSION, IndexManifest, type IndexSettings } from "@funcpipe/domain/Manifest"
import { DocumentSource, type SourcedDoc } from "../services/DocumentSource.ts"
import { Embedder } from "../services/Embedder.ts"
import { type IndexedChunk, IndexStore, StoredDoc } from "../services/IndexStore.ts"
import { analyze, termCounts } from "../stages/Analyzer.ts"
import { chunkDoc } from "../stages/Chunker.ts"
import { cleanDoc } from "../stages/Clean.ts"
import { embedChunk } from "../stages/Embed.ts"
import { describeMigration, planMigration } from "../stages/Migration.ts"
import { type DocEntry, hashDoc, planSync, type SyncPlan } from "../stages/Sync.ts"
import type { Skip } from "./Ingest.ts"

/** The stored index was built with other settings; the message says what changed and how to go on. */
export class SettingsChanged extends Schema.TaggedError<SettingsChanged>()("SettingsChanged", {
  location: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `the index at ${this.location} cannot be updated: ${this.detail}. Run the same command with --rebuild ` +
      `to rebuild it from scratch with the new settings`
  }
}

/** How an index run cleans, chunks and writes. */
export interface IndexOptions {
  readonly cleaner?: CleanerConfig
  readonly chunker?: ChunkerConfig
  readonly analyzer?: AnalyzerConfig
  /** Plan only: read and compare, write nothing. */
  readonly dryRun?: boolean
  /** Replace the whole index, whatever it was built with. */
  readonly rebuild?: boolean
  /** Documents per embedding batch. */
  readonly batchSize?: number
  /** Called after each batch with documents done and documents to do. */
  readonly progress?: (done: number, total: number) => Effect.Effect<void>
}

/** What an index run did (or, with `dryRun`, would do). */
export interface IndexReport {
  readonly plan: SyncPlan
  readonly chunksWritten: number
  readonly documents: number
  readonly chunks: number
  readonly skipped: ReadonlyArray<Skip>
  readonly dryRun: boolean
  readonly rebuilt: boolean
  readonly elapsedMillis: number
}

/** A document read in this run, with its content hash. */
interface ReadDoc extends DocEntry {
  readonly sourced: SourcedDoc
}

/** Reads every record under the roots; the first document of an id wins, later ones are skipped with a reason. */
const readDocs = Effect.fn("readDocs")(function*(roots: ReadonlyArray<string>) {
  const source = yield* DocumentSource
  const docs: Array<ReadDoc> = []
  const firstSource = new Map<string, string>()
  const skipped: Array<Skip> = []
  yield* source.read(roots).pipe(
    Stream.runForEach((record) =>
      Effect.sync(() => {
        if (Result.isFailure(record)) {
          skipped.push({ source: record.failure.source, line: record.failure.line, reason: record.failure.reason })
          return
        }
        const { doc, source } = record.success
        const first = firstSource.get(doc.docId)
        if (first !== undefined) {
          skipped.push({ source, line: 0, reason: `the doc id ${JSON.stringify(doc.docId)} was already read from ${first}` })
          return
        }
        firstSource.set(doc.docId, source)
        docs.push({ docId: doc.docId, hash: hashDoc(doc), source, sourced: record.success })
      })
    )
  )
  return { docs, skipped } as const
})

/**
 * Makes the index at the `IndexStore` mirror the documents under `paths`: new documents are added, changed ones
 * (another content hash) re-chunked and re-embedded, unchanged ones left alone without embedding, and documents no
 * longer found are deleted. All writes happen in one transaction, so an interrupted run leaves the previous index.
 * If the index was built with other settings the run fails with `SettingsChanged` unless `rebuild` is set.
 */
export const indexPaths = Effect.fn("indexPaths")(function*(paths: ReadonlyArray<string>, options: IndexOptions = {}) {
  const store = yield* IndexStore
  const embedder = yield* Embedder
  const path = yield* Path.Path
  const startedAt = yield* Clock.currentTimeMillis
  const settings: IndexSettings = {
    formatVersion: FORMAT_VERSION,
    model: embedder.model,
    dimensions: embedder.dimensions,
    cleaner: options.cleaner ?? CleanerConfig.default,
    chunker: options.chunker ?? ChunkerConfig.default,
    analyzer: options.analyzer ?? AnalyzerConfig.default
  }
  const rebuild = options.rebuild === true
  const dryRun = options.dryRun === true
  const existing = yield* store.manifest
  if (Option.isSome(existing) && !rebuild) {
    const migration = planMigration(existing.value, settings)
    if (migration._tag !== "Compatible") {
      return yield* new SettingsChanged({ location: store.location, detail: describeMigration(migration) })
    }
  }

  const roots = paths.map((p) => path.resolve(p))
  const { docs, skipped } = yield* readDocs(roots)
  const stored = rebuild ? [] : yield* store.documents
  const plan = planSync(stored, docs)
  const storedChunks = new Map<string, number>(stored.map((d) => [d.docId, d.chunks] as const))
  const toWrite = new Set([...plan.added, ...plan.updated])
  const pending = docs.filter((d) => toWrite.has(d.docId))
  const keptChunks = plan.unchanged.reduce((sum, id) => sum + (storedChunks.get(id) ?? 0), 0)
  const report = (chunksWritten: number): IndexReport => ({
    plan,
    chunksWritten,
    documents: docs.length,
    chunks: keptChunks + chunksWritten,
    skipped,
    dryRun,
    rebuilt: rebuild,
    elapsedMillis: 0
  })
  if (dryRun) return { ...report(0), elapsedMillis: (yield* Clock.currentTimeMillis) - startedAt }

  const batchSize = options.batchSize ?? 64
  const progress = options.progress ?? (() => Effect.void)
  const chunksWritten = yield* store.transaction((writer) =>
    Effect.gen(function*() {
      if (rebuild) yield* writer.clear
      for (const docId of plan.deleted) yield* writer.deleteDoc(docId)
      let written = 0
      for (let from = 0; from < pending.length; from += batchSize) {
        const batch = pending.slice(from, from + batchSize)
        const drafts = batch.map((d) => chunkDoc(cleanDoc(d.sourced.doc, settings.cleaner), settings.chunker))
        const embeddings = yield* embedder.embedMany(drafts.flat().map((d) => d.text))
        let next = 0
        for (let i = 0; i < batch.length; i++) {
          const { hash, source, sourced: { doc } } = batch[i]!
          const chunks: Array<IndexedChunk> = drafts[i]!.map((draft) => {
            // The title is searchable text of every chunk of its document.
            const terms = analyze(`${doc.title}\n${draft.text}`, settings.analyzer)
            return { chunk: embedChunk(draft, embeddings[next++]!), length: terms.length, terms: termCounts(terms) }
          })
          if (chunks.length === 0) {
            skipped.push({ source: doc.docId, line: 0, reason: "the cleaned body is empty, so it has no chunks" })
          }
          const entry = new StoredDoc({ docId: doc.docId, source, title: doc.title, categories: doc.categories, hash, chunks: chunks.length })
          yield* writer.putDoc(entry, chunks)
          written += chunks.length
        }
        yield* progress(Math.min(from + batchSize, pending.length), pending.length)
      }
      const now = yield* Clock.currentTimeMillis
      yield* writer.putRoots(roots)
      yield* writer.putManifest(
        new IndexManifest({
          ...settings,
          createdAt: Option.isSome(existing) && !rebuild ? existing.value.createdAt : now,
          updatedAt: now,
          documents: docs.length,
          chunks: keptChunks + written
        })
      )
      return written
    })
  )
  return { ...report(chunksWritten), elapsedMillis: (yield* Clock.currentTimeMillis) - startedAt }
})
