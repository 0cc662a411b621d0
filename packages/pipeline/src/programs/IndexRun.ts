/** The persistent indexing workflow: read the paths, plan the changes against the stored index, write them atomically. */

import { AnalyzerConfig, ChunkerConfig, CleanerConfig } from "@funcpipe/domain/Config"
import type { RawDoc } from "@funcpipe/domain/Document"
import {
  type AnnConfig,
  FORMAT_VERSION,
  IndexManifest,
  type IndexSettings,
  type VectorStorage
} from "@funcpipe/domain/Manifest"
import { isKeepAll, keepAll, mapPaths, printRule, type Rule } from "@funcpipe/domain/Rule"
import { Clock, Effect, Option, Path, Result, Stream } from "effect"
import type { RecordedStamp } from "../base/Stamps.ts"
import { describeMigration, planMigration } from "../index/Migration.ts"
import type { PreparedBatch } from "../index/prepare/Prepare.ts"
import { Preparer } from "../index/prepare/Preparer.ts"
import { hashDoc, isUnchanged, pruneReason, type SyncPlan, samePaths } from "../index/Sync.ts"
import { Embedder } from "../models/Embedder.ts"
import { cachedEmbedder, EmbeddingCache } from "../models/EmbeddingCache.ts"
import { recordRun } from "../platform/Telemetry.ts"
import { claimer, emptyAfterCleaning, type Skip } from "../read/Claim.ts"
import { DocumentSource, type SourcedDoc, type SourceRecord } from "../read/DocumentSource.ts"
import type { KnownFile } from "../read/FileStamp.ts"
import { rootLabelsOf } from "../read/Folder.ts"
import { keepChange, keepTest } from "../read/Keep.ts"
import { IndexStore, type IndexWriter, type StoredEntry } from "../store/IndexStore.ts"
import { type DocToWrite, preparesVectors, writePrepared } from "./DocumentWrites.ts"
import { NothingKept, NothingToIndex, PruneNeeded, SettingsChanged } from "./IndexErrors.ts"
import { type KnownFiles, knownFiles, StampTally } from "./KnownFiles.ts"
import { type AskedSettings, codesWithoutGraphs, recordedSettings, runSettings } from "./RunSettings.ts"

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
  /** The approximate vector index: a graph's settings, "exact" for none; absent, the index keeps its own. */
  readonly ann?: AnnConfig | "exact"
  /** How vectors finer than float32 are stored; absent, the index keeps its own (`float32` for a new index). */
  readonly vectorStorage?: VectorStorage
  /**
   * The rows the graphs are walked over (`--vector-codes`): i8 codes or float32 rows; absent, the index keeps its
   * own. Only for an index with graphs (`CodesNeedGraphs` otherwise).
   */
  readonly vectorCodes?: "i8" | "float32"
  /**
   * The caller named no analyzer version: an existing index keeps its own, and `analyzer.version` applies to a new
   * index (or a rebuilt one) only.
   */
  readonly analyzerVersionFromIndex?: boolean
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
  /** How far the run is: documents embedded ahead, documents indexed, then vector graphs built (`--ann hnsw`). */
  readonly progress?: (done: number, total: number, stage: "embedding" | "indexing" | "graphs") => Effect.Effect<void>
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
 * Kept here, the bodies of the 4,096 documents in flight would outlive the young generation (without them, a 210 MB
 * run spends 320 ms less collecting on the main thread).
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
 * The labels the files of `roots` are read with: those the index recorded for its paths (for an index made before they
 * were recorded, the ones its paths were read with then), so that adding or removing a path renames no document, and
 * new ones for new paths. Read before the run's transaction: a concurrent run that changes them is refused anyway.
 */
