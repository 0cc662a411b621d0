/** The writing side of an index file: one transaction's document rows, segments, tombstones and merges. */

import type { DatabaseSync, StatementSync } from "node:sqlite"
import type { IndexManifest } from "@funcpipe/domain/Manifest"
import { Effect, Option } from "effect"
import { decodePostings, PostingsEncoder } from "../../index/Postings.ts"
import { SegmentBuilder } from "../../index/Segment.ts"
import { decodeVectors, encodeVectors, encodingFor } from "../../index/VectorCodec.ts"
import {
  type ChunkRecord,
  type DocRecord,
  type IndexWriter,
  type StoredEntry,
  type TermTable,
  view
} from "../IndexStore.ts"
import { IndexCorrupt, IndexTooOld, type StoreError } from "../StoreErrors.ts"
import { LAYOUT, sqlite } from "./Connection.ts"
import {
  BLOCKS_PER_SEGMENT,
  blockRowsFor,
  createTables,
  dropTables,
  encodeManifest,
  isDeleted,
  MAX_SMALL_SEGMENTS,
  manifestIn,
  maxChunksOf,
  rootsIn,
  rowsInBlock,
  SEGMENT_BUDGET_BYTES,
  SEGMENT_LIMIT_BYTES
} from "./Tables.ts"

/**
 * Writes inside one SQLite transaction: document and chunk rows as they come, search data into a segment that is
 * flushed whenever it reaches the memory budget, and deletions as tombstones applied by `finish`. `current` is false
 * for a file of an older layout, which only `clear` may touch; `segmentWritten` is called after each segment is written
 * (see `backgroundSync`). The synchronous steps report damage they find by returning it (an `IndexCorrupt`, or
 * `undefined` when all is well); the effects around them fail with it.
 */
