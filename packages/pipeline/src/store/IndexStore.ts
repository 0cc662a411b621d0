/**
 * The index store: the service every kind of index implements (a SQLite file, a PostgreSQL schema), the errors it
 * fails with, the values it reads and writes, and the small helpers the implementations share.
 */

import { DocId } from "@funcpipe/domain/Document"
import type { IndexManifest } from "@funcpipe/domain/Manifest"
import { type Rule, ruleJson } from "@funcpipe/domain/Rule"
import { Context, Effect, type Option, Schema, type Scope } from "effect"
import type { DocumentText } from "../analysis/Display.ts"
import type { RecordedStamp } from "../base/Stamps.ts"
import type { GraphJob } from "../search/GraphBuild.ts"

export type { DocumentText }

import type { BodyRef } from "../index/BodyPack.ts"
import type { IndexView, PositionFilter } from "../search/IndexView.ts"
import { isStoreError, type StoreError, StoreFailure } from "./StoreErrors.ts"

/** A document as stored: where it came from, its title and categories, and the hash of its raw content. */
export class StoredDoc extends Schema.Class<StoredDoc>("pipeline/StoredDoc")({
  docId: DocId,
  source: Schema.String,
  title: Schema.String,
  categories: Schema.NullOr(Schema.String),
  hash: Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/, { message: "a hash is 64 hex digits" })),
  /** How many chunks the document has in the index. */
  chunks: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
}) {}

/** A document to write, as the indexing run built it (checked where it was read, so plain values). */
export interface DocRecord {
  readonly docId: string
  readonly source: string
  readonly title: string
  readonly categories: string | null
  readonly hash: string
  /**
   * Where the body is, in a pack shared with the documents written next to it: as written from format 3 on (the
   * cleaned body, whose code-point spans are the chunk texts, is made from it with the clean rules), cleaned before.
   * Stored once instead of per chunk.
   */
  readonly body: BodyRef
}

/**
 * The terms of a batch of chunks: `ids` are numbers into `vocabulary`, chunk after chunk. Batches may share one
 * vocabulary that grows from batch to batch (it is only ever appended to).
 */
export interface TermTable {
  readonly vocabulary: ReadonlyArray<string>
  readonly ids: Uint32Array
}

/** A chunk to write: its span in code points, and its terms in order, `ids[from … to)` of the batch's `TermTable`. */
export interface ChunkRecord {
  readonly start: number
  readonly end: number
  readonly from: number
  readonly to: number
}

/** A document to write with its chunks (in body order) and their vectors (`dimensions` components each). */
export interface DocWrite {
  readonly doc: DocRecord
  readonly chunks: ReadonlyArray<ChunkRecord>
  readonly vectors: Float64Array
}

/** What the sync plan needs of a stored document. */
export interface StoredEntry {
  readonly docId: string
  readonly hash: string
  readonly source: string
  readonly chunks: number
}

/** A stored chunk, as read for a result: span, text and vector (checked against the domain schema by the caller). */
export interface StoredChunk {
  readonly docId: string
  /** The title of the chunk's document. */
  readonly title: string
  readonly start: number
  readonly end: number
  readonly text: string
  readonly vector: ReadonlyArray<number>
}

/**
 * One consistent, read-only view of the index (a read transaction): what the engine scores, plus the manifest and
 * the stored chunks of results. Writers that commit meanwhile are not seen. The view's functions read lazily and throw
 * `StoreError`s (nothing else, bugs aside); `readSnapshot` turns those into typed failures.
 */
export interface Snapshot extends IndexView {
  readonly manifest: IndexManifest
  /**
   * An object shared by the snapshots of one state of the index (the same chunks at the same positions), for caches
   * that outlive a snapshot; a snapshot without one is a state of its own.
   */
  readonly stateKey?: object
  /** The stored chunk at a position. */
  readonly chunkAt: (position: number) => StoredChunk
  /**
   * The positions of the chunks whose documents satisfy `rule` (which must not read `body`: bodies are stored
   * cleaned). The documents' fields and per-field value indexes are read once per state of the index, and the
   * positions of recently used rules are kept, so a repeated filter costs nothing.
   */
  readonly filter: (rule: Rule) => PositionFilter
  /** A stored document and its chunks in text order, or `undefined` when the index has no such doc id. */
  readonly document: (docId: string) => StoredDocument | undefined
  /** What a result shows of a document with chunks: its source and texts; `undefined` for no such document. */
  readonly documentText: (docId: string) => DocumentText | undefined
}

/** A stored document with the span and text of each of its chunks. */
export interface StoredDocument {
  readonly doc: StoredDoc
  readonly chunks: ReadonlyArray<{ readonly start: number; readonly end: number; readonly text: string }>
}