const keptLabels = Effect.fnUntraced(function* (
  store: IndexStore["Service"],
  path: Path.Path,
  roots: ReadonlyArray<string>
) {
  // An index that cannot be read here (an older layout, damage) is the transaction's to report, with its remedy.
  const manifest = yield* Effect.orElseSucceed(store.manifest, () => Option.none<IndexManifest>())
  if (Option.isNone(manifest)) return rootLabelsOf(path, roots)
  const storedRoots = yield* Effect.orElseSucceed(store.roots, (): ReadonlyArray<string> => [])
  const kept = manifest.value.rootLabels ?? rootLabelsOf(path, storedRoots)
  return rootLabelsOf(path, roots, kept)
})

/** What one run works with, fixed before it reads anything. */
interface Run {
  readonly store: IndexStore["Service"]
  readonly source: DocumentSource["Service"]
  readonly preparer: Preparer
  /** The model's embedder, through the embedding cache when the model is costly and a cache is at hand. */
  readonly embedder: Embedder["Service"]
  readonly settings: IndexSettings
  /** The rows the graphs are walked over, as the run names them (`--vector-codes`); absent, the index's own. */
  readonly vectorCodes: "i8" | "float32" | undefined
  /** The index names no vector storage, and its manifest goes on naming none (see `RunSettings`). */
  readonly storageUnnamed: boolean
  readonly roots: ReadonlyArray<string>
  /** The label each root's files are read with (see `keptLabels`), recorded in the manifest. */
  readonly labels: Readonly<Record<string, string>>
  readonly keep: Rule
  readonly keeps: ReturnType<typeof keepTest>
  readonly rebuild: boolean
  readonly analyzerVersionFromIndex: boolean
  readonly dryRun: boolean
  readonly prune: boolean
  readonly batchSize: number
  readonly progress: NonNullable<IndexOptions["progress"]>
}

/**
 * What a run has decided so far, document by document: the sync plan, the records skipped, the documents the keep
 * rule left out, and the counts the report and the manifest need.
 */
class Tally {
  readonly added: Array<string> = []
  readonly updated: Array<string> = []
  readonly unchanged: Array<string> = []
  readonly deleted: Array<string> = []
  readonly skipped: Array<Skip> = []
  readonly dropped = new Set<string>()
  /** Chunks of the unchanged documents, which stay as they are. */
  keptChunks = 0
  written = 0
  read = 0
  /** The stamps of the files read or left unread, to record for the next run. */
  readonly stamps = new StampTally()

  /**
   * A planned document that had nothing left after cleaning: it is a skip, not an addition or an update. Returns
   * whether the index holds an older version of it, which must then be deleted.
   */
  becameEmpty(skip: Skip, docId: string): boolean {
    this.skipped.push(skip)
    this.stamps.skipped(skip.source)
    this.read--
    const wasAdded = this.added.lastIndexOf(docId)
    if (wasAdded !== -1) {
      this.added.splice(wasAdded, 1)
      return false
    }
    if (!this.updated.includes(docId)) return false
    this.updated.splice(this.updated.lastIndexOf(docId), 1)
    this.deleted.push(docId)
    return true
  }
}

/** Everything a run needs, from the options and the context. */
const startRun = Effect.fnUntraced(function* (paths: ReadonlyArray<string>, options: IndexOptions) {
  const model = yield* Embedder
  const path = yield* Path.Path
  const keep = mapPaths(options.keep ?? keepAll, (p) => path.resolve(p))
  // A costly model's vectors go through the embedding cache when there is one; a cheap one's are simply made again.
  const cache = model.costly === true ? yield* Effect.serviceOption(EmbeddingCache) : Option.none()
  const store = yield* IndexStore
  const roots = paths.map((p) => path.resolve(p))
  const run: Run = {
    store,
    source: yield* DocumentSource,
    preparer: yield* Preparer,
    embedder: Option.match(cache, { onNone: () => model, onSome: (c) => cachedEmbedder(model, c) }),
    settings: {
      formatVersion: FORMAT_VERSION,
      model: model.model,
      dimensions: model.dimensions,
      modelFingerprint: model.fingerprint,
      cleaner: options.cleaner ?? CleanerConfig.default,
      chunker: options.chunker ?? ChunkerConfig.default,
      analyzer: options.analyzer ?? AnalyzerConfig.default,
      ann: options.ann,
      vectorStorage: options.vectorStorage
    },
    vectorCodes: options.vectorCodes,
    storageUnnamed: false,
    roots,
    labels: options.rebuild === true ? rootLabelsOf(path, roots) : yield* keptLabels(store, path, roots),
    keep,
    keeps: keepTest(keep, (file) => path.resolve(file)),
    rebuild: options.rebuild === true,
    analyzerVersionFromIndex: options.analyzerVersionFromIndex === true,
    dryRun: options.dryRun === true,
    prune: options.prune === true,
    batchSize: options.batchSize ?? 64,
    progress: options.progress ?? (() => Effect.void)
  }
  return { run, cached: Option.isSome(cache) }
})

