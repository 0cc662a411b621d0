/** A snapshot of an index file: the engine's view over the segments one read transaction sees, reading columns, postings, vectors and text on demand through the generation's caches. */

import type { DatabaseSync } from "node:sqlite"
import type { CleanerConfig } from "@funcpipe/domain/Config"
import { type IndexManifest, keepsOriginals } from "@funcpipe/domain/Manifest"
import { compareCodePoints, type RankKey } from "@funcpipe/domain/Ranking"
import type { Rule } from "@funcpipe/domain/Rule"
import { Result } from "effect"
import { bodyIn } from "../../index/BodyPack.ts"
import { decodePostings } from "../../index/Postings.ts"
import { decodeVectors, encodingFor, type VectorEncoding } from "../../index/VectorCodec.ts"
import { type TableColumn, TableFilter } from "../../search/Filter.ts"
import type { PositionFilter, TermBlock, VectorBlock } from "../../search/IndexView.ts"
import { documentTies } from "../../search/Ranker.ts"
import type { BodyEntry } from "../BodyCache.ts"
import {
  cachedPositions,
  type DocumentText,
  type Snapshot,
  type StoredChunk,
  type StoredDocument,
  spanText
} from "../IndexStore.ts"
import { IndexCorrupt } from "../StoreErrors.ts"
import { type Caches, cachePostings, ROW_CACHE_ENTRIES, ROW_VECTOR_BYTES } from "./Caches.ts"
import { sqliteReadsAt, statement } from "./Connection.ts"
import { damagedGraphs, missingGraphs } from "./GraphHealth.ts"
import { graphSearch, walksPaged } from "./GraphSearch.ts"
import {
  type Corrupt,
  columnsOf,
  deletedOf,
  lengthsInto,
  segmentRows,
  startAtOrBefore,
  storedBlock
} from "./Segments.ts"
import {
  BLOCKS_PER_SEGMENT,
  isDeleted,
  PACK_CACHE_BYTES,
  readMetaIn,
  rowsInBlock,
  type SegmentRow,
  spansIn,
  storedDocOf
} from "./Tables.ts"
import { vectorReader } from "./VectorReader.ts"

/** What the parts of one snapshot share: the file, the transaction, the generation's caches and the segments seen. */
interface Reading {
  readonly location: string
  readonly corrupt: Corrupt
  readonly sqliteReads: ReturnType<typeof sqliteReadsAt>
  readonly db: DatabaseSync
  readonly caches: Caches
  readonly dimensions: number
  readonly segments: ReadonlyArray<SegmentRow>
  /** Each segment's first position. */
  readonly offsets: ReadonlyArray<number>
  /** Stored positions in all, deleted ones included. */
  readonly positions: number
  /** The clean rules that make a stored body (the text as written) the cleaned one; `undefined`: stored cleaned. */
  readonly cleaner: CleanerConfig | undefined
}

/**
 * The layout of the snapshot's segments: deletions and lengths, and where a position is. The concatenated lengths and
 * deletions depend only on the segments and their versions, so they are reused while those stay the same and a warm
 * query does not copy them again.
 */
const layoutOf = (r: Reading) => {
  const { caches, corrupt, db, offsets, positions, segments, sqliteReads } = r
  const signature = segments.map((g) => `${g.id}.${g.version}`).join(" ")
  if (caches.layout?.signature !== signature) {
    let deleted: Uint8Array | undefined
    segments.forEach((segment, s) => {
      const bits = deletedOf(corrupt, caches, db, segment)
      if (bits === undefined) return
      deleted ??= new Uint8Array(positions)
      for (let i = 0; i < segment.count; i++) if (isDeleted(bits, i)) deleted[offsets[s]! + i] = 1
    })
    caches.layout = { signature, lengths: undefined, deleted }
    // Segments merged away or deleted since are no longer needed.
    const listed = new Set(segments.map((g) => g.id))
    for (const id of caches.columns.keys()) if (!listed.has(id)) caches.columns.delete(id)
    for (const id of caches.deleted.keys()) if (!listed.has(id)) caches.deleted.delete(id)
  }
  const layout = caches.layout
  const { deleted } = layout
  // The lengths are read when a query first needs them: BM25 does, a vector query does not (1.7 MB at 442k chunks).
  const lengths = sqliteReads((): Uint32Array => {
    if (layout.lengths === undefined) {
      const all = new Uint32Array(positions)
      segments.forEach((segment, s) => {
        lengthsInto(corrupt, caches, db, segment, all.subarray(offsets[s]!, offsets[s]! + segment.count))
      })
      layout.lengths = all
    }
    return layout.lengths
  })

  const segmentAt = (position: number): number => {
    if (segments.length === 0 || position < 0 || position >= positions)
      throw corrupt(`no chunk at position ${position}`)
    return startAtOrBefore(offsets, segments.length, position)
  }
  return { signature, layout, deleted, lengths, segmentAt }
}

