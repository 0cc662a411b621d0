/** The reference ranking: the simple in-memory BM25 and a full cosine sort over every chunk row of an index file. */
import { DatabaseSync } from "node:sqlite"
import { zstdDecompressSync } from "node:zlib"
import { AnalyzerConfig, Bm25Params, CleanerConfig, type RankKey, rankingOrder } from "@funcpipe/domain"
import {
  analyze,
  bm25Scores,
  cleanText,
  cosineSimilarity,
  embedText,
  lexicalIndex,
  termCounts
} from "@funcpipe/pipeline"
import { Result } from "effect"
import type { ChunkKey } from "./Queries.ts"

/** A stored chunk with its document's title. */
export interface ChunkRow extends ChunkKey {
  readonly title: string
}

/** The span `[start, end)` of a cleaned body, offsets in code points; U+0000 past its end (a padded tail). */
const spanOf = (points: ReadonlyArray<string>, start: number, end: number): string =>
  points.slice(start, end).join("") + "\u0000".repeat(Math.max(0, end - Math.max(start, points.length)))

/**
 * Every chunk row of a FuncPipe SQLite index with its document's title, in chunk id order, read with `node:sqlite`
 * straight from the tables (not through the engine's segments or postings). Reads the layouts: chunk texts stored per
 * chunk (`chunks.text`); chunk rows over cleaned bodies in packs; or (layout 4) spans in each document's row.
 */
export const readChunkRows = (file: string): Array<ChunkRow> => {
  const db = new DatabaseSync(file, { readOnly: true })
  const row = (docId: unknown, start: unknown, end: unknown, text: unknown, title: unknown): ChunkRow => {
    if (
      typeof docId !== "string" ||
      typeof start !== "number" ||
      typeof end !== "number" ||
      typeof text !== "string" ||
      typeof title !== "string"
    ) {
      throw new Error(`unreadable chunk row in ${file}: ${JSON.stringify({ docId, start, end, title })}`)
    }
    return { docId, start, end, text, title }
  }
  try {
    const columns = db
      .prepare("PRAGMA table_info(chunks)")
      .all()
      .map((c) => (c as { name: string }).name)
    if (columns.includes("text")) {
      return db
        .prepare(
          `SELECT c.doc_id AS docId, c.start AS start, c."end" AS "end", c.text AS text, d.title AS title
         FROM chunks c JOIN documents d ON d.doc_id = c.doc_id ORDER BY c.id`
        )
        .all()
        .map((r) => row(r["docId"], r["start"], r["end"], r["text"], r["title"]))
    }
    // From format 3 on a pack holds each body as written, and the chunks are spans of it cleaned by the index's rules.
    const manifest = JSON.parse(
      String((db.prepare("SELECT value FROM meta WHERE key = 'manifest'").get() as { value: unknown }).value)
    ) as { formatVersion: number; cleaner: CleanerConfig }
    const cleaned = (body: string) => (manifest.formatVersion >= 3 ? cleanText(body, manifest.cleaner) : body)
    const placeOf = db.prepare("SELECT pack, body_start, body_end FROM documents WHERE id = ?")
    const packOf = db.prepare("SELECT data FROM packs WHERE id = ?")
    const decoder = new TextDecoder("utf-8", { fatal: true })
    /** The code points of a document's body, from its pack. */
    const bodyPoints = (doc: number): ReadonlyArray<string> => {
      const place = placeOf.get(doc) as { pack: number; body_start: number; body_end: number }
      const blob = (packOf.get(place.pack) as { data?: unknown } | undefined)?.data
      if (!(blob instanceof Uint8Array)) throw new Error(`no body for document ${String(doc)} in ${file}`)
      return Array.from(cleaned(decoder.decode(zstdDecompressSync(blob).subarray(place.body_start, place.body_end))))
    }
    if (columns.length === 0) {
      // Layout 4: no chunk rows; a document's row holds its chunks' [start, end] pairs, its chunks numbered from `first`.
      const rows: Array<ChunkRow> = []
      const documents = db.prepare(
        "SELECT id, doc_id, title, chunks, spans FROM documents WHERE chunks > 0 ORDER BY first"
      )
      for (const r of documents.iterate()) {
        const points = bodyPoints(r["id"] as number)
        const blob = r["spans"] as Uint8Array
        const spans = new Uint32Array(blob.slice().buffer)
        for (let c = 0; c < (r["chunks"] as number); c++) {
          const start = spans[2 * c]!
          const end = spans[2 * c + 1]!
          rows.push(row(r["doc_id"], start, end, spanOf(points, start, end), r["title"]))
        }
      }
      return rows
    }
    let doc: unknown
    let points: ReadonlyArray<string> = []
    return db
      .prepare(
        `SELECT c.doc AS doc, d.doc_id AS docId, c.start AS start, c."end" AS "end", d.title AS title
       FROM chunks c JOIN documents d ON d.id = c.doc ORDER BY c.id`
      )
      .all()
      .map((r) => {
        if (r["doc"] !== doc) {
          doc = r["doc"]
          points = bodyPoints(doc as number)
        }
        const { end, start } = r as { start: number; end: number }
        return row(r["docId"], start, end, spanOf(points, start, end), r["title"])
      })
  } finally {
    db.close()
  }
}