/**
 * A costly model's pass before the write lock: what this run will write goes through the embedding cache, so the run
 * under the lock finds every vector there. Its plan is remade under the lock; this one only decides what to embed.
 */
const embedAhead = Effect.fnUntraced(function* (run: Run) {
  const { files, stored } = run.rebuild
    ? { stored: new Map<string, StoredEntry>(), files: knownFiles(new Map(), []) }
    : yield* run.store.transaction(
        (w) =>
          Effect.gen(function* () {
            const stored = yield* w.storedDocs
            const manifest = yield* w.manifest
            return { stored, files: knownFiles(yield* stampsToTrust(w, manifest, run), stored.values()) }
          }),
        { readOnly: true }
      )
  const claim = claimer(run.keeps)
  let embedded = 0
  yield* run.source.read(run.roots, run.labels, files.known).pipe(
    Stream.filterMap((record) => {
      const claimed = claim.take(record)
      if (claimed._tag !== "Kept") return Result.failVoid
      const { doc, source: file } = claimed.sourced
      const before = stored.get(doc.docId)
      return isUnchanged(before, before === undefined ? undefined : hashDoc(doc), file)
        ? Result.failVoid
        : Result.succeed({ ...doc, source: file })
    }),
    Stream.grouped(run.batchSize),
    Stream.mapEffect((docs) => run.preparer.prepare(docs, run.settings), { concurrency: run.preparer.concurrency }),
    Stream.runForEach((prepared) =>
      Effect.gen(function* () {
        yield* run.embedder.embedMany(prepared.docs.flatMap((d) => d.texts))
        embedded += prepared.docs.length
        yield* run.progress(embedded, 0, "embedding")
      })
    )
  )
})

/**
 * The stamps a run may trust: those recorded, unless the keep rule changed (a file's documents may then be kept or left
 * out differently) or the index is new.
 */
const stampsToTrust = (writer: IndexWriter, existing: Option.Option<IndexManifest>, run: Run) =>
  Option.isSome(existing) && keepChange(existing.value.keep, run.keep) === undefined
    ? writer.fileStamps
    : Effect.succeed<ReadonlyMap<string, RecordedStamp>>(new Map())

/**
 * A file left unread (its stamp is as recorded): its stored documents are unchanged, each claimed as its record would
 * have been.
 */
const planUnread = (tally: Tally, claim: ReturnType<typeof claimer>, files: KnownFiles, file: string) => {
  let docs = 0
  for (const entry of files.docsOf(file)) {
    const skip = claim.known(entry.docId, file)
    if (skip !== undefined) {
      tally.skipped.push(skip)
      tally.stamps.skipped(file)
      continue
    }
    tally.read++
    tally.unchanged.push(entry.docId)
    tally.keptChunks += entry.chunks
    docs++
  }
  return docs
}