/**
 * Runs synchronous snapshot reads: the one place where what they throw becomes a typed failure. A `StoreError` fails
 * as it is; anything else (a bug: snapshots throw only store errors) is a `StoreFailure` that keeps it as its cause.
 */
export const readSnapshot = <A>(location: string, f: () => A): Effect.Effect<A, StoreError> =>
  Effect.try({
    try: f,
    catch: (error) =>
      isStoreError(error)
        ? error
        : new StoreFailure({
            location,
            reason: `reading: ${error instanceof Error ? error.message : String(error)}`,
            cause: error
          })
  })

/** Changes made inside one `transaction`; none is visible to readers until the transaction commits. */
export interface IndexWriter {
  /** The manifest as of this transaction (read under the write lock). */
  readonly manifest: Effect.Effect<Option.Option<IndexManifest>, StoreError>
  /** The paths the last run read, as of this transaction. */
  readonly roots: Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Every stored document's id, hash, source and chunk count, as of this transaction. */
  readonly storedDocs: Effect.Effect<ReadonlyMap<string, StoredEntry>, StoreError>
  /** Removes every document, chunk and setting (and an older format's tables). */
  readonly clear: Effect.Effect<void, StoreError>
  /** Removes a document and its chunks. */
  readonly deleteDoc: (docId: string) => Effect.Effect<void, StoreError>
  /**
   * Stores a document and its chunks (in body order; `vectors` holds their vectors, `dimensions` components each),
   * replacing any earlier version and its chunks.
   */
  readonly putDoc: (
    doc: DocRecord,
    chunks: ReadonlyArray<ChunkRecord>,
    terms: TermTable,
    vectors: Float64Array
  ) => Effect.Effect<void, StoreError>
  /**
   * Stores documents as `putDoc` does, one after another, in one step: a run writes documents by the thousand, and a
   * step per document was a cost of its own on the writing thread.
   */
  readonly putDocs: (docs: ReadonlyArray<DocWrite>, terms: TermTable) => Effect.Effect<void, StoreError>
  /** Stores the manifest. */
  readonly putManifest: (manifest: IndexManifest) => Effect.Effect<void, StoreError>
  /** Stores the paths the index mirrors. */
  readonly putRoots: (roots: ReadonlyArray<string>) => Effect.Effect<void, StoreError>
  /** The files' stamps the last run recorded, by file (see `FileStamp`); none when they do not decode. */
  readonly fileStamps: Effect.Effect<ReadonlyMap<string, RecordedStamp>, StoreError>
  /** Records the files' stamps, in place of those recorded before. */
  readonly putFileStamps: (stamps: ReadonlyMap<string, RecordedStamp>) => Effect.Effect<void, StoreError>
}

/** How a transaction runs. */
export interface TransactionOptions {
  /** Read only (for a dry run): the body sees the index as of now and whatever it writes is discarded. */
  readonly readOnly?: boolean
  /**
   * The body builds the index anew (`--rebuild`): a store that can builds it beside the old one and puts it in its
   * place when committed, so that a damaged index is replaced whatever its damage (SQLite); another clears it inside
   * the transaction.
   */
  readonly replace?: boolean
  /**
   * Told how far the store is in building vector graphs before it commits (`index --ann hnsw`: a graph for each new
   * segment), before the first and after each; stores that build none never call it.
   */
  readonly graphs?: (done: number, total: number) => Effect.Effect<void>
  /**
   * Other threads that build vector graphs while the store builds others itself (the `Preparer`'s): `threads` at once,
   * each graph's bytes, or `undefined` for one the store must build itself. Without it, the store builds every graph.
   */
  readonly graphBuilder?: GraphBuilder
}

/** Threads that build vector graphs (see `TransactionOptions.graphBuilder`). */
export interface GraphBuilder {
  readonly threads: number
  /**
   * Builds a job's graph on another thread; its bytes, or `undefined` when that thread could not. The job's rows are
   * handed over (their buffer is the thread's once sent): they must be an array made for this build alone.
   */
  readonly build: (job: GraphJob) => Effect.Effect<Uint8Array | undefined>
}

