/**
 * A snapshot held in memory: the index's documents, as a store read them in one transaction, turned into the view the
 * engine scores (one segment of typed arrays and per-term postings), so a store on a database server answers with the
 * same engine, and the same bits, as the SQLite file.
 */

import type { CleanerConfig } from "@funcpipe/domain/Config"
import { oneLine } from "@funcpipe/domain/Decode"
import { type IndexManifest, keepsOriginals } from "@funcpipe/domain/Manifest"
import { compareCodePoints, type RankKey } from "@funcpipe/domain/Ranking"
import type { Rule } from "@funcpipe/domain/Rule"
import { Result, Schema } from "effect"
import { inflateBody } from "../index/BodyPack.ts"
import { decodePostings } from "../index/Postings.ts"
import { SegmentBuilder } from "../index/Segment.ts"
import { encodingOf } from "../index/VectorCodec.ts"
import { type TableColumn, TableFilter } from "../search/Filter.ts"
import { holdFloats } from "../search/FloatScan.ts"
import type { DecodedBlock, FloatBlock, PositionFilter, TermBlock } from "../search/IndexView.ts"
import { documentTies } from "../search/Ranker.ts"
import { ScoringScratch } from "../search/Scratch.ts"
import { BodyCache } from "./BodyCache.ts"
import {
  cachedPositions,
  type DocumentText,
  type Snapshot,
  StoredDoc,
  type StoredDocument,
  spanText
} from "./IndexStore.ts"
import { IndexCorrupt } from "./StoreErrors.ts"

/**
 * A document as a store loads it: its fields, its cleaned body (raw DEFLATE of the UTF-8), and its chunks' search
 * data in chunk order: spans (start, end in code points), how many terms each has, the document's distinct terms,
 * each chunk's terms in order as numbers into them, and the vectors (`dimensions` components per chunk).
 */
export interface LoadedDoc {
  readonly docId: string
  readonly source: string
  readonly title: string
  readonly categories: string | null
  readonly hash: string
  readonly chunks: number
  readonly body: Uint8Array
  readonly spans: Uint32Array
  readonly lengths: Uint32Array
  readonly terms: ReadonlyArray<string>
  readonly termIds: Uint16Array | Uint32Array
  readonly vectors: Float64Array
}

/** How many terms' split postings a snapshot keeps for warm queries. */
const POSTINGS_CACHE_ENTRIES = 4096

const decodeDoc = Schema.decodeUnknownResult(StoredDoc)

/** The document's fields as a `StoredDoc`, or `IndexCorrupt` (thrown) when they break its rules. */
export const storedDocOf = (
  location: string,
  doc: { readonly [K in "docId" | "source" | "title" | "categories" | "hash" | "chunks"]: unknown }
) => {
  const decoded = decodeDoc({
    docId: doc.docId,
    source: doc.source,
    title: doc.title,
    categories: doc.categories,
    hash: doc.hash,
    chunks: doc.chunks
  })
  if (Result.isFailure(decoded)) {
    const detail = `document ${JSON.stringify(doc.docId)}: ${oneLine(decoded.failure.message)}`
    throw new IndexCorrupt({ location, detail })
  }
  return decoded.success
}

/** What a snapshot keeps of a loaded document once its chunks are in the segment: its fields and compressed body. */
type KeptDoc = Pick<LoadedDoc, "docId" | "source" | "title" | "categories" | "hash" | "chunks" | "body">

/**
 * Builds a snapshot from documents given one at a time (positions numbered document after document, in the order
 * given, each document's chunks in body order), so a store can load an index page by page: a document's search data
 * goes into the segment as it is added and is not kept, only its fields and compressed body are. Everything is
 * checked on the way in (sizes, term numbers, finite vectors), so scoring reads nothing that can fail; a document's
 * text is decompressed when a result or a tie first needs it. `add` and `finish` throw `IndexCorrupt`. Chunks go
 * through the same `SegmentBuilder` as an index run's, so lengths, magnitudes and postings are the ones the SQLite
 * store computes.
 */