/** The postings of a term in every segment, decoded once per generation and kept while they fit the cache. */
const postingsReader = (r: Reading) => {
  const { caches, corrupt, db, offsets, segments } = r
  const postingsStatement = statement(db, "SELECT df, data FROM postings WHERE segment = ? AND term = ?")
  const postings = (term: string): ReadonlyArray<TermBlock> => {
    const blocks: Array<TermBlock> = []
    segments.forEach((segment, s) => {
      const key = `${segment.id} ${term}`
      let decoded = caches.postings.get(key)
      if (decoded === undefined) {
        const row = postingsStatement.get(segment.id, term) as { df: unknown; data: unknown } | undefined
        decoded =
          row === undefined
            ? null
            : typeof row.df === "number" && row.data instanceof Uint8Array
              ? (decodePostings(row.data, row.df, segment.count) ?? undefined)
              : undefined
        if (decoded === undefined) throw corrupt(`the postings of ${JSON.stringify(term)} are damaged`)
        cachePostings(caches, key, decoded)
      } else {
        // Most recently used last, so eviction takes the least recently used first.
        caches.postings.delete(key)
        caches.postings.set(key, decoded)
      }
      if (decoded !== null) blocks.push({ offset: offsets[s]!, ordinals: decoded.ordinals, tfs: decoded.tfs })
    })
    return blocks
  }
  return postings
}

/** How many documents' rows a snapshot keeps by doc id for `documentText` (about 100 bytes each). */
const TEXT_ROWS = 65_536