/** Plans one record: skipped, left out by the keep rule, unchanged, or to be written (returned). */
const recordPlanner = (
  run: Run,
  tally: Tally,
  claim: ReturnType<typeof claimer>,
  stored: StoredDocs,
  files: KnownFiles
) => {
  return (record: SourceRecord): Pending | undefined => {
    const claimed = claim.take(record)
    if (claimed._tag === "Unread") {
      const docs = planUnread(tally, claim, files, claimed.file)
      const recorded = files.recorded(claimed.file)
      if (recorded !== undefined) tally.stamps.unread(claimed.file, recorded, docs)
      return undefined
    }
    if (claimed._tag === "Skipped") {
      tally.stamps.skipped(claimed.skip.source)
      return void tally.skipped.push(claimed.skip)
    }
    const { doc, source: file } = claimed.sourced
    if (claimed._tag === "Dropped") {
      tally.stamps.skipped(file)
      return void tally.dropped.add(doc.docId)
    }
    tally.read++
    tally.stamps.read(file, claimed.sourced.stamp)
    const before = stored.get(doc.docId)
    const hash = before === undefined ? undefined : hashDoc(doc)
    if (isUnchanged(before, hash, file)) {
      tally.unchanged.push(doc.docId)
      tally.keptChunks += before!.chunks
      return undefined
    }
    ;(before === undefined ? tally.added : tally.updated).push(doc.docId)
    return run.dryRun ? undefined : { sourced: claimed.sourced, hash }
  }
}

/** Embeds a prepared batch and writes its documents; one that turned out empty is a skip (see `Tally.becameEmpty`). */
const batchWriter =
  (run: Run, tally: Tally, writer: IndexWriter) =>
  ({ batch, prepared }: { readonly batch: ReadonlyArray<Pended>; readonly prepared: PreparedBatch }) =>
    Effect.gen(function* () {
      const docs: Array<DocToWrite> = []
      for (let i = 0; i < batch.length; i++) {
        const { hash, sourced } = batch[i]!
        const made = hash ?? prepared.flat.hashes?.[i]
        if (made === undefined) return yield* Effect.die(new Error("the preparer left a new document unhashed"))
        docs.push({ ...sourced, hash: made })
      }
      // Through the cache, when the model is costly: the pass before the lock has put every vector there.
      const counts = yield* writePrepared(
        writer,
        run.settings.dimensions,
        run.settings.vectorStorage ?? "exact",
        docs,
        prepared
      ).pipe(Effect.provideService(Embedder, run.embedder))
      for (let i = 0; i < batch.length; i++) {
        if (counts[i]! > 0) {
          tally.written += counts[i]!
          continue
        }
        const { sourced } = batch[i]!
        if (tally.becameEmpty(emptyAfterCleaning(sourced), sourced.doc.docId))
          yield* writer.deleteDoc(sourced.doc.docId)
      }
      yield* run.progress(tally.read, 0, "indexing")
    })

/**
 * Reads the paths and writes what changed. Batches are prepared (clean, chunk, analyze) ahead on the preparer's
 * threads while earlier ones are written.
 */
const readAndWrite = (
  run: Run,
  tally: Tally,
  writer: IndexWriter,
  plan: (record: SourceRecord) => Pending | undefined,
  known: KnownFile
) =>
  run.source.read(run.roots, run.labels, known).pipe(
    Stream.map(plan),
    Stream.filter((pending): pending is Pending => pending !== undefined),
    Stream.grouped(run.batchSize),
    Stream.mapEffect(
      (batch) => {
        const pended = batch.map(withoutBody)
        const settings = {
          ...run.settings,
          localVectors: preparesVectors(run.embedder),
          hashDocs: batch.some((p) => p.hash === undefined)
        }
        return Effect.map(
          run.preparer.prepare(
            batch.map((p) => ({ ...p.sourced.doc, source: p.sourced.source })),
            settings
          ),
          (prepared) => ({ batch: pended, prepared })
        )
      },
      { concurrency: run.preparer.concurrency }
    ),
    Stream.runForEach(batchWriter(run, tally, writer))
  )

/** The stored documents by doc id, as a run compares what it reads with them. */
type StoredDocs = ReadonlyMap<string, StoredEntry>

