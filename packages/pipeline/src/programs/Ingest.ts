/** The indexing workflow: read → clean → chunk → embed, with a summary of what was kept and skipped. */

import type { Chunk, ChunkDraft } from "@funcpipe/domain/Chunk"
import { ChunkerConfig, CleanerConfig } from "@funcpipe/domain/Config"
import { keepAll, mapPaths, type Rule } from "@funcpipe/domain/Rule"
import { Clock, Effect, Path, Stream } from "effect"
import { chunkDoc, sectionStarts } from "../analysis/Chunker.ts"
import { cleanDoc } from "../analysis/Clean.ts"
import { markupOf } from "../analysis/Display.ts"
import { embedChunk } from "../analysis/Embed.ts"
import { Embedder } from "../models/Embedder.ts"
import { claimer, emptyAfterCleaning, type Skip } from "../read/Claim.ts"
import { DocumentSource } from "../read/DocumentSource.ts"
import { keepTest } from "../read/Keep.ts"

export type { Skip } from "../read/Claim.ts"

/**
 * What an ingest run did: records read, documents kept (with at least one chunk), documents the keep rule left out,
 * skips with reasons, chunks.
 */
export interface RunSummary {
  readonly read: number
  readonly kept: number
  /** Documents the keep rule left out; `undefined` when the run had no keep rule. */
  readonly dropped: number | undefined
  readonly skipped: ReadonlyArray<Skip>
  readonly chunks: number
  readonly elapsedMillis: number
}

/** How an ingest run cleans and chunks. */
export interface IngestOptions {
  /** Which documents to take (default: all); its `source under` paths are resolved against the working directory. */
  readonly keep?: Rule
  readonly cleaner?: CleanerConfig
  readonly chunker?: ChunkerConfig
  /** Texts per `embedMany` call. */
  readonly batchSize?: number
}

/**
 * Reads the paths, cleans and chunks each document, and embeds the chunks in batches. Chunks come out in pipeline
 * order (documents in the order read, windows in body order). A document the keep rule leaves out is counted, not
 * chunked. A bad record or a document whose cleaned body is empty is skipped and listed in the summary; a missing or
 * unreadable path or a failing model fails the run.
 */
export const ingest = Effect.fn("ingest")(function* (paths: ReadonlyArray<string>, options: IngestOptions = {}) {
  const source = yield* DocumentSource
  const embedder = yield* Embedder
  const path = yield* Path.Path
  const keep = options.keep ?? keepAll
  const keeps = keepTest(
    mapPaths(keep, (p) => path.resolve(p)),
    (file) => path.resolve(file)
  )
  const cleaner = options.cleaner ?? CleanerConfig.default
  const chunker = options.chunker ?? ChunkerConfig.default
  const batchSize = options.batchSize ?? 256
  const startedAt = yield* Clock.currentTimeMillis

  let read = 0
  let kept = 0
  let dropped = 0
  const skipped: Array<Skip> = []
  const drafts: Array<ChunkDraft> = []
  // Every record counts, repeated doc ids included: this is the reference's output, record for record.
  const claim = claimer(keeps, "keep")
  yield* source.read(paths).pipe(
    Stream.runForEach((record) =>
      Effect.sync(() => {
        read++
        const claimed = claim.take(record)
        if (claimed._tag === "Skipped") return void skipped.push(claimed.skip)
        // Nothing is left unread here: no `known` files are given to the source.
        if (claimed._tag === "Dropped" || claimed._tag === "Unread") return void dropped++
        const raw = claimed.sourced.doc
        const markdown = chunker.strategy === "markdown" && markupOf(claimed.sourced.source) === "markdown"
        const sections = markdown ? sectionStarts(raw.body, cleaner) : undefined
        const docChunks = chunkDoc(cleanDoc(raw, cleaner), chunker, sections)
        if (docChunks.length === 0) return void skipped.push(emptyAfterCleaning(claimed.sourced))
        kept++
        drafts.push(...docChunks)
      })
    )
  )

  const chunks: Array<Chunk> = []
  for (let from = 0; from < drafts.length; from += batchSize) {
    const batch = drafts.slice(from, from + batchSize)
    const embeddings = yield* embedder.embedMany(batch.map((d) => d.text))
    batch.forEach((draft, i) => {
      chunks.push(embedChunk(draft, embeddings[i]!))
    })
  }

  const summary: RunSummary = {
    read,
    kept,
    dropped: options.keep === undefined ? undefined : dropped,
    skipped,
    chunks: chunks.length,
    elapsedMillis: (yield* Clock.currentTimeMillis) - startedAt
  }
  return { chunks, summary } as const
})
