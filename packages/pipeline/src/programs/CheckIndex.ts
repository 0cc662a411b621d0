/**
 * `checkIndex`: looks an index over the way `CheckIndex` (Lucene) and `PRAGMA integrity_check` (SQLite) do, and
 * reports every kind of damage it finds instead of stopping at the first:
 *
 * - storage: the store's own integrity check (SQLite's; PostgreSQL keeps its own);
 * - manifest: its counts and dimensions against what the index holds;
 * - documents: every stored document's chunks and spans readable, in text order, as many as it says;
 * - postings: for a sample of chunks, their terms analyzed again from title and text against the postings (every term
 *   listed with its count, nothing listed that the chunk does not hold) and against the stored lengths;
 * - vectors: every block decodable and finite, rows one per position, and the sampled chunks' vectors as stored;
 * - ann (an index with an approximate vector index): each graph readable, and its recall@10 against the exact
 *   scan, with sampled chunks' own vectors as queries;
 * - ordering: sampled queries in every mode, each list in the one ranking order, without repeats or deleted chunks.
 *
 * Sampling is deterministic (evenly spaced live chunks), so two checks of one index read the same chunks.
 */

import type { RetrievalMode } from "@funcpipe/domain/Config"
import { rankingOrder } from "@funcpipe/domain/Ranking"
import { Clock, Effect, Option, Schema } from "effect"
import { analyze } from "../analysis/Analyzer.ts"
import { cleanText } from "../analysis/Clean.ts"
import { DEFAULT_EF_SEARCH } from "../search/Hnsw.ts"
import { IndexMissing } from "../search/QueryErrors.ts"
import { decodedBlocks, topVectors } from "../search/VectorScan.ts"
import { IndexStore, readSnapshot, type Snapshot } from "../store/IndexStore.ts"
import { embedQueries, querySnapshot } from "./QueryIndex.ts"

/** What a check looks at. */
export type CheckName = "storage" | "manifest" | "documents" | "postings" | "vectors" | "ann" | "ordering"

/** One check's outcome: what it covered, and its problems (the first `MAX_LISTED`; `more` counts the rest). */
export interface CheckResult {
  readonly name: CheckName
  readonly covered: string
  readonly problems: ReadonlyArray<string>
  readonly more: number
}

export interface CheckReport {
  readonly location: string
  readonly checks: ReadonlyArray<CheckResult>
  readonly millis: number
}

export interface CheckOptions {
  /** How many live chunks the postings and vector checks analyze again (default 20,000; all when fewer). */
  readonly sample?: number
  /** How many sampled queries the ordering check asks in each mode (default 20; 0 skips it). */
  readonly queries?: number
  /** The modes the ordering check asks in (default all three). */
  readonly modes?: ReadonlyArray<RetrievalMode>
  /**
   * Queries of your own for the ordering check and the approximate index's recall (which then embeds them with the
   * index's model), in place of sampled chunks' words and vectors.
   */
  readonly queryTexts?: ReadonlyArray<string>
}

/** The problems a check lists one by one; past them it counts. */
export const MAX_LISTED = 20

export const DEFAULT_CHECK_SAMPLE = 20_000
export const DEFAULT_CHECK_QUERIES = 20

/** Whether every check found nothing wrong. */
export const isSound = (report: CheckReport): boolean => report.checks.every((c) => c.problems.length === 0)

/** The index check found damage: how much, and the first problem. */
export class IndexCheckFailed extends Schema.TaggedError<IndexCheckFailed>()("IndexCheckFailed", {
  location: Schema.String,
  problems: Schema.Int,
  first: Schema.String
}) {
  override get message(): string {
    return (
      `the index at ${this.location} has ${this.problems} problem${this.problems === 1 ? "" : "s"} (first: ` +
      `${this.first}); rebuild it with: funcpipe index <paths...> --rebuild --index ${this.location}`
    )
  }
}

/** Collects one check's problems, listing the first few. */
const tally = (name: CheckName) => {
  const problems: Array<string> = []
  let more = 0
  return {
    add: (problem: string) => {
      if (problems.length < MAX_LISTED) problems.push(problem)
      else more++
    },
    done: (covered: string): CheckResult => ({ name, covered, problems, more })
  }
}

const describe = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error)