/** The reference answers of one query: the top `k` chunks of a mode in the ranking order, with their scores. */
export interface Reference {
  readonly lexical: (query: string, k: number) => Array<RankKey>
  readonly vector: (query: string, k: number) => Array<RankKey>
}

const keyOf = (row: ChunkRow, score: number): RankKey => ({
  score,
  docId: row.docId,
  start: row.start,
  end: row.end,
  text: row.text
})

/**
 * Builds the reference over `rows` with the default cleaner and analyzer: each chunk's terms are those of
 * `title + "\n" + text` (as the indexer analyzes them), BM25 comes from `lexicalIndex` and `bm25Scores`, vectors from
 * `embedText` and `cosineSimilarity`. A query is cleaned and analyzed like the engine's; every chunk with a positive
 * BM25 score (lexical) or a defined cosine (vector) is sorted by `rankingOrder`, and the first `k` are the answer.
 */
export const buildReference = (rows: ReadonlyArray<ChunkRow>): Reference => {
  const analyzer = AnalyzerConfig.default
  const cleaner = CleanerConfig.default
  // `lexicalIndex` walks its argument once with forEach: handing it each chunk's term counts as it goes keeps the
  // reference from holding a Map per chunk (over a gigabyte at 429k chunks). It only reads `length` and `forEach`.
  const chunkTerms = {
    length: rows.length,
    forEach: (visit: (chunk: { length: number; terms: Map<string, number> }, position: number) => void) =>
      rows.forEach((row, position) => {
        const terms = analyze(`${row.title}\n${row.text}`, analyzer)
        visit({ length: terms.length, terms: termCounts(terms) }, position)
      })
  } as unknown as ReadonlyArray<{ readonly length: number; readonly terms: ReadonlyMap<string, number> }>
  const index = lexicalIndex(chunkTerms)
  const vectors = rows.map((row) => embedText(row.text).vector)

  const sorted = (keys: Array<RankKey>, k: number) => keys.sort(rankingOrder).slice(0, k)
  return {
    lexical: (query, k) => {
      const scores = bm25Scores(analyze(cleanText(query, cleaner), analyzer), index, Bm25Params.default)
      const keys: Array<RankKey> = []
      rows.forEach((row, i) => {
        if (scores[i]! > 0) keys.push(keyOf(row, scores[i]!))
      })
      return sorted(keys, k)
    },
    vector: (query, k) => {
      const q = embedText(cleanText(query, cleaner)).vector
      const keys: Array<RankKey> = []
      rows.forEach((row, i) => {
        const cosine = cosineSimilarity(q, vectors[i]!)
        if (Result.isSuccess(cosine)) keys.push(keyOf(row, cosine.success))
      })
      return sorted(keys, k)
    }
  }
}

/** Where two answers first differ, in words, or undefined when they are identical (every field compared with ===). */
export const firstDifference = (
  expected: ReadonlyArray<RankKey>,
  actual: ReadonlyArray<RankKey>
): string | undefined => {
  const show = (key: RankKey | undefined) =>
    key === undefined
      ? "nothing"
      : `${key.docId} [${key.start}, ${key.end}) score ${key.score} text ${JSON.stringify(key.text.slice(0, 60))}…`
  for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
    const a = expected[i]
    const b = actual[i]
    if (
      a === undefined ||
      b === undefined ||
      a.docId !== b.docId ||
      a.start !== b.start ||
      a.end !== b.end ||
      a.text !== b.text ||
      a.score !== b.score
    ) {
      return `rank ${i + 1}: reference ${show(a)}, FuncPipe ${show(b)}`
    }
  }
  return undefined
}
