/** The writing side of an index file: one transaction's document rows, segments, tombstones and merges. */

import type { DatabaseSync, StatementSync } from "node:sqlite"
import type { IndexManifest } from "@funcpipe/domain/Manifest"
import { Effect, Option } from "effect"
import type { RecordedStamp } from "../../base/Stamps.ts"
import { decodePostings, PostingsEncoder } from "../../index/Postings.ts"
import { SegmentBuilder } from "../../index/Segment.ts"
import { decodeVectors, encodeVectors, encodingFor } from "../../index/VectorCodec.ts"
import {
  type ChunkRecord,
  type DocRecord,
  type GraphBuilder,
  type IndexWriter,
  type StoredEntry,
  type TermTable,
  view
} from "../IndexStore.ts"
import { IndexCorrupt, IndexTooOld, type StoreError } from "../StoreErrors.ts"
import { LAYOUT, sqlite } from "./Connection.ts"
import { buildPlannedGraphs, planGraphs } from "./Graphs.ts"
import {
  BLOCKS_PER_SEGMENT,
  blockRowsFor,
  createTables,
  dropTables,
  encodeManifest,
  fileStampsIn,
  isDeleted,
  isSmallSegment,
  MAX_SMALL_SEGMENTS,
  manifestIn,
  maxChunksOf,
  putFileStampsIn,
  rootsIn,
  rowsInBlock,
  SEGMENT_BUDGET_BYTES,
  SEGMENT_LIMIT_BYTES
} from "./Tables.ts"

/** What the parts of one write transaction share: the connection, the segment being built, the pending deletions. */
interface WriteState {
  readonly location: string
  readonly db: DatabaseSync
  /** Called after each segment is written (see `backgroundSync`). */
  readonly segmentWritten: (() => void) | undefined
  /** False for a file of an older layout, which only `clear` may touch. */
  layoutCurrent: boolean
  /** Encodes the merged segments' postings, term after term, in memory kept for the transaction (made on first use). */
  postingsEncoder: PostingsEncoder | undefined
  manifestValue: Option.Option<IndexManifest> | undefined
  /** The segment being built; flushed whenever it reaches the memory budget. */
  pending: SegmentBuilder | undefined
  /** True while the index holds no document from before this transaction, so nothing can need replacing. */
  fresh: boolean | undefined
  /** The statements of the transaction, prepared once. */
  readonly statements: Map<string, StatementSync>
  /** The pack last written, and its row: the documents of a pack come one after another. */
  lastPack: { readonly bytes: Uint8Array; readonly id: number } | undefined
  /** True once a document was removed: a pack may have lost its last document. */
  packsFreed: boolean
  /** Deleted chunk ranges per segment id: [first ordinal, count] pairs. */
  readonly tombstones: Map<number, Array<number>>
  /**
   * Vocabularies' term numbers mapped to the pending segment's. The batches of one preparing thread share one growing
   * vocabulary, so a mapping is kept per vocabulary while the segment stays, and a term's text is looked up once per
   * segment rather than once per batch.
   */
  mappings: WeakMap<ReadonlyArray<string>, Int32Array>
  mappedSegment: SegmentBuilder | undefined
}

const corrupt = (w: WriteState, detail: string) => new IndexCorrupt({ location: w.location, detail })

/** Calls into SQLite (see `sqlite`) while writing. */
const sql = <A>(w: WriteState, what: string, f: () => A) => sqlite(w.location, what, f)