export const snapshotLoader = (location: string, manifest: IndexManifest) => {
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  const d = manifest.dimensions
  let segment: SegmentBuilder | undefined = new SegmentBuilder(0, d)
  const docs: Array<KeptDoc> = []
  /** Per position: its document's number in `docs`, and its span; per document, its first position. */
  let docAt = new Int32Array(1024)
  let starts = new Uint32Array(1024)
  let ends = new Uint32Array(1024)
  let first = new Int32Array(1024)

  const add = (doc: LoadedDoc): void => {
    if (segment === undefined) throw new Error("snapshotLoader: a document was added after finish")
    const built = segment
    const i = docs.length
    const name = JSON.stringify(doc.docId)
    const { chunks, lengths, spans, termIds, terms, vectors } = doc
    if (spans.length !== 2 * chunks || lengths.length !== chunks || vectors.length !== chunks * d) {
      throw corrupt(`the chunks of ${name} do not match their count`)
    }
    let check = 0
    // x · 0 is 0 for every finite x and NaN otherwise, so one sum checks every component.
    for (let j = 0; j < vectors.length; j++) check += vectors[j]! * 0
    if (check !== 0) throw corrupt(`a vector of ${name} is not finite`)
    const numbers = new Int32Array(terms.length).fill(-1)
    const numberOf = (id: number): number => {
      if (id >= terms.length) throw corrupt(`the terms of ${name} are damaged`)
      let n = numbers[id]!
      if (n < 0) numbers[id] = n = built.termId(terms[id]!)
      return n
    }
    if (i === first.length) first = grow(first, 2 * i)
    first[i] = built.count
    if (built.count + chunks > docAt.length) {
      const size = Math.max(built.count + chunks, docAt.length * 2)
      docAt = grow(docAt, size)
      starts = grow(starts, size)
      ends = grow(ends, size)
    }
    let from = 0
    for (let c = 0; c < chunks; c++) {
      const to = from + lengths[c]!
      if (to > termIds.length) throw corrupt(`the terms of ${name} are damaged`)
      const start = spans[2 * c]!
      const end = spans[2 * c + 1]!
      const before = c > 0 && (start < spans[2 * c - 2]! || (start === spans[2 * c - 2]! && end <= spans[2 * c - 1]!))
      if (start > end || before) {
        throw corrupt(`the chunks of ${name} are out of order`)
      }
      const position = built.add(termIds, from, to, numberOf, vectors, c * d)
      docAt[position] = i
      starts[position] = start
      ends[position] = end
      from = to
    }
    if (from !== termIds.length) throw corrupt(`the terms of ${name} are damaged`)
    const { body, categories, docId, hash, source, title } = doc
    // A copy of its own: a database client may hand out the bytes as a view of a much larger receive buffer.
    docs.push({ docId, source, title, categories, hash, chunks, body: body.slice() })
  }

  /** The snapshot of the documents added; the loader takes no more after it. */
  const finish = (): Snapshot => {
    if (segment === undefined) throw new Error("snapshotLoader: finish was called twice")
    const built = segment
    // The builder is not needed once its postings are copied out: let its arrays go with it.
    segment = undefined
    return snapshotOf(location, manifest, built, docs, { docAt, starts, ends, first })
  }

  return { add, finish }
}

/** A loaded segment's postings: kept encoded (about a byte each) and decoded when a query first needs a term. */
const loadedPostings = (segment: SegmentBuilder, positions: number) => {
  // Each term's postings as the builder encoded them (about a byte each), one term after another in `encoded`, and
  // decoded when a query first needs them.
  const termIndex = new Map<string, number>()
  const counts: Array<number> = []
  const bounds: Array<number> = [0]
  let encoded = new Uint8Array(1 << 16)
  let used = 0
  for (const [term, count, bytes] of segment.encodedPostings()) {
    if (used + bytes.length > encoded.length) {
      const grown = new Uint8Array(Math.max(2 * encoded.length, used + bytes.length))
      grown.set(encoded.subarray(0, used))
      encoded = grown
    }
    encoded.set(bytes, used)
    used += bytes.length
    termIndex.set(term, counts.length)
    counts.push(count)
    bounds.push(used)
  }

  const split = new Map<string, ReadonlyArray<TermBlock>>()
  const postings = (term: string): ReadonlyArray<TermBlock> => {
    let blocks = split.get(term)
    if (blocks !== undefined) return blocks
    const k = termIndex.get(term)
    if (k === undefined) blocks = []
    else {
      const decoded = decodePostings(encoded.subarray(bounds[k]!, bounds[k + 1]!), counts[k]!, positions)
      // The builder encoded them from checked input: only a bug could make them undecodable.
      if (decoded === undefined) throw new Error(`the loaded postings of ${JSON.stringify(term)} do not decode`)
      blocks = [{ offset: 0, ordinals: decoded.ordinals, tfs: decoded.tfs }]
    }
    if (split.size >= POSTINGS_CACHE_ENTRIES) split.clear()
    split.set(term, blocks)
    return blocks
  }
  return postings
}