/** Runs `f`, turning anything it throws (a store's typed error on damaged data) into a problem. */
const guarded = (add: (problem: string) => void, what: string, f: () => void): void => {
  try {
    f()
  } catch (error) {
    add(`${what}: ${describe(error)}`)
  }
}

/** Evenly spaced live positions, at most `sample` of them, in ascending order. */
const samplePositions = (snapshot: Snapshot, sample: number): Int32Array => {
  const live: Array<number> = []
  for (let p = 0; p < snapshot.positions; p++) if (snapshot.deleted?.[p] !== 1) live.push(p)
  if (live.length <= sample) return Int32Array.from(live)
  const picked = new Int32Array(sample)
  for (let i = 0; i < sample; i++) picked[i] = live[Math.floor((i * live.length) / sample)]!
  return picked
}

/** The manifest against the documents and the view's counts. */
const checkManifest = (snapshot: Snapshot, documents: number, chunks: number): CheckResult => {
  const t = tally("manifest")
  const m = snapshot.manifest
  let deleted = 0
  for (let p = 0; p < snapshot.positions; p++) if (snapshot.deleted?.[p] === 1) deleted++
  const live = snapshot.positions - deleted
  if (m.documents !== documents) t.add(`the manifest counts ${m.documents} documents; the index holds ${documents}`)
  if (m.chunks !== chunks) t.add(`the manifest counts ${m.chunks} chunks; the documents have ${chunks}`)
  if (live !== chunks) t.add(`${live} chunk positions are live; the documents have ${chunks} chunks`)
  if (snapshot.liveChunks !== live) t.add(`the index counts ${snapshot.liveChunks} live chunks; ${live} are live`)
  if (snapshot.dimensions !== m.dimensions)
    t.add(`the vectors have ${snapshot.dimensions} dimensions; the manifest says ${m.dimensions}`)
  if (snapshot.lengths.length < snapshot.positions)
    t.add(`the index holds ${snapshot.lengths.length} chunk lengths for ${snapshot.positions} positions`)
  return t.done(`${m.documents} documents, ${m.chunks} chunks, ${snapshot.positions} positions (${deleted} deleted)`)
}

/** Every document's stored chunks: readable, as many as it says, in text order. */
const checkDocuments = (
  snapshot: Snapshot,
  docs: ReadonlyArray<{ readonly docId: string; readonly chunks: number }>
): CheckResult => {
  const t = tally("documents")
  for (const doc of docs) {
    guarded(t.add, `document ${JSON.stringify(doc.docId)}`, () => {
      const stored = snapshot.document(doc.docId)
      if (stored === undefined) {
        t.add(`document ${JSON.stringify(doc.docId)} is listed but cannot be read`)
        return
      }
      if (stored.chunks.length !== doc.chunks)
        t.add(`document ${JSON.stringify(doc.docId)} says ${doc.chunks} chunks and has ${stored.chunks.length}`)
      let previous: { readonly start: number; readonly end: number } | undefined
      for (const chunk of stored.chunks) {
        if (!(chunk.start <= chunk.end))
          t.add(`document ${JSON.stringify(doc.docId)} has a chunk [${chunk.start}, ${chunk.end})`)
        if (
          previous !== undefined &&
          (chunk.start < previous.start || (chunk.start === previous.start && chunk.end < previous.end))
        )
          t.add(
            `document ${JSON.stringify(doc.docId)}'s chunks are out of text order at [${chunk.start}, ${chunk.end})`
          )
        previous = chunk
      }
    })
  }
  return t.done(`${docs.length} documents' chunks and spans`)
}

