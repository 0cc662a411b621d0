/** Answering a query from the stored index, in any retrieval mode, with optional score breakdowns. */

import type { ShownChunk } from "@funcpipe/domain/Answer"
import { Chunk } from "@funcpipe/domain/Chunk"
import { Bm25Params, type FusionConfig, type ResultGroup, type RetrievalMode } from "@funcpipe/domain/Config"
import { oneLine } from "@funcpipe/domain/Decode"
import type { IndexManifest } from "@funcpipe/domain/Manifest"
import { Rank, RankedChunk } from "@funcpipe/domain/Ranking"
import { isKeepAll, mapPaths, type Rule, reads } from "@funcpipe/domain/Rule"
import { Effect, Option, Path, Result, Schema } from "effect"
import { analyze, analyzeWords } from "../analysis/Analyzer.ts"
import { shownChunks } from "../analysis/Display.ts"
import { Embedder } from "../models/Embedder.ts"
import { countChunkCache, recordStages, stageTimes } from "../platform/Telemetry.ts"
import { squaredNorm } from "../search/Cosine.ts"
import {
  defaultMode,
  type Explanation,
  FUSION_DEPTH,
  scoreQuery,
  topChunksOf,
  topDocumentsWithMore
} from "../search/Engine.ts"
import { type ExpansionConfig, expandQuery } from "../search/Expansion.ts"
import { DEFAULT_EF_SEARCH } from "../search/Hnsw.ts"
import { prepareQuery } from "../search/Query.ts"
import {
  DimensionMismatch,
  IndexMissing,
  ModelMismatch,
  QueryFilterInvalid,
  ZeroVector
} from "../search/QueryErrors.ts"
import { IndexStore, readSnapshot, type Snapshot } from "../store/IndexStore.ts"
import { IndexCorrupt } from "../store/StoreErrors.ts"

/**
 * Checks a query filter and makes its `source under` paths absolute (against the working directory, as the index's
 * sources are); `undefined` for no filter or one that keeps everything. Untraced: a span (and the call site it
 * captures) for a check that takes microseconds cost a server more than the check, once per request.
 */
export const queryFilter = Effect.fnUntraced(function* (where: Rule | undefined) {
  if (where === undefined || isKeepAll(where)) return undefined
  if (reads(where, "body")) {
    return yield* new QueryFilterInvalid({
      reason:
        "it reads body, but a query filter chooses documents by their fields, not their text; filter by doc_id, " +
        "title, categories or source (body works in keep rules, which see documents as they are read)"
    })
  }
  const path = yield* Path.Path
  return mapPaths(where, (p) => path.resolve(p))
})

/** The stored manifest, or `IndexMissing`. */
export const requireManifest = Effect.fn("requireManifest")(function* () {
  const store = yield* IndexStore
  const manifest = yield* store.manifest
  if (Option.isNone(manifest)) return yield* new IndexMissing({ location: store.location })
  return manifest.value
})

/** How a query is answered. */
export interface QueryOptions {
  /** Defaults to `defaultMode` of the index's model. */
  readonly mode?: RetrievalMode
  readonly bm25?: Bm25Params
  /** How hybrid mode fuses its rankings (default `FusionConfig.default`). */
  readonly fusion?: FusionConfig
  /** Also return each result's score breakdown. */
  readonly explain?: boolean
  /**
   * Search only the chunks of documents that satisfy this rule (not `body`; `source under` paths are resolved against
   * the working directory). The filter applies before the top k, in every mode, so the answer is the exact top k of
   * those chunks; BM25's statistics stay those of the whole index.
   */
  readonly where?: Rule
  /** `doc`: one result per document, its best chunk, with how many more of its chunks matched (default `chunk`). */
  readonly group?: ResultGroup
  /**
   * Expand the query's terms from its best first-pass chunks (pseudo-relevance feedback; with `where`, the best of the
   * chunks it allows); off by default.
   */
  readonly expand?: ExpansionConfig
  /** Work out what each result shows (`shown`: its passage, headings and source); on by default. */
  readonly display?: boolean
  /** Scan every vector even where the index has an approximate vector index. */
  readonly exact?: boolean
  /**
   * The process asks this one query (a command, not a server): it walks the graphs only where a walk reads just the
   * rows it reaches (`IndexView.annPaged`), and scans otherwise, which is then the quicker; `annCandidates` walks all
   * the same.
   */
  readonly once?: boolean
  /** How many candidates the approximate vector index proposes a segment (`efSearch`; default `DEFAULT_EF_SEARCH`). */
  readonly annCandidates?: number
}