export class IndexStore extends Context.Service<
  IndexStore,
  {
    /** Where the index lives, for messages. */
    readonly location: string
    /** The manifest; `None` when nothing has been indexed there yet. */
    readonly manifest: Effect.Effect<Option.Option<IndexManifest>, StoreError>
    /** The paths the last index run read. */
    readonly roots: Effect.Effect<ReadonlyArray<string>, StoreError>
    /** Every stored document, decoded. */
    readonly documents: Effect.Effect<ReadonlyArray<StoredDoc>, StoreError>
    /** A consistent read-only view for queries, held until the scope closes; `None` when nothing is indexed yet. */
    readonly snapshot: Effect.Effect<Option.Option<Snapshot>, StoreError, Scope.Scope>
    /**
     * A token that changes whenever a transaction commits to the index (in this process or another) or the file is
     * replaced or removed; cheap enough to poll. A holder of a long-lived snapshot compares it to learn that a newer
     * state of the index exists.
     */
    readonly version: Effect.Effect<string, StoreError>
    /**
     * Copies what the write-ahead log holds into the index file, as far as open snapshots allow, without waiting for
     * anyone; a holder of long-lived snapshots calls it after closing an old one, so the log is reused instead of
     * growing with every index run. Does nothing where the file cannot be written; never fails.
     */
    readonly checkpoint: Effect.Effect<void>
    /**
     * Looks through the whole index for damage (SQLite's integrity check), failing with `IndexCorrupt` that names the
     * damaged parts; does nothing where the store keeps its own integrity (PostgreSQL).
     */
    readonly check: Effect.Effect<void, StoreError>
    /**
     * Runs `body` as one atomic change: if it succeeds everything it wrote becomes visible at once; if it fails, is
     * interrupted, or the process dies, nothing of it does. Readers see the old state or the new, never a mix. Only one
     * transaction writes at a time: a second writer fails with `IndexBusy` after a short wait.
     */
    readonly transaction: <A, E, R>(
      body: (writer: IndexWriter) => Effect.Effect<A, E, R>,
      options?: TransactionOptions
    ) => Effect.Effect<A, E | StoreError, R>
  }
>()("pipeline/IndexStore") {}

/** How many filters' positions a store keeps for repeated queries. */
const FILTER_CACHE_ENTRIES = 16

/**
 * The positions `rule` keeps, from `results` (by the rule's JSON, least recently used first) or made by `positions`
 * and remembered, keeping the last `FILTER_CACHE_ENTRIES`: the filter cache of every store's snapshots.
 */
export const cachedPositions = (
  results: Map<string, PositionFilter>,
  rule: Rule,
  positions: (rule: Rule) => PositionFilter
): PositionFilter => {
  const key = ruleJson(rule)
  let found = results.get(key)
  if (found !== undefined) results.delete(key)
  else found = positions(rule)
  results.set(key, found)
  for (const old of results.keys()) {
    if (results.size <= FILTER_CACHE_ENTRIES) break
    results.delete(old)
  }
  return found
}

/**
 * The text of the chunk `[start, end)` of a cleaned body, offsets in code points: the body's code points in the span,
 * and U+0000 for the part of a padded tail that lies past the body (as the chunker's `pad` policy makes it).
 */
export const spanText = (body: string, start: number, end: number): string => {
  if (!SURROGATE.test(body)) {
    const text = body.slice(start, end)
    return end > body.length ? text + "\u0000".repeat(end - Math.max(start, body.length)) : text
  }
  const next = (i: number) => {
    const unit = body.charCodeAt(i)
    return unit >= 0xd800 && unit <= 0xdbff && (body.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? i + 2 : i + 1
  }
  let from = 0
  let points = 0
  for (; points < start && from < body.length; points++) from = next(from)
  let to = from
  for (; points < end && to < body.length; points++) to = next(to)
  return body.slice(from, to) + (points < end ? "\u0000".repeat(end - Math.max(points, start)) : "")
}

const SURROGATE = /[\uD800-\uDFFF]/

/** A view of a blob as a typed array, copying only when the bytes are not aligned for it. */
export const view = <A>(
  blob: Uint8Array,
  size: number,
  make: (buffer: ArrayBuffer, offset: number, length: number) => A
): A => {
  const aligned = blob.byteOffset % size === 0 ? blob : blob.slice()
  return make(aligned.buffer as ArrayBuffer, aligned.byteOffset, aligned.byteLength / size)
}

/** A typed array over a `bytea` (see `view`); `undefined` for anything else or a length that does not divide. */
export const typed = <A>(
  value: unknown,
  size: number,
  make: (buffer: ArrayBuffer, offset: number, length: number) => A
) => (value instanceof Uint8Array && value.byteLength % size === 0 ? view(value, size, make) : undefined)

/** The writer of a dry run over an index that does not exist yet: nothing stored, nothing to write. */
export const emptyWriter = (location: string): IndexWriter => {
  const refuse = Effect.fail(new StoreFailure({ location, reason: "a dry run writes nothing" }))
  return {
    manifest: Effect.succeedNone,
    roots: Effect.succeed([]),
    storedDocs: Effect.succeed(new Map()),
    clear: refuse,
    deleteDoc: () => refuse,
    putDoc: () => refuse,
    putDocs: () => refuse,
    putManifest: () => refuse,
    putRoots: () => refuse,
    fileStamps: Effect.succeed(new Map()),
    putFileStamps: () => refuse
  }
}
