/** Answering a query from the stored index, in any retrieval mode, with optional score breakdowns. */
import { Effect, Option, Result, Schema } from "effect"
import { Chunk } from "@funcpipe/domain/Chunk"
import { Bm25Params, type RetrievalMode } from "@funcpipe/domain/Config"
import { oneLine } from "@funcpipe/domain/Decode"
import type { ModelLabel } from "@funcpipe/domain/Embedding"
import type { IndexManifest } from "@funcpipe/domain/Manifest"
import { Rank, ScoredChunk } from "@funcpipe/domain/Ranking"
import { Embedder } from "../services/Embedder.ts"
import { IndexCorrupt, IndexStore, readSnapshot, type Snapshot } from "../services/IndexStore.ts"
import { analyze } from "../stages/Analyzer.ts"
import { DimensionMismatch, squaredNorm, ZeroVector } from "../stages/Cosine.ts"
import { LOCAL_SHA256 } from "../stages/Embed.ts"
import { type Explanation, scoreQuery, topChunksOf } from "../stages/Engine.ts"
import { prepareQuery } from "../stages/Query.ts"
import { ModelMismatch } from "../stages/Retrieve.ts"

/** Nothing has been indexed at the location yet. */
export class IndexMissing extends Schema.TaggedError<IndexMissing>()("IndexMissing", {
  location: Schema.String
}) {
  override get message(): string {
    return `there is no index at ${this.location} yet; build one with: funcpipe index <paths...>`
  }
}

/** The stored manifest, or `IndexMissing`. */
export const requireManifest = Effect.fn("requireManifest")(function*() {
  const store = yield* IndexStore
  const manifest = yield* store.manifest
  if (Option.isNone(manifest)) return yield* new IndexMissing({ location: store.location })
  return manifest.value
})

/**
 * The best mode for an index's model: `local-sha256` vectors only match identical text, so its indexes answer
 * lexically (BM25); a real embedding model's indexes fuse both rankings.
 */
export const defaultMode = (model: ModelLabel): RetrievalMode => (model === LOCAL_SHA256 ? "lexical" : "hybrid")

/** How a query is answered. */
export interface QueryOptions {
  /** Defaults to `defaultMode` of the index's model. */
  readonly mode?: RetrievalMode
  readonly bm25?: Bm25Params
  /** Also return each result's score breakdown. */
  readonly explain?: boolean
}

export type { Explanation }

/** The snapshot of the index, with its manifest checked to match the `Embedder` in use; `IndexMissing` if empty. */
export const openSnapshot = Effect.fn("openSnapshot")(function*() {
  const store = yield* IndexStore
  const embedder = yield* Embedder
  const snapshot = yield* store.snapshot
  if (Option.isNone(snapshot)) return yield* new IndexMissing({ location: store.location })
  const { manifest } = snapshot.value
  if (manifest.model !== embedder.model || manifest.dimensions !== embedder.dimensions) {
    return yield* new ModelMismatch({ index: manifest.model, query: embedder.model })
  }
  return snapshot.value
})

/** Embeds cleaned query texts with the index's model, checking each vector can be compared with the index's. */
export const embedQueries = Effect.fn("embedQueries")(function*(texts: ReadonlyArray<string>, manifest: IndexManifest) {
  const embedder = yield* Embedder
  if (texts.length === 0) return []
  const embeddings = yield* embedder.embedMany(texts)
  for (const embedding of embeddings) {
    if (embedding.model !== manifest.model) return yield* new ModelMismatch({ index: manifest.model, query: embedding.model })
    if (embedding.vector.length !== manifest.dimensions) {
      return yield* new DimensionMismatch({ expected: manifest.dimensions, actual: embedding.vector.length })
    }
    if (squaredNorm(embedding.vector) === 0) return yield* new ZeroVector({ length: embedding.vector.length })
  }
  return embeddings
})

/** Decodes the stored chunk at `position` into a domain `Chunk`; a value breaking the domain's rules is `IndexCorrupt`. */
export const chunkAt = (snapshot: Snapshot, location: string, position: number) =>
  Effect.flatMap(readSnapshot(location, () => snapshot.chunkAt(position)), (stored) => {
    const decoded = decodeChunk({
      docId: stored.docId,
      start: stored.start,
      end: stored.end,
      text: stored.text,
      embedding: { vector: stored.vector, model: snapshot.manifest.model }
    })
    return Result.isSuccess(decoded)
      ? Effect.succeed(decoded.success)
      : Effect.fail(
        new IndexCorrupt({ location, detail: `a chunk of ${JSON.stringify(stored.docId)}: ${oneLine(decoded.failure.message)}` })
      )
  })

const decodeChunk = Schema.decodeUnknownResult(Chunk)

/**
 * Answers `text` from the stored index, reading only what the mode needs from one snapshot: the postings of the
 * query's terms (lexical), the vector blobs (vector), or both (hybrid), and the stored chunks of the results. The
 * embedder must be the index's model (checked before anything is embedded or scored); the text is cleaned with the
 * index's clean rules and analyzed with its analyzer. Results follow the ranking order in every mode.
 */
export const queryIndex = Effect.fn("queryIndex")(function*(text: string, topK: number, options: QueryOptions = {}) {
  const store = yield* IndexStore
  return yield* Effect.scoped(
    Effect.flatMap(openSnapshot(), (snapshot) => querySnapshot(snapshot, store.location, text, topK, options))
  )
})

/**
 * `queryIndex` over a snapshot the caller holds open (a long-running server answers many queries from one), so
 * every result comes from that one state of the index. `location` names the index in errors. The snapshot's model
 * must be the `Embedder`'s (as `openSnapshot` checks).
 */
export const querySnapshot = Effect.fn("querySnapshot")(function*(
  snapshot: Snapshot,
  location: string,
  text: string,
  topK: number,
  options: QueryOptions = {}
) {
  const { manifest } = snapshot
  const prepared = yield* Effect.fromResult(prepareQuery(text, topK, manifest.cleaner))
  const mode = options.mode ?? defaultMode(manifest.model)
  const terms = analyze(prepared.text, manifest.analyzer)
  const embedding = mode === "lexical" ? undefined : (yield* embedQueries([prepared.text], manifest))[0]
  const query = { terms, vector: embedding?.vector }
  const params = options.bm25 ?? Bm25Params.default
  const { scored, tops } = yield* readSnapshot(location, () => {
    const scored = scoreQuery(snapshot, query, mode, params)
    return { scored, tops: topChunksOf(snapshot, scored, prepared.topK, query) }
  })
  const results = yield* Effect.forEach(tops, (top, i) =>
    Effect.map(chunkAt(snapshot, location, top.position), (chunk) =>
      new ScoredChunk({ chunk, score: top.score, rank: Rank.make(i + 1), kind: scored.kind })))
  const explanations = options.explain === true
    ? yield* readSnapshot(location, () => tops.map((top) => scored.explain(top.position)))
    : undefined
  return { manifest, query: { text: prepared.text, topK: prepared.topK, mode, terms }, results, explanations } as const
})