/** Chunk rows: where each chunk is (its document, title and span), and the text of the bodies they are cut from. */
const rowReader = (r: Reading, segmentAt: (position: number) => number, keyText: (read: () => string) => string) => {
  const { caches, corrupt, db, offsets, segments } = r
  const chunkStatement = statement(
    db,
    "SELECT id, doc_id, title, first, chunks, spans FROM documents WHERE first <= ? AND chunks > 0 " +
      "ORDER BY first DESC LIMIT 1"
  )
  const placeStatement = statement(db, "SELECT pack, body_start, body_end FROM documents WHERE id = ?")
  const packStatement = statement(db, "SELECT data FROM packs WHERE id = ?")
  /** A pack, decompressed; the last few are kept, as a result's neighbours in the index share its pack. */
  const unpacked = (id: number, doc: number): Uint8Array => {
    let bytes = caches.packs.get(id)
    if (bytes !== undefined) return bytes
    const blob = (packStatement.get(id) as { data: unknown } | undefined)?.data
    if (!(blob instanceof Uint8Array)) throw corrupt(`the text of document ${doc} is missing`)
    bytes = caches.unpacker.unpack(blob)
    if (bytes === undefined) throw corrupt(`the text of document ${doc} does not decompress`)
    caches.packs.set(id, bytes)
    caches.packBytes += bytes.byteLength
    for (const [oldest, kept] of caches.packs) {
      if (caches.packBytes <= PACK_CACHE_BYTES || oldest === id) break
      caches.packs.delete(oldest)
      caches.packBytes -= kept.byteLength
    }
    return bytes
  }
  /** A document's body as stored: as written (format 3 on) or cleaned (format 2). */
  const storedBody = (doc: number): string => {
    const place = placeStatement.get(doc) as { pack: unknown; body_start: unknown; body_end: unknown } | undefined
    if (typeof place?.pack !== "number") throw corrupt(`the text of document ${doc} is missing`)
    const body = bodyIn(unpacked(place.pack, doc), place.body_start as number, place.body_end as number)
    if (body === undefined) throw corrupt(`the text of document ${doc} is not where its row says`)
    return body
  }
  /** A document's body as stored and cleaned, kept in the generation's cache. */
  const bodyEntry = (segment: number, doc: number): BodyEntry =>
    caches.bodies.entry(`${segment}:${doc}`, () => storedBody(doc), r.cleaner)
  /** A document's cleaned body, which chunk spans count in. */
  const bodyOf = (segment: number, doc: number): string => bodyEntry(segment, doc).cleaned
  const rowAt = (position: number) => {
    const s = segmentAt(position)
    // A number, not a string: no allocation per lookup (a segment holds far fewer than 2^32 chunks).
    const key = segments[s]!.id * 2 ** 32 + position - offsets[s]!
    const cached = caches.rows.get(key)
    if (cached !== undefined) {
      const { doc, docId, end, start, title } = cached
      return { s, docId, title, start, end, text: () => spanText(bodyOf(segments[s]!.id, doc), start, end) }
    }
    const id = segments[s]!.base + position - offsets[s]!
    // The document holding the chunk: the one whose chunks start last at or before it.
    const row = chunkStatement.get(id) as Record<string, unknown> | undefined
    const docId = row?.["doc_id"]
    const title = row?.["title"]
    const doc = row?.["id"]
    const first = row?.["first"]
    const chunks = row?.["chunks"]
    const spans = typeof chunks === "number" ? spansIn(row?.["spans"], chunks) : undefined
    if (
      typeof docId !== "string" ||
      typeof title !== "string" ||
      typeof doc !== "number" ||
      typeof first !== "number" ||
      spans === undefined ||
      id - first >= spans.length / 2
    ) {
      throw corrupt(`chunk ${id} is missing or unreadable`)
    }
    const start = spans[2 * (id - first)]!
    const end = spans[2 * (id - first) + 1]!
    if (caches.rows.size >= ROW_CACHE_ENTRIES) {
      caches.rows.clear()
      caches.rowVectorBytes = 0
    }
    caches.rows.set(key, { docId, title, doc, start, end })
    return { s, docId, title, start, end, text: () => spanText(bodyOf(segments[s]!.id, doc), start, end) }
  }
  const keyOf = (position: number): RankKey => {
    const { docId, end, start, text } = rowAt(position)
    // Doc id, start and end already tell chunks apart; the text is only read if a comparison ever gets to it.
    let cached: string | undefined
    return {
      score: 0,
      docId,
      start,
      end,
      get text() {
        return (cached ??= keyText(text))
      }
    }
  }
  return { bodyOf, bodyEntry, rowAt, keyOf }
}