/**
 * The loaded documents' bodies, decompressed (and cleaned, for an index that keeps them as written) when first read
 * and kept up to `BODY_CACHE_CHARS`.
 */
const loadedBodies = (
  docs: ReadonlyArray<KeptDoc>,
  cleaner: CleanerConfig | undefined,
  corrupt: (detail: string) => IndexCorrupt
) => {
  const bodies = new BodyCache<number>()
  /** A body as stored: as written (format 3 on) or cleaned (format 2). */
  const storedBody = (doc: number): string => {
    const body = inflateBody(docs[doc]!.body)
    if (body === undefined)
      throw corrupt(`the text of document ${JSON.stringify(docs[doc]!.docId)} does not decompress`)
    return body
  }
  return (doc: number) => bodies.entry(doc, () => storedBody(doc), cleaner)
}

/** Every position's document in id order (for ties and per-document tops), and query filters over their columns. */
const documentIndex = (docs: ReadonlyArray<KeptDoc>, first: Int32Array, positions: number) => {
  /** The documents with chunks, in position order: their numbers in `docs`. */
  const withChunks = docs.flatMap((doc, i) => (doc.chunks > 0 ? [i] : []))
  let numbered: { readonly docOf: Int32Array; readonly count: number; readonly order: Int32Array } | undefined
  const documents = () => {
    if (numbered !== undefined) return numbered
    const docOf = new Int32Array(positions).fill(-1)
    withChunks.forEach((i, n) => {
      docOf.fill(n, first[i]!, first[i]! + docs[i]!.chunks)
    })
    const ids = withChunks.map((i) => docs[i]!.docId)
    const order = new Int32Array(ids.length)
    ids
      .map((_, n) => n)
      .sort((a, b) => compareCodePoints(ids[a]!, ids[b]!))
      .forEach((n, rank) => {
        order[n] = rank
      })
    return (numbered = { docOf, count: ids.length, order })
  }

  let table: TableFilter | undefined
  const filters = new Map<string, PositionFilter>()
  const column = (name: TableColumn): ReadonlyArray<string | null> =>
    withChunks.map((i) => {
      const doc = docs[i]!
      return name === "doc_id"
        ? doc.docId
        : name === "title"
          ? doc.title
          : name === "source"
            ? doc.source
            : doc.categories
    })
  const filter = (rule: Rule): PositionFilter => {
    table ??= new TableFilter({
      first: Int32Array.from(withChunks, (i) => first[i]!),
      chunks: Int32Array.from(withChunks, (i) => docs[i]!.chunks),
      positions
    })
    const built = table
    return cachedPositions(filters, rule, (r) => built.positions(r, column))
  }

  return { documents, filter }
}

/**
 * The loaded vectors as the engine scans them: held as float32 in the scan kernel's memory when every component is
 * exactly a float32 (a model that gives float32 output; half the bytes, and the SIMD scan), else as float64.
 */
const vectorBlockOf = (
  vectors: Float64Array,
  magnitudes: Float64Array,
  d: number,
  positions: number,
  corrupt: (detail: string) => IndexCorrupt
): FloatBlock | DecodedBlock => {
  if (positions > 0 && encodingOf(vectors) === "f32") {
    const floats = holdFloats(vectors.length, d, positions)
    if (floats !== undefined) {
      floats.set(vectors)
      return { offset: 0, count: positions, floats, damaged: () => corrupt("a vector is not finite") }
    }
  }
  // Copies, trimmed: a grown array holds up to twice what it needs.
  return { offset: 0, count: positions, vectors: vectors.slice(), magnitudes: magnitudes.slice(0, positions) }
}

