/**
 * Copying an index from one store to another (a SQLite file to PostgreSQL or back): documents, chunk spans, texts,
 * terms and vectors move as they are, nothing is chunked or embedded again, so the copy answers every query exactly as
 * the original does.
 */

import { ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { Clock, Effect, Option, Schema } from "effect"
import { PackWriter } from "../index/BodyPack.ts"
import { prepareBatch, TermNumbering } from "../index/prepare/Prepare.ts"
import { IndexMissing } from "../search/QueryErrors.ts"
import { type IndexStore, readSnapshot, type Snapshot } from "../store/IndexStore.ts"
import { IndexCorrupt } from "../store/StoreErrors.ts"

/** The destination holds an index already; a copy replaces one only when asked to. */
export class CopyTargetNotEmpty extends Schema.TaggedError<CopyTargetNotEmpty>()("CopyTargetNotEmpty", {
  location: Schema.String,
  documents: Schema.Int
}) {
  override get message(): string {
    return `${this.location} already holds an index (${this.documents} documents); pass --replace to overwrite it`
  }
}

/** How a copy runs. */
export interface CopyOptions {
  /** Replace an index the destination holds (otherwise `CopyTargetNotEmpty`). */
  readonly replace?: boolean
  /** Called after each document is written, with how many of how many. */
  readonly progress?: (done: number, total: number) => Effect.Effect<void>
}

/** What a copy did. */
export interface CopyReport {
  readonly documents: number
  readonly chunks: number
  readonly elapsedMillis: number
}

/** How the stored texts of a document are analyzed again: as they are, each chunk one window (see `termsOf`). */
const asStored = {
  cleaner: { rules: [] },
  chunker: { chunkSize: ChunkSize.make(Number.MAX_SAFE_INTEGER), overlap: Overlap.make(0), tailPolicy: "emit_short" }
} as const

/**
 * A document's terms, as an index run made them: each chunk's searchable text (the title, a line break, the chunk)
 * through the index's analyzer. Each stored chunk text is prepared as a body of its own, neither cleaned nor cut again.
 */
const termsOf = (snapshot: Snapshot, title: string, texts: ReadonlyArray<string>, packs: PackWriter) =>
  prepareBatch(
    texts.map((body) => ({ title, body })),
    // Only the terms are kept: the packs are left uncompressed.
    { ...asStored, analyzer: snapshot.manifest.analyzer, rawPacks: true },
    new TermNumbering(),
    packs
  )

/**
 * The cleaned body as far as the chunks cover it, from their texts (offsets in code points). A padded tail's U+0000s
 * become part of it, which gives the same chunk texts; text a `drop` tail left out of every chunk is not kept.
 */
const bodyOf = (chunks: ReadonlyArray<{ readonly start: number; readonly text: string }>): string => {
  const points: Array<string> = []
  for (const { start, text } of chunks) {
    let at = start
    for (const point of text) {
      while (points.length < at) points.push(" ")
      if (at === points.length) points.push(point)
      at++
    }
  }
  return points.join("")
}

/**
 * Copies the index of `from` into `to` in one write transaction of `to`, from one snapshot of `from`: readers of `to`
 * see its old state or the whole copy. The manifest (settings, model, dates) and the indexed paths come along, so
 * later index runs against the copy carry on where the original left off. Fails with `IndexMissing` when `from` holds
 * no index, and with `CopyTargetNotEmpty` when `to` holds one and `replace` is not set.
 */
export const copyIndex = Effect.fn("copyIndex")(function* (
  from: IndexStore["Service"],
  to: IndexStore["Service"],
  options: CopyOptions = {}
) {
  const startedAt = yield* Clock.currentTimeMillis
  const progress = options.progress ?? (() => Effect.void)
  // Packs each copied document's body, one after another.
  const packs = new PackWriter()
  return yield* Effect.scoped(
    Effect.gen(function* () {
      const opened = yield* from.snapshot
      if (Option.isNone(opened)) return yield* new IndexMissing({ location: from.location })
      const snapshot = opened.value
      const roots = yield* from.roots
      /** Each document's positions, in position order (a document's chunks are in text order). */
      const positionsOf = yield* readSnapshot(from.location, () => {
        const map = new Map<string, Array<number>>()
        for (let p = 0; p < snapshot.positions; p++) {
          if (snapshot.deleted?.[p] === 1) continue
          const { docId } = snapshot.keyOf(p)
          let list = map.get(docId)
          if (list === undefined) map.set(docId, (list = []))
          list.push(p)
        }
        return map
      })
      const total = positionsOf.size
      let chunks = 0
      yield* to.transaction((writer) =>
        Effect.gen(function* () {
          const existing = yield* writer.manifest
          if (Option.isSome(existing)) {
            if (options.replace !== true) {
              return yield* new CopyTargetNotEmpty({ location: to.location, documents: existing.value.documents })
            }
            yield* writer.clear
          }
          let done = 0
          for (const [docId, positions] of positionsOf) {
            const { doc, original, rows } = yield* readSnapshot(from.location, () => {
              const stored = snapshot.document(docId)
              if (stored === undefined || stored.chunks.length !== positions.length) {
                const detail = `the chunks of ${JSON.stringify(docId)} disagree`
                throw new IndexCorrupt({ location: from.location, detail })
              }
              // An index that keeps the text as written is copied with it; one of format 2 with its cleaned text.
              const original = snapshot.documentText(docId)?.original
              return { doc: stored.doc, rows: positions.map((p) => snapshot.chunkAt(p)), original }
            })
            const d = snapshot.dimensions
            const vectors = new Float64Array(rows.length * d)
            rows.forEach((row, c) => {
              vectors.set(row.vector, c * d)
            })
            const prepared = termsOf(
              snapshot,
              doc.title,
              rows.map((row) => row.text),
              packs
            )
            let at = 0
            const records = rows.map((row, c) => {
              const count = prepared.termCounts[c]!
              at += count
              return { start: row.start, end: row.end, from: at - count, to: at }
            })
            yield* writer.putDoc(
              {
                docId,
                source: doc.source,
                title: doc.title,
                categories: doc.categories,
                hash: doc.hash,
                body: packs.pack([original ?? bodyOf(rows)])[0]!
              },
              records,
              { vocabulary: prepared.vocabulary, ids: prepared.termIds },
              vectors
            )
            chunks += rows.length
            yield* progress(++done, total)
          }
          yield* writer.putRoots(roots)
          yield* writer.putManifest(snapshot.manifest)
        })
      )
      const elapsedMillis = (yield* Clock.currentTimeMillis) - startedAt
      return { documents: total, chunks, elapsedMillis } satisfies CopyReport
    })
  )
})