/** A stored chunk with its vector: from a kept block, the row's cache, or cut out of the stored block. */
const chunkReader = (r: Reading, rowAt: ReturnType<typeof rowReader>["rowAt"]) => {
  const { caches, corrupt, db, dimensions, offsets, segments } = r
  /**
   * A result's vector, when its block is not kept: SQLite cuts the row's bytes out of the block, so a query reads a
   * few bytes per result rather than a 128–512 KB block into fresh memory each time.
   */
  const lengthStatement = statement(db, "SELECT length(data) AS n FROM vectors WHERE id = ?")
  const rowStatement = statement(db, "SELECT substr(data, ?, ?) AS row FROM vectors WHERE id = ?")
  /**
   * The last block two rows in a row were read from, as stored: a reader going through positions in order (a copy
   * of the index) reads each block once instead of once per row.
   */
  let lastBlock: { readonly id: number; readonly stored: ReturnType<typeof storedBlock> } | undefined
  let lastRowBlock = -1
  const storedRow = (segment: SegmentRow, block: number, at: number): Float64Array => {
    const id = segment.id * BLOCKS_PER_SEGMENT + block
    if (lastBlock?.id !== id && lastRowBlock === id) {
      lastBlock = { id, stored: storedBlock(corrupt, db, segment, dimensions, block) }
    }
    lastRowBlock = id
    // The row's components: within the kept block, or cut out of the stored one.
    let bytes: Uint8Array
    let encoding: VectorEncoding
    let from = 0
    if (lastBlock?.id === id) {
      ;({ data: bytes, encoding } = lastBlock.stored)
      from = at
    } else {
      const rows = rowsInBlock(segment.blockRows, segment.count, block)
      const length = (lengthStatement.get(id) as { n: unknown } | undefined)?.n
      const found = typeof length === "number" ? encodingFor(length, rows * dimensions) : undefined
      if (found === undefined) throw corrupt(`segment ${segment.id} has a vector block of the wrong size`)
      const size = (length as number) / (rows * dimensions)
      const row = (rowStatement.get(at * size + 1, dimensions * size, id) as { row: unknown } | undefined)?.row
      if (!(row instanceof Uint8Array) || row.byteLength !== dimensions * size) {
        throw corrupt(`segment ${segment.id} has a vector block of the wrong size`)
      }
      bytes = row
      encoding = found
    }
    const out = new Float64Array(dimensions)
    if (!decodeVectors(bytes, encoding, from, from + dimensions, out)) {
      throw corrupt(`segment ${segment.id} has a vector that is not finite`)
    }
    return out
  }

  const chunkAt = (position: number): StoredChunk => {
    const { docId, end, s, start, text: textOf, title } = rowAt(position)
    const text = textOf()
    const row = position - offsets[s]!
    const segment = segments[s]!
    const block = Math.floor(row / segment.blockRows)
    const at = (row % segment.blockRows) * dimensions
    const cached = columnsOf(caches, segment).blocks.get(block)
    let vector: Float64Array | Float32Array | undefined = (cached?.vectors ?? cached?.floats)?.subarray(
      at,
      at + dimensions
    )
    // A kept float32 block is checked as it is read (x · 0 is NaN for NaN and ±Infinity, 0 otherwise).
    if (vector !== undefined && cached?.floats !== undefined && !Array.prototype.every.call(vector, Number.isFinite)) {
      throw corrupt(`segment ${segment.id} has a vector that is not finite`)
    }
    if (vector === undefined) {
      // Kept with the chunk's row (rowAt has just cached it), so a result read again costs no statement.
      const kept = caches.rows.get(segment.id * 2 ** 32 + row)
      vector = kept?.vector ?? storedRow(segment, block, at)
      if (kept !== undefined && kept.vector === undefined && caches.rowVectorBytes < ROW_VECTOR_BYTES) {
        kept.vector = vector
        caches.rowVectorBytes += vector.byteLength
      }
    }
    return { docId, title, start, end, text, vector: Array.from(vector) }
  }
  return chunkAt
}

/** Stored documents by id, and every position's document in id order (for ties and per-document tops). */
const documentReader = (r: Reading, { bodyEntry, bodyOf }: ReturnType<typeof rowReader>) => {
  const { corrupt, db, offsets, positions, segments } = r
  const documentStatement = statement(
    db,
    "SELECT id, doc_id, source, title, categories, hash, first, chunks, spans FROM documents WHERE doc_id = ?"
  )
  const document = (docId: string): StoredDocument | undefined => {
    const row = documentStatement.get(docId) as Record<string, unknown> | undefined
    if (row === undefined) return undefined
    const decoded = storedDocOf(row)
    if (Result.isFailure(decoded)) throw corrupt(decoded.failure)
    const id = row["id"] as number
    const count = decoded.success.chunks
    const spans = spansIn(row["spans"], count)
    if (spans === undefined) throw corrupt(`the chunks of ${JSON.stringify(docId)} are not in the index`)
    const first = row["first"] as number
    const segment = segments.find((g) => first >= g.base && first < g.base + g.count)
    if (count > 0 && segment === undefined) throw corrupt(`the chunks of ${JSON.stringify(docId)} are not in the index`)
    const body = count === 0 ? "" : bodyOf(segment!.id, id)
    return {
      doc: decoded.success,
      chunks: Array.from({ length: count }, (_, c) => {
        const start = spans[2 * c]!
        const end = spans[2 * c + 1]!
        return { start, end, text: spanText(body, start, end) }
      })
    }
  }
  const textStatement = statement(db, "SELECT id, source, first, chunks FROM documents WHERE doc_id = ?")
  /**
   * The rows looked up by doc id in this snapshot (one state of the index, so they stay right): a server shows ten
   * results a query, and a statement per result was a tenth of its time.
   */
  const textRows = new Map<string, { id: number; source: string; first: number; chunks: number } | undefined>()
  const textRow = (docId: string) => {
    if (textRows.has(docId)) return textRows.get(docId)
    const row = textStatement.get(docId) as { id: number; source: string; first: number; chunks: number } | undefined
    if (textRows.size >= TEXT_ROWS) textRows.clear()
    textRows.set(docId, row)
    return row
  }
  const documentText = (docId: string): DocumentText | undefined => {
    const row = textRow(docId)
    if (row === undefined || row.chunks === 0) return undefined
    const segment = segments.find((g) => row.first >= g.base && row.first < g.base + g.count)
    if (segment === undefined) throw corrupt(`the chunks of ${JSON.stringify(docId)} are not in the index`)
    const entry = bodyEntry(segment.id, row.id)
    entry.shown ??= {
      source: row.source,
      cleaned: entry.cleaned,
      original: r.cleaner === undefined ? undefined : entry.stored
    }
    return entry.shown
  }

  let docs: { readonly docOf: Int32Array; readonly count: number; readonly order: Int32Array } | undefined
  const documentsOf = () => {
    if (docs !== undefined) return docs
    const docOf = new Int32Array(positions).fill(-1)
    const ids: Array<string> = []
    for (const row of db.prepare("SELECT doc_id, first, chunks FROM documents WHERE chunks > 0").iterate()) {
      const { chunks, doc_id, first } = row as { doc_id: string; first: number; chunks: number }
      const s = segments.findIndex((g) => first >= g.base && first < g.base + g.count)
      if (s < 0 || first + chunks > segments[s]!.base + segments[s]!.count)
        throw corrupt("a document's chunks are not in the index")
      const from = offsets[s]! + first - segments[s]!.base
      docOf.fill(ids.length, from, from + chunks)
      ids.push(doc_id)
    }
    const byId = ids.map((_, i) => i).sort((a, b) => compareCodePoints(ids[a]!, ids[b]!))
    const order = new Int32Array(ids.length)
    byId.forEach((doc, rank) => {
      order[doc] = rank
    })
    return (docs = { docOf, count: ids.length, order })
  }

  return { document, documentText, documentsOf, tieOrder: () => (docs === undefined ? undefined : documentTies(docs)) }
}