export type { Explanation }

/**
 * Whether a query that has words gave no terms because each was a stop word: answers say so, since "no results" alone
 * puzzles.
 */
export const stopWordsOnly = (text: string, terms: ReadonlyArray<string>): boolean => {
  if (terms.length > 0) return false
  let words = 0
  analyzeWords(text, () => void words++)
  return words > 0
}

/** The snapshot of the index, with its manifest checked to match the `Embedder` in use; `IndexMissing` if empty. */
export const openSnapshot = Effect.fn("openSnapshot")(function* () {
  const store = yield* IndexStore
  const embedder = yield* Embedder
  const snapshot = yield* store.snapshot
  if (Option.isNone(snapshot)) return yield* new IndexMissing({ location: store.location })
  const { manifest } = snapshot.value
  const settingsDiffer = manifest.modelFingerprint !== undefined && manifest.modelFingerprint !== embedder.fingerprint
  if (manifest.model !== embedder.model || manifest.dimensions !== embedder.dimensions || settingsDiffer) {
    return yield* new ModelMismatch({
      index: manifest.model,
      query:
        settingsDiffer && manifest.model === embedder.model ? `${embedder.model} with other settings` : embedder.model
    })
  }
  return snapshot.value
})

/** Embeds cleaned query texts with the index's model, checking each vector can be compared with the index's. */
export const embedQueries = Effect.fn("embedQueries")(function* (
  texts: ReadonlyArray<string>,
  manifest: IndexManifest,
  zeroOk = false
) {
  const embedder = yield* Embedder
  if (texts.length === 0) return []
  const embeddings = yield* embedder.embedMany(texts)
  for (const embedding of embeddings) {
    if (embedding.model !== manifest.model)
      return yield* new ModelMismatch({ index: manifest.model, query: embedding.model })
    if (embedding.vector.length !== manifest.dimensions) {
      return yield* new DimensionMismatch({ expected: manifest.dimensions, actual: embedding.vector.length })
    }
    if (!zeroOk && squaredNorm(embedding.vector) === 0) {
      return yield* new ZeroVector({ length: embedding.vector.length })
    }
  }
  return embeddings
})

/**
 * The vector of a cleaned query for `asked` mode, and the mode it is answered in: a query the model finds nothing in
 * (`42` for word vectors) has no direction, so it is answered by its words alone, in lexical mode, with a note saying
 * so. No vector for lexical mode. Untraced, as `queryFilter` is: the embedding it asks for has a span of its own.
 */
export const queryVector = Effect.fnUntraced(function* (text: string, manifest: IndexManifest, asked: RetrievalMode) {
  if (asked === "lexical") return { mode: asked, vector: undefined, note: undefined }
  const { vector } = (yield* embedQueries([text], manifest, true))[0]!
  if (squaredNorm(vector) !== 0) return { mode: asked, vector, note: undefined }
  const note =
    `${manifest.model} finds nothing in this query it can place (no word it knows), so it was answered in lexical ` +
    `mode, by its words alone`
  return { mode: "lexical" as const, vector: undefined, note }
})

/**
 * Chunks already decoded, by state of the index (`Snapshot.stateKey`, else the snapshot) and position. A server
 * answers many queries from one snapshot and the same chunks come up again and again; reading, decompressing and
 * checking each anew would be about a fifth of its time. Keyed by the state, the chunks also serve the next snapshots
 * of an unchanged index (one per `queryIndex` call: checking the results would be a sixth of a warm query on the 60 MB
 * benchmark index). At most `DECODED_CHUNKS` per state (then it starts over), and gone with the state; the model is
 * checked too, as each chunk's embedding names it.
 */
const decodedChunks = new WeakMap<object, { readonly model: string; readonly chunks: Map<number, DecodedChunk> }>()
/** A result's chunk as kept, with what it shows once a query has shown it (the same for every query of a state). */
interface DecodedChunk {
  readonly chunk: Chunk
  readonly title: string
  shown?: ShownChunk
}
const DECODED_CHUNKS = 16_384