/** What the index held when the run took the write lock (none of it, for a rebuild, but the paths). */
interface Before {
  readonly existing: Option.Option<IndexManifest>
  readonly stored: StoredDocs
  readonly storedRoots: ReadonlyArray<string>
  /** The files' stamps recorded before (none for a rebuild). */
  readonly recorded: ReadonlyMap<string, RecordedStamp>
  /** When the run started (ms since the epoch): a file changed since shortly before is not stamped. */
  readonly startedAt: number
}

/**
 * Ends a run that has read everything: fails when it read nothing it could index, or when it would delete more than
 * it may without `prune`; otherwise deletes the documents gone from the paths and writes the manifest. Returns why
 * pruning would be needed (for a dry run's report) and how the keep rule changed.
 */
const finishRun = Effect.fnUntraced(function* (
  run: Run,
  tally: Tally,
  writer: IndexWriter,
  { existing, recorded, startedAt, stored, storedRoots }: Before,
  claimed: (docId: string) => boolean
) {
  const location = run.store.location
  if (tally.read === 0 && tally.skipped.length > 0) {
    const { line, reason, source } = tally.skipped[0]!
    const first = `${line > 0 ? `${source}:${line}` : source}: ${reason}`
    return yield* new NothingToIndex({ location, skipped: tally.skipped.length, first })
  }
  if (tally.read === 0 && tally.dropped.size > 0) {
    return yield* new NothingKept({ location, rule: printRule(run.keep), dropped: tally.dropped.size })
  }
  const keepChanged = Option.isSome(existing) ? keepChange(existing.value.keep, run.keep) : undefined
  const gone = [...stored.keys()].filter((docId) => !claimed(docId) || tally.dropped.has(docId))
  const reasonNow = run.prune ? undefined : pruneReason(gone.length, stored.size, samePaths(storedRoots, run.roots))
  // A rule that now leaves out documents the index holds deletes them; the user is told that is why.
  const pruneNeeded =
    reasonNow === undefined || keepChanged === undefined
      ? reasonNow
      : `${reasonNow}; the keep rule changed from ${keepChanged.from} to ${keepChanged.to}`
  if (pruneNeeded !== undefined && !run.dryRun) {
    return yield* new PruneNeeded({ location, deleted: gone.length, stored: stored.size, reason: pruneNeeded })
  }
  tally.deleted.push(...gone)
  if (!run.dryRun) {
    for (const docId of gone) yield* writer.deleteDoc(docId)
    const now = yield* Clock.currentTimeMillis
    yield* writer.putRoots(run.roots)
    yield* writer.putManifest(
      new IndexManifest({
        ...recordedSettings(run),
        ann: run.settings.ann === "exact" ? undefined : run.settings.ann,
        ...(isKeepAll(run.keep) ? {} : { keep: run.keep }),
        rootLabels: run.labels,
        createdAt: Option.isSome(existing) && !run.rebuild ? existing.value.createdAt : now,
        updatedAt: now,
        documents: tally.read,
        chunks: tally.keptChunks + tally.written
      })
    )
    const stamps = tally.stamps.result(startedAt, recorded)
    if (stamps !== undefined) yield* writer.putFileStamps(stamps)
  }
  return { pruneNeeded, keepChanged }
})

/** What a run asks of the settings, for `runSettings`. */
const askedOf = (run: Run): AskedSettings => ({ location: run.store.location, ...run })