/** How many top-k selections a snapshot makes by reading keys for ties before it numbers its documents. */
const TIE_ASKS_BEFORE_DOCUMENTS = 4

/** Query filters over the documents' columns, read when a rule first needs them and kept per layout. */
const filterReader = (r: Reading, signature: string) => {
  const { caches, corrupt, db, offsets, positions, segments } = r
  // The documents with chunks, in id order, as query filters read them: their positions now, a column when a rule
  // first needs it (read in this snapshot's transaction, which sees the documents the table was made from).
  const DOCUMENTS_WITH_CHUNKS = "FROM documents WHERE chunks > 0 ORDER BY id"
  const tableFilter = (): TableFilter => {
    if (caches.filters?.signature === signature) return caches.filters.table
    const statement = db.prepare(`SELECT first, chunks ${DOCUMENTS_WITH_CHUNKS}`)
    statement.setReturnArrays(true)
    const rows = statement.all() as unknown as Array<Array<unknown>>
    const first = new Int32Array(rows.length)
    const chunks = new Int32Array(rows.length)
    rows.forEach(([at, count], doc) => {
      if (typeof at !== "number" || typeof count !== "number") throw corrupt("a document's chunks are unreadable")
      const s = segments.findIndex((g) => at >= g.base && at < g.base + g.count)
      if (s < 0 || at + count > segments[s]!.base + segments[s]!.count) {
        throw corrupt("a document's chunks are not in the index")
      }
      first[doc] = offsets[s]! + at - segments[s]!.base
      chunks[doc] = count
    })
    const table = new TableFilter({ first, chunks, positions })
    caches.filters = { signature, table, results: new Map() }
    return table
  }
  const readColumn = (column: TableColumn): ReadonlyArray<string | null> => {
    const statement = db.prepare(`SELECT ${column} ${DOCUMENTS_WITH_CHUNKS}`)
    statement.setReturnArrays(true)
    return (statement.all() as unknown as Array<Array<unknown>>).map(([value]) => {
      if (typeof value === "string" || (value === null && column === "categories")) return value
      throw corrupt(`a document's ${column} is unreadable`)
    })
  }
  const filter = (rule: Rule): PositionFilter => {
    const table = tableFilter()
    return cachedPositions(caches.filters!.results, rule, (r) => table.positions(r, readColumn))
  }
  return filter
}

/**
 * The function that builds a snapshot's view over one read transaction of the file at `location`; `cachesFor` gives the
 * caches of a generation of the file (one set per store, see `makeSqliteStore`).
 */