/** The sampled chunks' terms against the postings and the stored lengths. */
const checkPostings = (snapshot: Snapshot, sampled: Int32Array, known: ReadonlySet<string>): CheckResult => {
  const t = tally("postings")
  const analyzer = snapshot.manifest.analyzer
  // What each term's postings must say of the sampled positions: position → count.
  const expected = new Map<string, Map<number, number>>()
  const inSample = new Set<number>()
  for (const p of sampled) {
    guarded(t.add, `chunk at position ${p}`, () => {
      const chunk = snapshot.chunkAt(p)
      if (!known.has(chunk.docId))
        t.add(`position ${p} holds a chunk of ${JSON.stringify(chunk.docId)}, which is not a stored document`)
      // A chunk's searchable text, as the index run analyzes it: its document's title, a line break, the chunk.
      const terms = analyze(`${chunk.title}\n${chunk.text}`, analyzer)
      if (snapshot.lengths[p] !== terms.length)
        t.add(
          `position ${p} (${chunk.docId} [${chunk.start}, ${chunk.end})) is stored as ${snapshot.lengths[p]} terms long; its text has ${terms.length}`
        )
      for (const term of terms) {
        let counts = expected.get(term)
        if (counts === undefined) expected.set(term, (counts = new Map()))
        counts.set(p, (counts.get(p) ?? 0) + 1)
      }
      inSample.add(p)
    })
  }
  for (const [term, counts] of expected) {
    guarded(t.add, `the postings of ${JSON.stringify(term)}`, () => {
      const found = new Map<number, number>()
      for (const block of snapshot.postings(term)) {
        let last = -1
        for (let i = 0; i < block.ordinals.length; i++) {
          const ordinal = block.ordinals[i]!
          const position = block.offset + ordinal
          if (ordinal <= last) t.add(`the postings of ${JSON.stringify(term)} are out of order at position ${position}`)
          last = ordinal
          if (position >= snapshot.positions)
            t.add(
              `the postings of ${JSON.stringify(term)} list position ${position}, past the last (${snapshot.positions - 1})`
            )
          else if (inSample.has(position)) found.set(position, block.tfs[i]!)
        }
      }
      for (const [position, count] of counts) {
        const listed = found.get(position)
        if (listed === undefined)
          t.add(`the term ${JSON.stringify(term)} of position ${position} is missing from its postings`)
        else if (listed !== count)
          t.add(
            `the postings of ${JSON.stringify(term)} count it ${listed} times at position ${position}; the text has ${count}`
          )
      }
      for (const position of found.keys())
        if (!counts.has(position))
          t.add(`the postings of ${JSON.stringify(term)} list position ${position}, whose text does not hold it`)
    })
  }
  return t.done(`${inSample.size} chunks' terms against ${expected.size} terms' postings`)
}

/** Every vector block: decodable, finite, one row per position; the sampled chunks' vectors as the blocks hold them. */
const checkVectors = (snapshot: Snapshot, sampled: Int32Array): CheckResult => {
  const t = tally("vectors")
  const d = snapshot.dimensions
  const wanted = new Set(sampled)
  let rows = 0
  let blocks = 0
  let matched = 0
  guarded(t.add, "reading the vectors", () => {
    for (const block of decodedBlocks(snapshot.vectorBlocks(), d)) {
      blocks++
      if (block.offset !== rows)
        t.add(`a vector block starts at position ${block.offset}; the previous one ended at ${rows}`)
      for (let r = 0; r < block.count; r++) {
        const position = block.offset + r
        if (snapshot.deleted?.[position] === 1) continue
        const row = block.vectors.subarray(r * d, (r + 1) * d)
        if (!row.every(Number.isFinite))
          t.add(`the vector at position ${position} has a component that is not a number`)
        if (wanted.has(position)) {
          guarded(t.add, `the chunk at position ${position}`, () => {
            const stored = snapshot.chunkAt(position).vector
            if (stored.length !== d || !row.every((x, i) => Object.is(x, stored[i])))
              t.add(`the chunk at position ${position} reads another vector than its block holds`)
            else matched++
          })
        }
      }
      rows = block.offset + block.count
    }
  })
  if (rows !== snapshot.positions) t.add(`the vectors cover ${rows} positions; the index has ${snapshot.positions}`)
  return t.done(`${rows} rows in ${blocks} blocks, ${d} dimensions; ${matched} sampled chunks' vectors as stored`)
}

/** A recall@10 this low means a graph that does not lead where it should: damage, not a setting. */
const DAMAGED_RECALL = 0.5