/** The failure of a write to a file of an older layout (which only `clear` may touch). */
const tooOld = (w: WriteState, what: string) =>
  Effect.flatMap(
    sql(w, what, () => (w.db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version),
    (found) => Effect.fail(new IndexTooOld({ location: w.location, found, supported: LAYOUT }))
  )

/**
 * Runs `f`, a write that returns the damage it finds, failing with that damage (or with `IndexTooOld` on a file of
 * an older layout). Plain effects rather than a generator or a span of their own: documents are written by the
 * thousand, inside the transaction's span, and a span per document cost about 5 % of indexing time.
 */
const write = (w: WriteState, what: string, f: () => IndexCorrupt | undefined): Effect.Effect<void, StoreError> =>
  Effect.suspend(() =>
    w.layoutCurrent
      ? Effect.flatMap(sql(w, what, f), (damage) => (damage === undefined ? Effect.void : Effect.fail(damage)))
      : tooOld(w, what)
  )

const prepared = (w: WriteState, text: string): StatementSync => {
  let statement = w.statements.get(text)
  if (statement === undefined) w.statements.set(text, (statement = w.db.prepare(text)))
  return statement
}

const packIdOf = (w: WriteState, pack: Uint8Array): number => {
  if (w.lastPack?.bytes !== pack) {
    const id = Number(prepared(w, "INSERT INTO packs (data) VALUES (?)").run(pack).lastInsertRowid)
    w.lastPack = { bytes: pack, id }
  }
  return w.lastPack.id
}

/** Deletes the packs no document points into. */
const dropFreedPacks = (w: WriteState) => {
  if (!w.packsFreed) return
  w.db.exec("DELETE FROM packs WHERE id NOT IN (SELECT pack FROM documents WHERE pack IS NOT NULL)")
  w.packsFreed = false
}

const nextBase = (w: WriteState): number => {
  const row = w.db.prepare("SELECT max(base + count) AS next FROM segments").get() as { next: number | null }
  return row.next ?? 0
}

/**
 * Writes a new segment's row and vector blocks (`count` chunks' lengths and `dimensions` components each, none
 * deleted; magnitudes are computed again when blocks are read) and returns its id; the caller writes its postings.
 */
const insertSegment = (
  w: WriteState,
  base: number,
  count: number,
  totalLength: number,
  dimensions: number,
  columns: { readonly lengths: Uint32Array; readonly vectors: Float64Array }
): number => {
  const blockRows = blockRowsFor(dimensions)
  const id = Number(
    prepared(
      w,
      "INSERT INTO segments (base, count, live, live_length, version, block_rows, lengths, deleted) VALUES (?, ?, ?, ?, 0, ?, ?, NULL)"
    ).run(
      base,
      count,
      count,
      totalLength,
      blockRows,
      new Uint8Array(columns.lengths.buffer, columns.lengths.byteOffset, columns.lengths.byteLength)
    ).lastInsertRowid
  )
  for (let b = 0; b * blockRows < count; b++) {
    const from = b * blockRows
    const to = Math.min(from + blockRows, count)
    prepared(w, "INSERT INTO vectors (id, data) VALUES (?, ?)").run(
      id * BLOCKS_PER_SEGMENT + b,
      encodeVectors(columns.vectors.subarray(from * dimensions, to * dimensions))
    )
  }
  return id
}

/** Removes a segment: its row, vector blocks and postings. */
const dropSegment = (w: WriteState, id: number) => {
  prepared(w, "DELETE FROM postings WHERE segment = ?").run(id)
  prepared(w, "DELETE FROM vectors WHERE id >= ? AND id < ?").run(
    id * BLOCKS_PER_SEGMENT,
    (id + 1) * BLOCKS_PER_SEGMENT
  )
  prepared(w, "DELETE FROM segments WHERE id = ?").run(id)
}

/** Writes a term's postings in a segment: `count` of them, encoded (see `encodePostings`). */
const insertPostings = (w: WriteState, segment: number, term: string, count: number, bytes: Uint8Array) =>
  prepared(w, "INSERT INTO postings (segment, term, df, data) VALUES (?, ?, ?, ?)").run(segment, term, count, bytes)

const flush = (w: WriteState) => {
  if (w.pending === undefined || w.pending.count === 0) return
  const segment = w.pending
  const id = insertSegment(w, segment.base, segment.count, segment.totalLength, segment.dimensions, segment.columns())
  for (const [term, count, bytes] of segment.encodedPostings()) insertPostings(w, id, term, count, bytes)
  w.pending = new SegmentBuilder(segment.base + segment.count, segment.dimensions, segment)
  w.segmentWritten?.()
}

const termNumbers = (w: WriteState, terms: TermTable, segment: SegmentBuilder) => {
  if (w.mappedSegment !== segment) {
    w.mappings = new WeakMap()
    w.mappedSegment = segment
  }
  const { vocabulary } = terms
  let known = w.mappings.get(vocabulary)
  if (known === undefined || known.length < vocabulary.length) {
    const grown = new Int32Array(Math.max(vocabulary.length, 2 * (known?.length ?? 0))).fill(-1)
    if (known !== undefined) grown.set(known)
    w.mappings.set(vocabulary, (known = grown))
  }
  const numbers = known
  return (id: number): number => {
    let n = numbers[id]!
    if (n < 0) numbers[id] = n = segment.termId(vocabulary[id]!)
    return n
  }
}

/** Removes a document's rows and marks its chunks deleted; returns the damage found, if any. */
const removeChunks = (w: WriteState, docId: string, always = false): IndexCorrupt | undefined => {
  w.fresh ??= w.db.prepare("SELECT count(*) AS n FROM documents").get()!["n"] === 0
  if (w.fresh && !always) return undefined
  const row = prepared(w, "SELECT id, first, chunks FROM documents WHERE doc_id = ?").get(docId) as
    | { id: number; first: number; chunks: number }
    | undefined
  if (row === undefined) return undefined
  // Chunks written earlier in this transaction are still in memory: flush them so they can be deleted like others.
  if (w.pending !== undefined && row.chunks > 0 && row.first >= w.pending.base) flush(w)
  if (row.chunks > 0) {
    const segment = w.db
      .prepare("SELECT id, base, count FROM segments WHERE base <= ? ORDER BY base DESC LIMIT 1")
      .get(row.first) as { id: number; base: number; count: number } | undefined
    if (segment === undefined || row.first + row.chunks > segment.base + segment.count) {
      return corrupt(w, `the chunks of ${JSON.stringify(docId)} are not in the index`)
    }
    const ranges = w.tombstones.get(segment.id) ?? []
    ranges.push(row.first - segment.base, row.chunks)
    w.tombstones.set(segment.id, ranges)
  }
  prepared(w, "DELETE FROM documents WHERE id = ?").run(row.id)
  w.packsFreed = true
  return undefined
}

/** Marks the chunks of removed documents deleted, dropping segments left empty; returns the damage found, if any. */
const applyTombstones = (w: WriteState): IndexCorrupt | undefined => {
  for (const [id, ranges] of w.tombstones) {
    const row = w.db.prepare("SELECT count, live, live_length, deleted, lengths FROM segments WHERE id = ?").get(id) as
      | { count: number; live: number; live_length: number; deleted: Uint8Array | null; lengths: Uint8Array }
      | undefined
    if (row === undefined) return corrupt(w, `segment ${id} is missing`)
    const bits = row.deleted === null ? new Uint8Array(Math.ceil(row.count / 8)) : Uint8Array.from(row.deleted)
    const lengths = view(row.lengths, 4, (b, o, n) => new Uint32Array(b, o, n))
    let live = row.live
    let liveLength = row.live_length
    for (let r = 0; r < ranges.length; r += 2) {
      for (let i = ranges[r]!; i < ranges[r]! + ranges[r + 1]!; i++) {
        if (isDeleted(bits, i)) continue
        bits[i >> 3] = bits[i >> 3]! | (1 << (i & 7))
        live--
        liveLength -= lengths[i]!
      }
    }
    if (live === 0) {
      dropSegment(w, id)
    } else {
      w.db
        .prepare("UPDATE segments SET live = ?, live_length = ?, deleted = ?, version = version + 1 WHERE id = ?")
        .run(live, liveLength, bits, id)
    }
  }
  w.tombstones.clear()
  return undefined
}

/**
 * Merges segments, as Lucene's tiered policy does in spirit: a segment more than half deleted, or more small
 * segments than `MAX_SMALL_SEGMENTS`, makes the sparse and small ones (up to one segment's size of live chunks)
 * merge into one new segment holding only their live chunks, so deleted chunks stop costing space and time and
 * queries do not slow down as updates pile up. The documents' chunks get new ids, in the same order. Returns the
 * damage found, if any.
 */
const mergeSegments = (w: WriteState): IndexCorrupt | undefined => {
  const manifest = w.manifestValue ?? Option.none()
  if (Option.isNone(manifest)) return undefined
  const { dimensions } = manifest.value
  const maxChunks = maxChunksOf(dimensions)
  const all = w.db.prepare("SELECT id, base, count, live, block_rows FROM segments ORDER BY base").all() as Array<{
    id: number
    base: number
    count: number
    live: number
    block_rows: number
  }>
  const sparse = (g: (typeof all)[number]) => g.live * 2 < g.count
  const small = (g: (typeof all)[number]) => isSmallSegment(g.count, dimensions)
  if (!all.some(sparse) && all.filter(small).length <= MAX_SMALL_SEGMENTS) return undefined
  const picked: typeof all = []
  let live = 0
  for (const g of all) {
    if (!(sparse(g) || small(g)) || live + g.live > maxChunks) continue
    picked.push(g)
    live += g.live
  }
  if (picked.length < 2 && !picked.some(sparse)) return undefined

  // One scan of the documents finds the live documents of every picked segment, in chunk order.
  const docsOf = new Map<number, Array<{ id: number; first: number; chunks: number }>>(picked.map((g) => [g.id, []]))
  for (const row of w.db.prepare("SELECT id, first, chunks FROM documents WHERE chunks > 0").iterate()) {
    const doc = row as { id: number; first: number; chunks: number }
    const g = picked.find((g) => doc.first >= g.base && doc.first < g.base + g.count)
    if (g !== undefined) docsOf.get(g.id)!.push(doc)
  }
  const base = nextBase(w)
  const lengths = new Uint32Array(live)
  const vectors = new Float64Array(live * dimensions)
  const newOrdinals = new Map<number, Int32Array>()
  let next = 0
  let totalLength = 0
  for (const g of picked) {
    const row = w.db.prepare("SELECT lengths, deleted FROM segments WHERE id = ?").get(g.id) as {
      lengths: Uint8Array
      deleted: Uint8Array | null
    }
    const oldLengths = view(row.lengths, 4, (b, o, n) => new Uint32Array(b, o, n))
    const map = new Int32Array(g.count).fill(-1)
    const docs = docsOf.get(g.id)!.sort((a, b) => a.first - b.first)
    for (const doc of docs) {
      const first = base + next
      for (let c = 0; c < doc.chunks; c++) {
        const ordinal = doc.first - g.base + c
        if (row.deleted !== null && isDeleted(row.deleted, ordinal)) {
          return corrupt(w, `a live document has a deleted chunk in segment ${g.id}`)
        }
        map[ordinal] = next
        lengths[next] = oldLengths[ordinal]!
        totalLength += oldLengths[ordinal]!
        next++
      }
      prepared(w, "UPDATE documents SET first = ? WHERE id = ?").run(first, doc.id)
    }
    for (let b = 0; b * g.block_rows < g.count; b++) {
      const block = w.db.prepare("SELECT data FROM vectors WHERE id = ?").get(g.id * BLOCKS_PER_SEGMENT + b) as
        | { data: Uint8Array }
        | undefined
      if (block === undefined) return corrupt(w, `segment ${g.id} is missing a vector block`)
      const rows = rowsInBlock(g.block_rows, g.count, b)
      const encoding = encodingFor(block.data.byteLength, rows * dimensions)
      const v = new Float64Array(rows * dimensions)
      if (encoding === undefined || !decodeVectors(block.data, encoding, 0, v.length, v)) {
        return corrupt(w, `segment ${g.id} has a damaged vector block`)
      }
      for (let r = 0; r < rows; r++) {
        const to = map[b * g.block_rows + r]!
        if (to < 0) continue
        vectors.set(v.subarray(r * dimensions, (r + 1) * dimensions), to * dimensions)
      }
    }
    newOrdinals.set(g.id, map)
  }
  if (next !== live) return corrupt(w, "the live chunk counts of the merged segments disagree with their documents")

  const id = insertSegment(w, base, live, totalLength, dimensions, { lengths, vectors })
  // Each term's postings: the source segments' in base order, remapped, so new ordinals stay increasing.
  const parts = new Map<string, Array<readonly [segment: number, df: number, data: Uint8Array]>>()
  for (const g of picked) {
    for (const row of w.db.prepare("SELECT term, df, data FROM postings WHERE segment = ?").iterate(g.id)) {
      const { data, df, term } = row as { term: string; df: number; data: Uint8Array }
      let list = parts.get(term)
      if (list === undefined) parts.set(term, (list = []))
      list.push([g.id, df, data])
    }
  }
  for (const term of [...parts.keys()].sort()) {
    const pairs: Array<number> = []
    for (const [segment, df, data] of parts.get(term)!) {
      const map = newOrdinals.get(segment)!
      const decoded = decodePostings(data, df, map.length)
      if (decoded === undefined) return corrupt(w, `the postings of ${JSON.stringify(term)} are damaged`)
      for (let i = 0; i < decoded.ordinals.length; i++) {
        const to = map[decoded.ordinals[i]!]!
        if (to >= 0) pairs.push(to, decoded.tfs[i]!)
      }
    }
    if (pairs.length > 0)
      insertPostings(w, id, term, pairs.length / 2, (w.postingsEncoder ??= new PostingsEncoder()).encode(pairs))
  }
  for (const g of picked) dropSegment(w, g.id)
  return undefined
}

/** Stores a document and its chunks, replacing an earlier version; returns the damage found, if any. */
const writeDoc = (
  w: WriteState,
  doc: DocRecord,
  chunks: ReadonlyArray<ChunkRecord>,
  terms: TermTable,
  vectors: Float64Array
): IndexCorrupt | undefined => {
  const damage = removeChunks(w, doc.docId)
  if (damage !== undefined) return damage
  const insertDoc = prepared(
    w,
    "INSERT INTO documents (doc_id, source, title, categories, hash, first, chunks, spans, pack, body_start, " +
      "body_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (doc_id) DO NOTHING"
  )
  // A document without chunks has no text to show: its body is not stored.
  const pack = chunks.length === 0 ? null : packIdOf(w, doc.body.pack)
  const spans = new Uint32Array(2 * chunks.length)
  chunks.forEach((chunk, i) => {
    spans[2 * i] = chunk.start
    spans[2 * i + 1] = chunk.end
  })
  const insertRow = () => {
    if (chunks.length > 0) {
      const d = vectors.length / chunks.length
      // Room for 16,384 chunks first, grown fourfold as needed: a process that indexes again and again (a program,
      // the test suite) would otherwise clear a whole segment's 35 MB at every run
      // (docs/decisions/0026-writer-avoids-fresh-memory.md).
      w.pending ??= new SegmentBuilder(nextBase(w), d, undefined, Math.min(maxChunksOf(d), 1 << 14))
    }
    const first = chunks.length === 0 ? 0 : w.pending!.base + w.pending!.count
    return insertDoc.run(
      doc.docId,
      doc.source,
      doc.title,
      doc.categories,
      doc.hash,
      first,
      chunks.length,
      new Uint8Array(spans.buffer),
      pack,
      pack === null ? null : doc.body.from,
      pack === null ? null : doc.body.to
    )
  }
  let inserted = insertRow()
  // In a fresh index the lookup is skipped; a document written twice in one transaction is replaced all the same.
  if (inserted.changes === 0) {
    const damage = removeChunks(w, doc.docId, true)
    if (damage !== undefined) return damage
    inserted = insertRow()
  }
  if (chunks.length === 0) return undefined
  const segment = w.pending!
  const d = segment.dimensions
  const numberOf = termNumbers(w, terms, segment)
  chunks.forEach((chunk, i) => {
    segment.add(terms.ids, chunk.from, chunk.to, numberOf, vectors, i * d)
  })
  const maxChunks = maxChunksOf(d)
  const full = segment.count >= maxChunks || segment.byteLength >= SEGMENT_LIMIT_BYTES
  if (full || (segment.byteLength >= SEGMENT_BUDGET_BYTES && !isSmallSegment(segment.count, d))) flush(w)
  return undefined
}

const indexWriter = (w: WriteState): IndexWriter => ({
  manifest: Effect.suspend(() =>
    w.manifestValue !== undefined
      ? Effect.succeed(w.manifestValue)
      : Effect.map(manifestIn(w.location, "reading the manifest", w.db), (found) => (w.manifestValue = found))
  ).pipe(Effect.withSpan("IndexWriter.manifest")),
  // The meta table is the same in every layout, so an older file's paths are read too (for a rebuild's plan).
  roots: rootsIn(w.location, "reading the indexed paths", w.db).pipe(Effect.withSpan("IndexWriter.roots")),
  storedDocs: Effect.gen(function* () {
    if (!w.layoutCurrent) return yield* tooOld(w, "reading documents")
    return yield* sql(w, "reading documents", () => {
      const stored = new Map<string, StoredEntry>()
      // Rows as arrays: a run over 38k small files read its documents' rows as objects 8 times slower.
      const statement = w.db.prepare("SELECT doc_id, hash, source, chunks FROM documents")
      statement.setReturnArrays(true)
      for (const row of statement.all() as unknown as ReadonlyArray<readonly [string, string, string, number]>) {
        const [docId, hash, source, chunks] = row
        stored.set(docId, { docId, hash, source, chunks })
      }
      return stored
    })
  }).pipe(Effect.withSpan("IndexWriter.storedDocs")),
  clear: sql(w, "clearing", () => {
    dropTables(w.db)
    createTables(w.db)
    w.layoutCurrent = true
    w.pending = undefined
    w.lastPack = undefined
    w.packsFreed = false
    w.tombstones.clear()
    w.manifestValue = Option.none()
    w.fresh = true
    w.statements.clear()
  }).pipe(Effect.withSpan("IndexWriter.clear")),
  deleteDoc: (docId) =>
    write(w, "deleting a document", () => {
      w.fresh = false
      return removeChunks(w, docId)
    }),
  putDoc: (doc, chunks, terms, vectors) =>
    write(w, "writing a document", () => writeDoc(w, doc, chunks, terms, vectors)),
  putDocs: (docs, terms) =>
    write(w, "writing documents", () => {
      for (const { chunks, doc, vectors } of docs) {
        const damage = writeDoc(w, doc, chunks, terms, vectors)
        if (damage !== undefined) return damage
      }
      return undefined
    }),
  putManifest: Effect.fn("IndexWriter.putManifest")(function* (m: IndexManifest) {
    if (!w.layoutCurrent) return yield* tooOld(w, "writing the manifest")
    yield* sql(w, "writing the manifest", () => {
      w.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('manifest', ?)").run(encodeManifest(m))
      w.manifestValue = Option.some(m)
    })
  }),
  putRoots: Effect.fn("IndexWriter.putRoots")(function* (roots: ReadonlyArray<string>) {
    if (!w.layoutCurrent) return yield* tooOld(w, "writing the indexed paths")
    yield* sql(w, "writing the indexed paths", () =>
      w.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('roots', ?)").run(JSON.stringify(roots))
    )
  }),
  fileStamps: fileStampsIn(w.location, w.db).pipe(Effect.withSpan("IndexWriter.fileStamps")),
  putFileStamps: Effect.fn("IndexWriter.putFileStamps")(function* (stamps: ReadonlyMap<string, RecordedStamp>) {
    if (!w.layoutCurrent) return yield* tooOld(w, "writing the files' stamps")
    yield* sql(w, "writing the files' stamps", () => putFileStampsIn(w.db, stamps))
  })
})

/**
 * Writes inside one SQLite transaction: document and chunk rows as they come, search data into a segment that is
 * flushed whenever it reaches the memory budget, and deletions as tombstones applied by `finish`. `current` is false
 * for a file of an older layout, which only `clear` may touch; `segmentWritten` is called after each segment is written
 * (see `backgroundSync`). The synchronous steps report damage they find by returning it (an `IndexCorrupt`, or
 * `undefined` when all is well); the effects around them fail with it.
 */
export const sqliteWriter = (
  location: string,
  db: DatabaseSync,
  current: boolean,
  segmentWritten?: () => void,
  /** Told how many of the run's vector graphs are built, before the first and after each. */
  graphsDone: (done: number, total: number) => Effect.Effect<void> = () => Effect.void,
  /** Other threads that build graphs alongside this one, if any. */
  graphBuilder?: GraphBuilder
) => {
  const w: WriteState = {
    location,
    db,
    segmentWritten,
    layoutCurrent: current,
    postingsEncoder: undefined,
    manifestValue: undefined,
    pending: undefined,
    fresh: undefined,
    statements: new Map(),
    lastPack: undefined,
    packsFreed: false,
    tombstones: new Map(),
    mappings: new WeakMap(),
    mappedSegment: undefined
  }
  return {
    writer: indexWriter(w),
    /** Flushes the last segment, applies the deletions and merges segments; run once, just before the commit. */
    finish: Effect.gen(function* () {
      if (!w.layoutCurrent) return
      const damage = yield* sql(w, "writing the index", () => {
        flush(w)
        dropFreedPacks(w)
        return applyTombstones(w) ?? mergeSegments(w)
      })
      if (damage !== undefined) return yield* damage
      // The segments are final now: each new one gets its vector graph (for an index with one), a step each, so that
      // the run can say how far it is (a graph of 10,000 rows takes a second or more).
      const plan = yield* sql(w, "planning the vector graphs", () => planGraphs(w.db, (detail) => corrupt(w, detail)))
      if (plan === undefined) return
      if (plan instanceof IndexCorrupt) return yield* plan
      yield* buildPlannedGraphs(
        w.db,
        (detail) => corrupt(w, detail),
        plan,
        (what, f) => sql(w, what, f),
        graphsDone,
        graphBuilder
      )
    })
  }
}