export const snapshotReader = (location: string, cachesFor: (generation: string) => Caches) => {
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  const sqliteReads = sqliteReadsAt(location)
  /** Reads the text of a `keyOf` key, when a comparison first needs it. */
  const keyText = sqliteReads((read: () => string) => read())

  /** Builds the snapshot's view over the segments of one read transaction on `db`. */
  return (db: DatabaseSync, manifestValue: IndexManifest): Snapshot => {
    // Segment ids are unique within one build of the file; a rebuild (here or by another process) starts a new
    // generation whose ids may repeat, so the caches start afresh.
    const caches = cachesFor(readMetaIn(db, "generation") ?? "")
    const dimensions = manifestValue.dimensions
    const segments = segmentRows(corrupt, db)
    const offsets: Array<number> = []
    let positions = 0
    let liveChunks = 0
    let liveLength = 0
    for (const segment of segments) {
      offsets.push(positions)
      positions += segment.count
      liveChunks += segment.live
      liveLength += segment.liveLength
    }
    const cleaner = keepsOriginals(manifestValue.formatVersion) ? manifestValue.cleaner : undefined
    const r: Reading = { location, corrupt, sqliteReads, db, caches, dimensions, segments, offsets, positions, cleaner }
    const { deleted, layout, lengths, segmentAt, signature } = layoutOf(r)
    const postings = postingsReader(r)
    const vectorBlocks = vectorReader(r)
    const rows = rowReader(r, segmentAt, keyText)
    const { keyOf, rowAt } = rows
    const chunkAt = chunkReader(r, rowAt)
    const { document, documentText, documentsOf, tieOrder } = documentReader(r, rows)
    const filter = filterReader(r, signature)
    const annSearch =
      manifestValue.ann === undefined
        ? undefined
        : graphSearch({ ...r, deleted: deleted as Uint8Array | undefined, codes: manifestValue.ann.codes })
    const readMissing = sqliteReads((_: undefined) => missingGraphs(db))
    const readDamage = sqliteReads((_: undefined) => damagedGraphs(db, dimensions))
    const readPaged = sqliteReads((_: undefined) => walksPaged(db, manifestValue.ann?.codes, segments))
    const readAnn = sqliteReads(
      (a: { query: ArrayLike<number>; ef: number; filter: PositionFilter | undefined; keep: number | undefined }) =>
        annSearch!.search(a.query, a.ef, a.filter, a.keep)
    )
    const readWarm = sqliteReads((budget: number) => annSearch!.warm(budget))
    const documents = sqliteReads<void, ReturnType<typeof documentsOf>>(documentsOf)
    let tieAsks = 0
    return {
      scratch: caches.scratch,
      manifest: manifestValue,
      // The layout is made anew whenever a segment is added, changed or removed, and a rebuild starts new caches.
      stateKey: layout,
      dimensions,
      positions,
      liveChunks,
      averageLength: liveChunks === 0 ? 0 : liveLength / liveChunks,
      get lengths() {
        return lengths(undefined)
      },
      deleted,
      postings: sqliteReads(postings),
      vectorBlocks: sqliteReads<void, Iterable<VectorBlock>>(vectorBlocks),
      keyOf: sqliteReads(keyOf),
      chunkAt: sqliteReads(chunkAt),
      document: sqliteReads(document),
      documentText: sqliteReads(documentText),
      documents,
      // A snapshot asked for ties again and again is a server's: it numbers the documents once, so equal scores are
      // told apart by two numbers rather than by reading two chunks' keys (a third of a lexical query's time where
      // many chunks tie). A command that asks once or twice does not pay for reading every document.
      tieOrder: () => {
        if (++tieAsks === TIE_ASKS_BEFORE_DOCUMENTS) documents()
        return tieOrder()
      },
      filter: sqliteReads(filter),
      annSearch:
        annSearch === undefined ? undefined : (query, ef, filter, keep) => readAnn({ query, ef, filter, keep }),
      annMissing: manifestValue.ann === undefined ? undefined : () => readMissing(undefined),
      annDamage: manifestValue.ann === undefined ? undefined : () => readDamage(undefined),
      annPaged: manifestValue.ann === undefined ? undefined : () => readPaged(undefined),
      annWarm: annSearch === undefined ? undefined : readWarm
    }
  }
}