/** The approximate vector index against the exact scan, with sampled chunks' vectors as queries. */
const checkAnn = (
  snapshot: Snapshot,
  asks: ReadonlyArray<{ readonly what: string; readonly vector: () => ReadonlyArray<number> }>
): CheckResult => {
  const t = tally("ann")
  guarded(t.add, "counting the vector graphs", () => {
    const missing = snapshot.annMissing?.()
    if (missing !== undefined) t.add(missing)
  })
  let damaged = false
  guarded(t.add, "reading the vector graphs' scan codes", () => {
    for (const problem of snapshot.annDamage?.() ?? []) {
      t.add(problem)
      damaged = true
    }
  })
  if (snapshot.annSearch === undefined) return t.done("no vector graphs to ask")
  // Damaged codes are said once: every walk over them would fail alike.
  if (damaged && snapshot.manifest.ann?.codes !== undefined) return t.done("the graphs' scan codes are damaged")
  let hits = 0
  let asked = 0
  for (const ask of asks) {
    guarded(t.add, `the approximate index, asked with ${ask.what}`, () => {
      const vector = ask.vector()
      if (!vector.some((x) => x !== 0)) return
      const exact = topVectors(snapshot, vector, 10)
      const approximate = topVectors(snapshot, vector, 10, undefined, DEFAULT_EF_SEARCH)
      for (let r = 1; r < approximate.length; r++)
        if (approximate[r - 1]!.score < approximate[r]!.score)
          t.add(`the approximate answer to ${ask.what} is out of score order at rank ${r + 1}`)
      const truth = new Set(exact.map((top) => top.position))
      for (const top of approximate) if (truth.has(top.position)) hits++
      asked += 1
      hits += 10 - Math.min(10, exact.length)
    })
  }
  const recall = asked === 0 ? 1 : hits / (asked * 10)
  if (asked > 0 && recall < DAMAGED_RECALL)
    t.add(`the approximate index finds ${(recall * 100).toFixed(0)} % of the exact top 10: its graphs are damaged`)
  return t.done(
    `recall@10 ${recall.toFixed(3)} against the exact scan over ${asked} queries (efSearch ${DEFAULT_EF_SEARCH})`
  )
}

/** Up to `count` of the sampled chunks, evenly spread, each asked with its own vector. */
const chunkAsks = (snapshot: Snapshot, sampled: Int32Array, count: number) => {
  const step = Math.max(1, Math.floor(sampled.length / Math.max(1, count)))
  const asks: Array<{ readonly what: string; readonly vector: () => ReadonlyArray<number> }> = []
  for (let i = 0; i < sampled.length && asks.length < count; i += step) {
    const position = sampled[i]!
    asks.push({ what: `position ${position}'s vector`, vector: () => snapshot.chunkAt(position).vector })
  }
  return asks
}

/** Sampled queries in each mode: every list in the ranking order, without repeats or chunks that are not stored. */
const checkOrdering = Effect.fn("checkOrdering")(function* (
  snapshot: Snapshot,
  location: string,
  sampled: Int32Array,
  spans: ReadonlyMap<string, ReadonlySet<string>>,
  queries: number,
  modes: ReadonlyArray<RetrievalMode>,
  given: ReadonlyArray<string> | undefined
) {
  const t = tally("ordering")
  const texts: Array<string> = [...(given ?? [])]
  const step = Math.max(1, Math.floor(sampled.length / Math.max(1, queries)))
  for (let i = 0; given === undefined && i < sampled.length && texts.length < queries; i += step) {
    const text = yield* readSnapshot(location, () => snapshot.chunkAt(sampled[i]!).text).pipe(
      Effect.orElseSucceed(() => "")
    )
    const words = text
      .split(/\s+/)
      .filter((w) => w !== "")
      .slice(0, 8)
      .join(" ")
    if (/\p{L}|\p{N}/u.test(words)) texts.push(words)
  }
  let lists = 0
  for (const mode of modes) {
    for (const text of texts) {
      const found = yield* Effect.result(querySnapshot(snapshot, location, text, 10, { mode }))
      if (found._tag === "Failure") {
        // A query the index cannot embed (nothing the model knows) is not damage; anything else is.
        if (found.failure._tag !== "ZeroVector")
          t.add(`${mode} query ${JSON.stringify(text)}: ${found.failure.message}`)
        continue
      }
      lists++
      const results = found.success.results
      for (let i = 0; i < results.length; i++) {
        const r = results[i]!
        const key = { score: r.score, docId: r.chunk.docId, start: r.chunk.start, end: r.chunk.end, text: r.chunk.text }
        if (!Number.isFinite(r.score)) t.add(`${mode} query ${JSON.stringify(text)} scored rank ${i + 1} ${r.score}`)
        if (!spans.get(r.chunk.docId)?.has(`${r.chunk.start}:${r.chunk.end}`))
          t.add(
            `${mode} query ${JSON.stringify(text)} returned ${r.chunk.docId} [${r.chunk.start}, ${r.chunk.end}), which is not a stored chunk`
          )
        if (i > 0) {
          const p = results[i - 1]!
          const before = {
            score: p.score,
            docId: p.chunk.docId,
            start: p.chunk.start,
            end: p.chunk.end,
            text: p.chunk.text
          }
          if (rankingOrder(before, key) >= 0)
            t.add(
              `${mode} query ${JSON.stringify(text)}: rank ${i + 1} does not come after rank ${i} in the ranking order`
            )
        }
      }
    }
  }
  return t.done(`${lists} result lists from ${texts.length} queries in ${modes.join(", ")} mode`)
})