const decodedChunksOf = (snapshot: Snapshot) => {
  const key = snapshot.stateKey ?? snapshot
  let decoded = decodedChunks.get(key)
  if (decoded?.model !== snapshot.manifest.model) {
    decoded = { model: snapshot.manifest.model, chunks: new Map() }
    decodedChunks.set(key, decoded)
  }
  return decoded.chunks
}

/**
 * Decodes the stored chunk at `position` into a domain `Chunk`, with its document's title; a value breaking the
 * domain's rules is `IndexCorrupt`.
 */
export const chunkAt = (snapshot: Snapshot, location: string, position: number) => {
  const decoded = decodedChunksOf(snapshot)
  const known = decoded.get(position)
  if (known !== undefined) return Effect.succeed(known)
  return Effect.flatMap(
    readSnapshot(location, () => snapshot.chunkAt(position)),
    (stored) => {
      const result = decodeChunk({
        docId: stored.docId,
        start: stored.start,
        end: stored.end,
        // A chunk's text is cut from its document's text, and V8 keeps the whole document alive as long as the cut:
        // kept below, it would hold up to 16,384 whole documents. A copy of its own holds only itself.
        text: structuredClone(stored.text),
        embedding: { vector: stored.vector, model: snapshot.manifest.model }
      })
      if (Result.isFailure(result)) {
        return Effect.fail(
          new IndexCorrupt({
            location,
            detail: `a chunk of ${JSON.stringify(stored.docId)}: ${oneLine(result.failure.message)}`
          })
        )
      }
      const kept: DecodedChunk = { chunk: result.success, title: stored.title }
      if (decoded.size >= DECODED_CHUNKS) decoded.clear()
      decoded.set(position, kept)
      return Effect.succeed(kept)
    }
  )
}

const decodeChunk = Schema.decodeUnknownResult(Chunk)

/**
 * What the results at `tops` show: kept with their decoded chunks, so a server showing the same chunks again makes
 * each once (making passages was a quarter of a lexical request's time under load); the others made together, so a
 * document's alignment is worked out once for all of its chunks.
 */
const shownOf = (
  snapshot: Snapshot,
  tops: ReadonlyArray<{ readonly position: number }>,
  results: ReadonlyArray<{ readonly chunk: Chunk }>
): ReadonlyArray<ShownChunk> => {
  const decoded = decodedChunksOf(snapshot)
  const missing = tops.flatMap((top, i) => (decoded.get(top.position)?.shown === undefined ? [i] : []))
  const made = shownChunks(
    snapshot.documentText,
    snapshot.manifest.cleaner,
    missing.map((i) => results[i]!.chunk)
  )
  const shown = tops.map((top) => decoded.get(top.position)?.shown)
  missing.forEach((i, j) => {
    shown[i] = made[j]!
    const entry = decoded.get(tops[i]!.position)
    if (entry !== undefined) entry.shown = made[j]!
  })
  return shown as ReadonlyArray<ShownChunk>
}

/**
 * Answers `text` from the stored index, reading only what the mode needs from one snapshot: the postings of the
 * query's terms (lexical), the vector blobs (vector), or both (hybrid), and the stored chunks of the results. The
 * embedder must be the index's model (checked before anything is embedded or scored); the text is cleaned with the
 * index's clean rules and analyzed with its analyzer. Results follow the ranking order in every mode; with a `where`
 * rule they are the best of the chunks it allows (checked before anything is read: `QueryFilterInvalid`). The answer's
 * `query.stopWordsOnly` is true when the query has words but the analyzer left out every one as a stop word.
 */
export const queryIndex = Effect.fn("queryIndex")(function* (text: string, topK: number, options: QueryOptions = {}) {
  const store = yield* IndexStore
  yield* queryFilter(options.where) // a bad filter is reported before the index is opened
  return yield* Effect.scoped(
    Effect.flatMap(openSnapshot(), (snapshot) => querySnapshot(snapshot, store.location, text, topK, options))
  )
})

