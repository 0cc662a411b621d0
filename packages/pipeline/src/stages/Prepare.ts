/** The per-document stage of indexing: clean → chunk → analyze, and the cleaned body compressed for storage. */
import type { AnalyzerConfig, ChunkerConfig, CleanerConfig } from "@funcpipe/domain/Config"
import { deflateRawSync } from "node:zlib"
import { analyzeWords, termOf } from "./Analyzer.ts"

/** A word that is a stop word: it makes no term. */
const STOP = -1
import { chunkSpans } from "./Chunker.ts"
import { cleanText } from "./Clean.ts"

/** How documents are prepared: the index's clean rules, chunker and analyzer (plain values, so workers can take them). */
export interface PrepareSettings {
  readonly cleaner: Pick<CleanerConfig, "rules">
  readonly chunker: Pick<ChunkerConfig, "chunkSize" | "overlap" | "tailPolicy">
  readonly analyzer: Pick<AnalyzerConfig, "stopWords" | "stemmer">
}

/** What a document brings to the stage: its title (searchable in every chunk) and its raw body. */
export interface DocText {
  readonly title: string
  readonly body: string
}

/** One prepared document: its chunks' spans (code points) and texts, and its cleaned body, deflated. */
export interface PreparedDoc {
  readonly starts: ReadonlyArray<number>
  readonly ends: ReadonlyArray<number>
  readonly texts: ReadonlyArray<string>
  readonly deflatedBody: Uint8Array
}

/**
 * A prepared batch. Terms are numbered within the batch: `vocabulary[id]` is a term, and every chunk's terms (title
 * and text, in order) are `termIds`, chunk after chunk, `termCounts[c]` of them for the batch's `c`-th chunk.
 */
export interface PreparedBatch {
  readonly docs: ReadonlyArray<PreparedDoc>
  readonly vocabulary: ReadonlyArray<string>
  readonly termIds: Uint32Array
  readonly termCounts: Uint32Array
}

/**
 * Prepares a batch of documents for the index: each body is cleaned with the index's rules and cut into chunks; each
 * chunk's searchable text (the title, a line break, the chunk) is analyzed into terms; the cleaned body is deflated,
 * since chunk texts are its spans and the index stores it once. Pure and deterministic.
 */
export const prepareBatch = (docs: ReadonlyArray<DocText>, settings: PrepareSettings): PreparedBatch => {
  const analyzer = settings.analyzer as AnalyzerConfig
  const vocabulary: Array<string> = []
  const numbers = new Map<string, number>()
  const wordIds = new Map<string, number>()
  let ids = new Uint32Array(1 << 14)
  let size = 0
  const counts: Array<number> = []
  const prepared = docs.map((doc): PreparedDoc => {
    const body = cleanText(doc.body, settings.cleaner as CleanerConfig)
    const spans = chunkSpans(body, settings.chunker as ChunkerConfig)
    for (const span of spans) {
      const before = size
      analyzeWords(`${doc.title}\n${span.text}`, (word) => {
        // Words repeat, so each distinct word of the batch goes through the term rules (stop words, stemming) once.
        let id = wordIds.get(word)
        if (id === undefined) {
          const term = termOf(word, analyzer)
          id = STOP
          if (term !== undefined) {
            id = numbers.get(term)
            if (id === undefined) {
              id = vocabulary.length
              numbers.set(term, id)
              vocabulary.push(term)
            }
          }
          wordIds.set(word, id)
        }
        if (id === STOP) return
        if (size === ids.length) {
          const grown = new Uint32Array(ids.length * 2)
          grown.set(ids)
          ids = grown
        }
        ids[size++] = id
      })
      counts.push(size - before)
    }
    return {
      starts: spans.map((s) => s.start),
      ends: spans.map((s) => s.end),
      texts: spans.map((s) => s.text),
      // A copy with a buffer of its own, so a worker can transfer it (a Buffer may share a pooled one).
      deflatedBody: new Uint8Array(deflateRawSync(body, { level: 1 }))
    }
  })
  return { docs: prepared, vocabulary, termIds: ids.slice(0, size), termCounts: Uint32Array.from(counts) }
}