/**
 * Checks the index in the `IndexStore`, with its model's `Embedder` for the vector and hybrid queries of the ordering
 * check. Fails only when there is no index to check (`IndexMissing`); damage is reported, not failed with: see
 * `isSound`.
 */
export const checkIndex = Effect.fn("checkIndex")(function* (options: CheckOptions = {}) {
  const store = yield* IndexStore
  const started = yield* Clock.currentTimeMillis
  const checks: Array<CheckResult> = []
  const storage = tally("storage")
  yield* store.check.pipe(Effect.catch((error) => Effect.sync(() => storage.add(error.message))))
  checks.push(storage.done("the store's own integrity check"))
  const body = Effect.gen(function* () {
    const snapshot = yield* store.snapshot
    if (Option.isNone(snapshot)) return yield* new IndexMissing({ location: store.location })
    const snap = snapshot.value
    const docs = yield* store.documents
    const chunks = docs.reduce((sum, d) => sum + d.chunks, 0)
    checks.push(yield* readSnapshot(store.location, () => checkManifest(snap, docs.length, chunks)))
    checks.push(yield* readSnapshot(store.location, () => checkDocuments(snap, docs)))
    const sampled = yield* readSnapshot(store.location, () =>
      samplePositions(snap, options.sample ?? DEFAULT_CHECK_SAMPLE)
    )
    checks.push(checkPostings(snap, sampled, new Set(docs.map((d) => d.docId as string))))
    checks.push(checkVectors(snap, sampled))
    if (snap.manifest.ann !== undefined) {
      const given = options.queryTexts
      const asks =
        given === undefined
          ? chunkAsks(snap, sampled, Math.max(options.queries ?? DEFAULT_CHECK_QUERIES, 50))
          : (yield* embedQueries(
              given.map((text) => cleanText(text, snap.manifest.cleaner)),
              snap.manifest,
              true
            )).map((embedding, i) => ({ what: `query ${JSON.stringify(given[i])}`, vector: () => embedding.vector }))
      checks.push(checkAnn(snap, asks))
    }
    const queries = options.queries ?? DEFAULT_CHECK_QUERIES
    if (queries === 0 && options.queryTexts === undefined) return
    const spans = new Map<string, Set<string>>()
    for (const doc of docs) {
      const stored = yield* readSnapshot(store.location, () => snap.document(doc.docId)).pipe(
        Effect.orElseSucceed(() => undefined)
      )
      spans.set(doc.docId, new Set(stored?.chunks.map((c) => `${c.start}:${c.end}`) ?? []))
    }
    const modes = options.modes ?? ["lexical", "vector", "hybrid"]
    checks.push(yield* checkOrdering(snap, store.location, sampled, spans, queries, modes, options.queryTexts))
  })
  const opened = yield* Effect.result(Effect.scoped(body))
  if (opened._tag === "Failure") {
    const error = opened.failure
    if (error._tag === "IndexMissing") return yield* error
    // The index could not even be opened or listed: that is the finding.
    const broken = tally("manifest")
    broken.add(error.message)
    checks.push(broken.done("opening the index"))
  }
  const now = yield* Clock.currentTimeMillis
  const report: CheckReport = { location: store.location, checks, millis: now - started }
  return report
})