/**
 * `queryIndex` over a snapshot the caller holds open (a long-running server answers many queries from one), so
 * every result comes from that one state of the index. `location` names the index in errors. The snapshot's model
 * must be the `Embedder`'s (as `openSnapshot` checks).
 */
export const querySnapshot = Effect.fnUntraced(
  function* (snapshot: Snapshot, location: string, text: string, topK: number, options: QueryOptions = {}) {
    const times = yield* stageTimes
    const where = yield* queryFilter(options.where)
    const { manifest } = snapshot
    const { prepared, terms } = yield* Effect.fromResult(
      times.time("analyze", () =>
        Result.map(prepareQuery(text, topK, manifest.cleaner), (prepared) => ({
          prepared,
          terms: analyze(prepared.text, manifest.analyzer)
        }))
      )
    )
    const { mode, note, vector } = yield* times.timeEffect(
      "embed",
      queryVector(prepared.text, manifest, options.mode ?? defaultMode(manifest.model)),
      false // the embedding has a span of its own
    )
    const params = options.bm25 ?? Bm25Params.default
    const expand = options.expand
    const filter =
      where === undefined
        ? undefined
        : yield* readSnapshot(location, () => times.time("filter", () => snapshot.filter(where)))
    const scoredTerms =
      expand === undefined || mode === "vector"
        ? terms
        : yield* readSnapshot(location, () =>
            times.time("expand", () =>
              expandQuery(snapshot, terms, params, expand, (t) => analyze(t, manifest.analyzer), filter)
            )
          )
    // A process asking once walks only where a walk reads just what it reaches.
    const walks =
      manifest.ann !== undefined &&
      options.exact !== true &&
      (options.once !== true ||
        options.annCandidates !== undefined ||
        (mode !== "lexical" && (yield* readSnapshot(location, () => snapshot.annPaged?.() === true))))
    const query = {
      terms: scoredTerms,
      vector,
      ef: walks ? (options.annCandidates ?? DEFAULT_EF_SEARCH) : undefined,
      time: times.time
    }
    // Lexical and vector rankings are one stage each (their scores are made as the top k is taken); a hybrid one is
    // timed by the engine, part by part (its top k of the fused list is a sort of at most twice the fusion depth).
    const rank = () => {
      const scored = scoreQuery(snapshot, query, mode, params, FUSION_DEPTH, options.fusion, filter)
      return options.group === "doc"
        ? { scored, ...topDocumentsWithMore(snapshot, scored, prepared.topK) }
        : { scored, tops: topChunksOf(snapshot, scored, prepared.topK, query), more: undefined }
    }
    const { more, scored, tops } = yield* readSnapshot(location, () =>
      mode === "hybrid" ? rank() : times.time(mode === "lexical" ? "postings" : "scan", rank)
    )
    /** The titles of the results' documents, by doc id. */
    const titles = new Map<string, string>()
    const decoded = decodedChunksOf(snapshot)
    const cached = tops.reduce((n, top) => (decoded.has(top.position) ? n + 1 : n), 0)
    const results = yield* times.timeEffect(
      "fetch",
      Effect.forEach(tops, (top, i) =>
        Effect.map(chunkAt(snapshot, location, top.position), ({ chunk, title }) => {
          titles.set(chunk.docId, title)
          return new RankedChunk({ chunk, score: top.score, rank: Rank.make(i + 1), kind: scored.kind })
        })
      )
    )
    const explanations =
      options.explain === true
        ? yield* readSnapshot(location, () => tops.map((top) => scored.explain(top.position)))
        : undefined
    const shown =
      options.display === false
        ? undefined
        : yield* readSnapshot(location, () => times.time("display", () => shownOf(snapshot, tops, results)))
    yield* countChunkCache(cached, tops.length - cached)
    yield* recordStages(times)
    const answered = {
      text: prepared.text,
      topK: prepared.topK,
      mode,
      terms,
      stopWordsOnly: stopWordsOnly(prepared.text, terms),
      ...(options.group === "doc" ? { group: options.group } : {}),
      ...(note === undefined ? {} : { note })
    }
    return { manifest, query: answered, results, titles, explanations, more, shown } as const
  },
  // A span without the call site's stack, which effect would capture with an `Error` on every query (a server's hot path).
  (self) => Effect.withSpan(self, "querySnapshot", { captureStackTrace: false })
)