export const sqliteWriter = (location: string, db: DatabaseSync, current: boolean, segmentWritten?: () => void) => {
  let layoutCurrent = current
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  /** Encodes the merged segments' postings, term after term, in memory kept for the transaction (made on first use). */
  let postingsEncoder: PostingsEncoder | undefined
  /** Calls into SQLite (see `sqlite`) while writing. */
  const sql = <A>(what: string, f: () => A) => sqlite(location, what, f)
  /** The failure of a write to a file of an older layout (which only `clear` may touch). */
  const tooOld = (what: string) =>
    Effect.flatMap(
      sql(what, () => (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version),
      (found) => Effect.fail(new IndexTooOld({ location, found, supported: LAYOUT }))
    )
  /**
   * Runs `f`, a write that returns the damage it finds, failing with that damage (or with `IndexTooOld` on a file of
   * an older layout). Plain effects rather than a generator or a span of their own: documents are written by the
   * thousand, inside the transaction's span, and a span per document cost about 5 % of indexing time.
   */
  const write = (what: string, f: () => IndexCorrupt | undefined): Effect.Effect<void, StoreError> =>
    Effect.suspend(() =>
      layoutCurrent
        ? Effect.flatMap(sql(what, f), (damage) => (damage === undefined ? Effect.void : Effect.fail(damage)))
        : tooOld(what)
    )

  let manifestValue: Option.Option<IndexManifest> | undefined
  let pending: SegmentBuilder | undefined
  /** True while the index holds no document from before this transaction, so nothing can need replacing. */
  let fresh: boolean | undefined
  const statements = new Map<string, StatementSync>()
  const prepared = (sql: string): StatementSync => {
    let statement = statements.get(sql)
    if (statement === undefined) statements.set(sql, (statement = db.prepare(sql)))
    return statement
  }
  /** The pack last written, and its row: the documents of a pack come one after another. */
  let lastPack: { readonly bytes: Uint8Array; readonly id: number } | undefined
  /** True once a document was removed: a pack may have lost its last document. */
  let packsFreed = false
  const packIdOf = (pack: Uint8Array): number => {
    if (lastPack?.bytes !== pack) {
      const id = Number(prepared("INSERT INTO packs (data) VALUES (?)").run(pack).lastInsertRowid)
      lastPack = { bytes: pack, id }
    }
    return lastPack.id
  }
  /** Deletes the packs no document points into. */
  const dropFreedPacks = () => {
    if (!packsFreed) return
    db.exec("DELETE FROM packs WHERE id NOT IN (SELECT pack FROM documents WHERE pack IS NOT NULL)")
    packsFreed = false
  }
  /** Deleted chunk ranges per segment id: [first ordinal, count] pairs. */
  const tombstones = new Map<number, Array<number>>()

  const nextBase = (): number => {
    const row = db.prepare("SELECT max(base + count) AS next FROM segments").get() as { next: number | null }
    return row.next ?? 0
  }

  /**
   * Writes a new segment's row and vector blocks (`count` chunks' lengths and `dimensions` components each, none
   * deleted; magnitudes are computed again when blocks are read) and returns its id; the caller writes its postings.
   */
  const insertSegment = (
    base: number,
    count: number,
    totalLength: number,
    dimensions: number,
    columns: { readonly lengths: Uint32Array; readonly vectors: Float64Array }
  ): number => {
    const blockRows = blockRowsFor(dimensions)
    const id = Number(
      prepared(
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
      prepared("INSERT INTO vectors (id, data) VALUES (?, ?)").run(
        id * BLOCKS_PER_SEGMENT + b,
        encodeVectors(columns.vectors.subarray(from * dimensions, to * dimensions))
      )
    }
    return id
  }

  /** Removes a segment: its row, vector blocks and postings. */
  const dropSegment = (id: number) => {
    prepared("DELETE FROM postings WHERE segment = ?").run(id)
    prepared("DELETE FROM vectors WHERE id >= ? AND id < ?").run(id * BLOCKS_PER_SEGMENT, (id + 1) * BLOCKS_PER_SEGMENT)
    prepared("DELETE FROM segments WHERE id = ?").run(id)
  }

  /** Writes a term's postings in a segment: `count` of them, encoded (see `encodePostings`). */
  const insertPostings = (segment: number, term: string, count: number, bytes: Uint8Array) =>
    prepared("INSERT INTO postings (segment, term, df, data) VALUES (?, ?, ?, ?)").run(segment, term, count, bytes)

  const flush = () => {
    if (pending === undefined || pending.count === 0) return
    const segment = pending
    const id = insertSegment(segment.base, segment.count, segment.totalLength, segment.dimensions, segment.columns())
    for (const [term, count, bytes] of segment.encodedPostings()) insertPostings(id, term, count, bytes)
    pending = new SegmentBuilder(segment.base + segment.count, segment.dimensions, segment)
    segmentWritten?.()
  }

  /**
   * Maps a vocabulary's term numbers to the pending segment's. The batches of one preparing thread share one growing
   * vocabulary, so a mapping is kept per vocabulary while the segment stays, and a term's text is looked up once per
   * segment rather than once per batch.
   */
  let mappings = new WeakMap<ReadonlyArray<string>, Int32Array>()
  let mappedSegment: SegmentBuilder | undefined
  const termNumbers = (terms: TermTable, segment: SegmentBuilder) => {
    if (mappedSegment !== segment) {
      mappings = new WeakMap()
      mappedSegment = segment
    }
    const { vocabulary } = terms
    let known = mappings.get(vocabulary)
    if (known === undefined || known.length < vocabulary.length) {
      const grown = new Int32Array(Math.max(vocabulary.length, 2 * (known?.length ?? 0))).fill(-1)
      if (known !== undefined) grown.set(known)
      mappings.set(vocabulary, (known = grown))
    }
    const numbers = known
    return (id: number): number => {
      let n = numbers[id]!
      if (n < 0) numbers[id] = n = segment.termId(vocabulary[id]!)
      return n
    }
  }

  /** Removes a document's rows and marks its chunks deleted; returns the damage found, if any. */
  const removeChunks = (docId: string, always = false): IndexCorrupt | undefined => {
    fresh ??= db.prepare("SELECT count(*) AS n FROM documents").get()!["n"] === 0
    if (fresh && !always) return undefined
    const row = prepared("SELECT id, first, chunks FROM documents WHERE doc_id = ?").get(docId) as
      | { id: number; first: number; chunks: number }
      | undefined
    if (row === undefined) return undefined
    // Chunks written earlier in this transaction are still in memory: flush them so they can be deleted like others.
    if (pending !== undefined && row.chunks > 0 && row.first >= pending.base) flush()
    if (row.chunks > 0) {
      const segment = db
        .prepare("SELECT id, base, count FROM segments WHERE base <= ? ORDER BY base DESC LIMIT 1")
        .get(row.first) as { id: number; base: number; count: number } | undefined
      if (segment === undefined || row.first + row.chunks > segment.base + segment.count) {
        return corrupt(`the chunks of ${JSON.stringify(docId)} are not in the index`)
      }
      const ranges = tombstones.get(segment.id) ?? []
      ranges.push(row.first - segment.base, row.chunks)
      tombstones.set(segment.id, ranges)
    }
    prepared("DELETE FROM documents WHERE id = ?").run(row.id)
    packsFreed = true
    return undefined
  }

  /** Marks the chunks of removed documents deleted, dropping segments left empty; returns the damage found, if any. */
  const applyTombstones = (): IndexCorrupt | undefined => {
    for (const [id, ranges] of tombstones) {
      const row = db.prepare("SELECT count, live, live_length, deleted, lengths FROM segments WHERE id = ?").get(id) as
        | { count: number; live: number; live_length: number; deleted: Uint8Array | null; lengths: Uint8Array }
        | undefined
      if (row === undefined) return corrupt(`segment ${id} is missing`)
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
        dropSegment(id)
      } else {
        db.prepare(
          "UPDATE segments SET live = ?, live_length = ?, deleted = ?, version = version + 1 WHERE id = ?"
        ).run(live, liveLength, bits, id)
      }
    }
    tombstones.clear()
    return undefined
  }

  /**
   * Merges segments, as Lucene's tiered policy does in spirit: a segment more than half deleted, or more small
   * segments than `MAX_SMALL_SEGMENTS`, makes the sparse and small ones (up to one segment's size of live chunks)
   * merge into one new segment holding only their live chunks, so deleted chunks stop costing space and time and
   * queries do not slow down as updates pile up. The documents' chunks get new ids, in the same order. Returns the
   * damage found, if any.
   */
  const mergeSegments = (): IndexCorrupt | undefined => {
    const manifest = manifestValue ?? Option.none()
    if (Option.isNone(manifest)) return undefined
    const { dimensions } = manifest.value
    const maxChunks = maxChunksOf(dimensions)
    const all = db.prepare("SELECT id, base, count, live, block_rows FROM segments ORDER BY base").all() as Array<{
      id: number
      base: number
      count: number
      live: number
      block_rows: number
    }>
    const sparse = (g: (typeof all)[number]) => g.live * 2 < g.count
    const small = (g: (typeof all)[number]) => g.count * 8 < maxChunks
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
    for (const row of db.prepare("SELECT id, first, chunks FROM documents WHERE chunks > 0").iterate()) {
      const doc = row as { id: number; first: number; chunks: number }
      const g = picked.find((g) => doc.first >= g.base && doc.first < g.base + g.count)
      if (g !== undefined) docsOf.get(g.id)!.push(doc)
    }
    const base = nextBase()
    const lengths = new Uint32Array(live)
    const vectors = new Float64Array(live * dimensions)
    const newOrdinals = new Map<number, Int32Array>()
    let next = 0
    let totalLength = 0
    for (const g of picked) {
      const row = db.prepare("SELECT lengths, deleted FROM segments WHERE id = ?").get(g.id) as {
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
            return corrupt(`a live document has a deleted chunk in segment ${g.id}`)
          }
          map[ordinal] = next
          lengths[next] = oldLengths[ordinal]!
          totalLength += oldLengths[ordinal]!
          next++
        }
        prepared("UPDATE documents SET first = ? WHERE id = ?").run(first, doc.id)
      }
      for (let b = 0; b * g.block_rows < g.count; b++) {
        const block = db.prepare("SELECT data FROM vectors WHERE id = ?").get(g.id * BLOCKS_PER_SEGMENT + b) as
          | { data: Uint8Array }
          | undefined
        if (block === undefined) return corrupt(`segment ${g.id} is missing a vector block`)
        const rows = rowsInBlock(g.block_rows, g.count, b)
        const encoding = encodingFor(block.data.byteLength, rows * dimensions)
        const v = new Float64Array(rows * dimensions)
        if (encoding === undefined || !decodeVectors(block.data, encoding, 0, v.length, v)) {
          return corrupt(`segment ${g.id} has a damaged vector block`)
        }
        for (let r = 0; r < rows; r++) {
          const to = map[b * g.block_rows + r]!
          if (to < 0) continue
          vectors.set(v.subarray(r * dimensions, (r + 1) * dimensions), to * dimensions)
        }
      }
      newOrdinals.set(g.id, map)
    }
    if (next !== live) return corrupt("the live chunk counts of the merged segments disagree with their documents")

    const id = insertSegment(base, live, totalLength, dimensions, { lengths, vectors })
    // Each term's postings: the source segments' in base order, remapped, so new ordinals stay increasing.
    const parts = new Map<string, Array<readonly [segment: number, df: number, data: Uint8Array]>>()
    for (const g of picked) {
      for (const row of db.prepare("SELECT term, df, data FROM postings WHERE segment = ?").iterate(g.id)) {
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
        if (decoded === undefined) return corrupt(`the postings of ${JSON.stringify(term)} are damaged`)
        for (let i = 0; i < decoded.ordinals.length; i++) {
          const to = map[decoded.ordinals[i]!]!
          if (to >= 0) pairs.push(to, decoded.tfs[i]!)
        }
      }
      if (pairs.length > 0)
        insertPostings(id, term, pairs.length / 2, (postingsEncoder ??= new PostingsEncoder()).encode(pairs))
    }
    for (const g of picked) dropSegment(g.id)
    return undefined
  }

  /** Stores a document and its chunks, replacing an earlier version; returns the damage found, if any. */
  const writeDoc = (
    doc: DocRecord,
    chunks: ReadonlyArray<ChunkRecord>,
    terms: TermTable,
    vectors: Float64Array
  ): IndexCorrupt | undefined => {
    const damage = removeChunks(doc.docId)
    if (damage !== undefined) return damage
    const insertDoc = prepared(
      "INSERT INTO documents (doc_id, source, title, categories, hash, first, chunks, spans, pack, body_start, " +
        "body_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (doc_id) DO NOTHING"
    )
    // A document without chunks has no text to show: its body is not stored.
    const pack = chunks.length === 0 ? null : packIdOf(doc.body.pack)
    const spans = new Uint32Array(2 * chunks.length)
    chunks.forEach((chunk, i) => {
      spans[2 * i] = chunk.start
      spans[2 * i + 1] = chunk.end
    })
    const insertRow = () => {
      if (chunks.length > 0) {
        const d = vectors.length / chunks.length
        // Room for 16,384 chunks, then 65,536 (see `grow`). Room for a whole segment at once (262,144 chunks at 16
        // dimensions, 35 MB) cost a process that indexes again and again a 35 MB memset at each run, as the allocator
        // hands out freed memory then, not fresh pages: the conformance tests took 9.8 s, now 7.1 s, and the IndexStore
        // tests 6.0 s, now 4.1 s. A 210 MB run copies its first segment's arrays once (4 interleaved pairs: alike).
        pending ??= new SegmentBuilder(nextBase(), d, undefined, Math.min(maxChunksOf(d), 1 << 14))
      }
      const first = chunks.length === 0 ? 0 : pending!.base + pending!.count
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
      const damage = removeChunks(doc.docId, true)
      if (damage !== undefined) return damage
      inserted = insertRow()
    }
    if (chunks.length === 0) return undefined
    const segment = pending!
    const d = segment.dimensions
    const numberOf = termNumbers(terms, segment)
    chunks.forEach((chunk, i) => {
      segment.add(terms.ids, chunk.from, chunk.to, numberOf, vectors, i * d)
    })
    const maxChunks = maxChunksOf(d)
    const full = segment.count >= maxChunks || segment.byteLength >= SEGMENT_LIMIT_BYTES
    if (full || (segment.byteLength >= SEGMENT_BUDGET_BYTES && segment.count * 8 >= maxChunks)) flush()
    return undefined
  }

  const writer: IndexWriter = {
    manifest: Effect.suspend(() =>
      manifestValue !== undefined
        ? Effect.succeed(manifestValue)
        : Effect.map(manifestIn(location, "reading the manifest", db), (found) => (manifestValue = found))
    ).pipe(Effect.withSpan("IndexWriter.manifest")),
    // The meta table is the same in every layout, so an older file's paths are read too (for a rebuild's plan).
    roots: rootsIn(location, "reading the indexed paths", db).pipe(Effect.withSpan("IndexWriter.roots")),
    storedDocs: Effect.gen(function* () {
      if (!layoutCurrent) return yield* tooOld("reading documents")
      return yield* sql("reading documents", () => {
        const stored = new Map<string, StoredEntry>()
        for (const row of db.prepare("SELECT doc_id, hash, source, chunks FROM documents").iterate()) {
          const r = row as { doc_id: string; hash: string; source: string; chunks: number }
          stored.set(r.doc_id, { docId: r.doc_id, hash: r.hash, source: r.source, chunks: r.chunks })
        }
        return stored
      })
    }).pipe(Effect.withSpan("IndexWriter.storedDocs")),
    clear: sql("clearing", () => {
      dropTables(db)
      createTables(db)
      layoutCurrent = true
      pending = undefined
      lastPack = undefined
      packsFreed = false
      tombstones.clear()
      manifestValue = Option.none()
      fresh = true
      statements.clear()
    }).pipe(Effect.withSpan("IndexWriter.clear")),
    deleteDoc: (docId) =>
      write("deleting a document", () => {
        fresh = false
        return removeChunks(docId)
      }),
    putDoc: (doc, chunks, terms, vectors) => write("writing a document", () => writeDoc(doc, chunks, terms, vectors)),
    putDocs: (docs, terms) =>
      write("writing documents", () => {
        for (const { chunks, doc, vectors } of docs) {
          const damage = writeDoc(doc, chunks, terms, vectors)
          if (damage !== undefined) return damage
        }
        return undefined
      }),
    putManifest: Effect.fn("IndexWriter.putManifest")(function* (m: IndexManifest) {
      if (!layoutCurrent) return yield* tooOld("writing the manifest")
      yield* sql("writing the manifest", () => {
        db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('manifest', ?)").run(encodeManifest(m))
        manifestValue = Option.some(m)
      })
    }),
    putRoots: Effect.fn("IndexWriter.putRoots")(function* (roots: ReadonlyArray<string>) {
      if (!layoutCurrent) return yield* tooOld("writing the indexed paths")
      yield* sql("writing the indexed paths", () =>
        db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('roots', ?)").run(JSON.stringify(roots))
      )
    })
  }

  return {
    writer,
    /** Flushes the last segment, applies the deletions and merges segments; run once, just before the commit. */
    finish: Effect.gen(function* () {
      if (!layoutCurrent) return
      const damage = yield* sql("writing the index", () => {
        flush()
        dropFreedPacks()
        return applyTombstones() ?? mergeSegments()
      })
      if (damage !== undefined) return yield* damage
    })
  }
}