/** The snapshot over a filled segment and the documents kept, with each position's document and span. */
const snapshotOf = (
  location: string,
  manifest: IndexManifest,
  segment: SegmentBuilder,
  docs: ReadonlyArray<KeptDoc>,
  layout: {
    readonly docAt: Int32Array
    readonly starts: Uint32Array
    readonly ends: Uint32Array
    readonly first: Int32Array
  }
): Snapshot => {
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  const d = manifest.dimensions
  const { docAt, ends, first, starts } = layout
  const positions = segment.count
  // Copies, trimmed: a grown array holds up to twice what it needs.
  const lengths = segment.lengths.slice(0, positions)
  const postings = loadedPostings(segment, positions)
  const block = vectorBlockOf(segment.vectors.subarray(0, positions * d), segment.magnitudes, d, positions, corrupt)
  const blocks = [block]
  const vectors = block.floats ?? block.vectors

  const cleaner = keepsOriginals(manifest.formatVersion) ? manifest.cleaner : undefined
  const bodyEntry = loadedBodies(docs, cleaner, corrupt)
  const bodyOf = (doc: number) => bodyEntry(doc).cleaned
  const checkPosition = (position: number) => {
    if (!(position >= 0 && position < positions)) throw corrupt(`no chunk at position ${position}`)
  }
  const keyOf = (position: number): RankKey => {
    checkPosition(position)
    const doc = docAt[position]!
    const start = starts[position]!
    const end = ends[position]!
    // Doc id, start and end already tell chunks apart; the text is only read if a comparison ever gets to it.
    let text: string | undefined
    return {
      score: 0,
      docId: docs[doc]!.docId,
      start,
      end,
      get text() {
        return (text ??= spanText(bodyOf(doc), start, end))
      }
    }
  }
  const chunkAt = (position: number) => {
    checkPosition(position)
    const doc = docAt[position]!
    const start = starts[position]!
    const end = ends[position]!
    return {
      docId: docs[doc]!.docId,
      title: docs[doc]!.title,
      start,
      end,
      text: spanText(bodyOf(doc), start, end),
      vector: Array.from(vectors.subarray(position * d, (position + 1) * d))
    }
  }

  const byId = new Map<string, number>(docs.map((doc, i) => [doc.docId, i]))
  const document = (docId: string): StoredDocument | undefined => {
    const i = byId.get(docId)
    if (i === undefined) return undefined
    const doc = docs[i]!
    const body = doc.chunks === 0 ? "" : bodyOf(i)
    return {
      doc: storedDocOf(location, doc),
      chunks: Array.from({ length: doc.chunks }, (_, c) => {
        const start = starts[first[i]! + c]!
        const end = ends[first[i]! + c]!
        return { start, end, text: spanText(body, start, end) }
      })
    }
  }

  const documentText = (docId: string): DocumentText | undefined => {
    const i = byId.get(docId)
    if (i === undefined || docs[i]!.chunks === 0) return undefined
    const entry = bodyEntry(i)
    entry.shown ??= {
      source: docs[i]!.source,
      cleaned: entry.cleaned,
      original: cleaner === undefined ? undefined : entry.stored
    }
    return entry.shown
  }

  const { documents, filter } = documentIndex(docs, first, positions)
  return {
    scratch: new ScoringScratch(),
    manifest,
    dimensions: d,
    positions,
    liveChunks: positions,
    averageLength: positions === 0 ? 0 : segment.totalLength / positions,
    lengths,
    deleted: undefined,
    postings,
    vectorBlocks: () => blocks,
    keyOf,
    chunkAt,
    document,
    documentText,
    documents,
    // The documents are in memory, so their order is always at hand.
    tieOrder: () => documentTies(documents()),
    filter
  }
}

const grow = <A extends Int32Array | Uint32Array>(array: A, size: number): A => {
  const next = new (array.constructor as new (n: number) => A)(size)
  next.set(array)
  return next
}