/** The run under the write lock: check the settings, plan and write every record, then finish. */
const runLocked = (asked: Run, startedAt: number, replaced: Option.Option<IndexManifest>) => (writer: IndexWriter) =>
  Effect.gen(function* () {
    // A rebuild reads nothing of the old index it needs: a damaged one is planned (--dry-run) and replaced alike.
    const existing = asked.rebuild
      ? yield* Effect.orElseSucceed(writer.manifest, () => Option.none<IndexManifest>())
      : yield* writer.manifest
    const resolved = runSettings(askedOf(asked), existing, replaced)
    if (Result.isFailure(resolved)) return yield* resolved.failure
    let run: Run = { ...asked, ...resolved.success }
    if (Option.isSome(existing) && !run.rebuild) {
      const migration = planMigration(existing.value, run.settings)
      if (migration._tag !== "Compatible") {
        return yield* new SettingsChanged({ location: run.store.location, detail: describeMigration(migration) })
      }
      // An index of an older layout this build still writes keeps it: its documents are all stored alike.
      run = { ...run, settings: { ...run.settings, formatVersion: existing.value.formatVersion } }
    }
    const stored: StoredDocs = run.rebuild ? new Map<string, StoredEntry>() : yield* writer.storedDocs
    const storedRoots = run.rebuild
      ? yield* Effect.orElseSucceed(writer.roots, (): ReadonlyArray<string> => [])
      : yield* writer.roots
    const recorded: ReadonlyMap<string, RecordedStamp> = run.rebuild
      ? new Map()
      : yield* stampsToTrust(writer, existing, run)
    if (run.rebuild && !run.dryRun) yield* writer.clear
    const tally = new Tally()
    const claim = claimer(run.keeps)
    const files = knownFiles(recorded, stored.values())
    yield* readAndWrite(run, tally, writer, recordPlanner(run, tally, claim, stored, files), files.known)
    yield* run.progress(tally.read, tally.read, "indexing")
    const before: Before = { existing, stored, storedRoots, recorded, startedAt }
    const { keepChanged, pruneNeeded } = yield* finishRun(run, tally, writer, before, (id) => claim.has(id))
    const plan: SyncPlan = {
      added: tally.added,
      updated: tally.updated,
      unchanged: tally.unchanged,
      deleted: tally.deleted
    }
    const now = Option.match(existing, { onNone: () => ({ documents: 0, chunks: 0 }), onSome: (m) => m })
    return {
      plan,
      chunksWritten: tally.written,
      documents: run.dryRun ? now.documents : tally.read,
      chunks: run.dryRun ? now.chunks : tally.keptChunks + tally.written,
      pruneNeeded,
      skipped: tally.skipped,
      keep: run.keep,
      dropped: tally.dropped.size,
      keepChanged,
      dryRun: run.dryRun,
      rebuilt: run.rebuild,
      elapsedMillis: (yield* Clock.currentTimeMillis) - startedAt
    } satisfies IndexReport
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
  const startedAt = yield* Clock.currentTimeMillis
  const { cached, run } = yield* startRun(paths, options)
  // A rebuild keeps the settings of the index it replaces that the run does not name (a damaged one has none).
  const replaced = run.rebuild
    ? yield* Effect.orElseSucceed(run.store.manifest, () => Option.none<IndexManifest>())
    : Option.none<IndexManifest>()
  // Codes for an index without graphs are refused before anything is embedded (and again under the lock).
  if (run.vectorCodes !== undefined) {
    const own = run.rebuild
      ? replaced
      : yield* Effect.orElseSucceed(run.store.manifest, () => Option.none<IndexManifest>())
    const refused = codesWithoutGraphs(askedOf(run), own)
    if (refused !== undefined) return yield* refused
  }
  if (cached && !run.dryRun) yield* embedAhead(run)
  const report = yield* run.store.transaction(runLocked(run, startedAt, replaced), {
    readOnly: run.dryRun,
    replace: run.rebuild,
    graphs: (done, total) => run.progress(done, total, "graphs"),
    // The preparing threads, idle by then, build graphs too.
    ...(run.preparer.graphs === undefined ? {} : { graphBuilder: run.preparer.graphs })
  })
  // The time until the run was committed: the store's last steps (merging segments, building vector graphs) too.
  const elapsedMillis = (yield* Clock.currentTimeMillis) - startedAt
  const { plan } = report
  yield* recordRun({
    kind: report.dryRun ? "dry_run" : report.rebuilt ? "rebuild" : "update",
    added: plan.added.length,
    updated: plan.updated.length,
    deleted: plan.deleted.length,
    unchanged: plan.unchanged.length,
    skipped: report.skipped.length,
    chunksWritten: report.chunksWritten,
    chunks: report.chunks,
    seconds: elapsedMillis / 1000
  })
  return { ...report, elapsedMillis }
})
