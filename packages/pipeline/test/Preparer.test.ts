/** The worker pool prepares batches exactly as the inline stage does, and an index built through it answers the same. */

import { Worker } from "node:worker_threads"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { AnalyzerConfig, ChunkerConfig, ChunkSize, CleanerConfig, Overlap } from "@funcpipe/domain/Config"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { Effect, Layer, Result, Stream } from "effect"
import fc from "fast-check"
import { analyze } from "../src/analysis/Analyzer.ts"
import { chunkSpans } from "../src/analysis/Chunker.ts"
import { cleanText } from "../src/analysis/Clean.ts"
import { embedText } from "../src/analysis/Embed.ts"
import { WordTable } from "../src/analysis/WordTable.ts"
import {
  deltaPreparer,
  deltaReceiver,
  type PreparedBatch,
  prepareBatch,
  TermNumbering
} from "../src/index/prepare/Prepare.ts"
import {
  EARLY_WORKER,
  type EarlyWorker,
  layerWorkers,
  makeInlinePreparer,
  Preparer
} from "../src/index/prepare/Preparer.ts"
import { hashDoc } from "../src/index/Sync.ts"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { buildGraphBytes, type GraphJob } from "../src/search/GraphBuild.ts"
import { layerTemporary } from "../src/store/sqlite/TempIndexStore.ts"

const script = new URL("../src/index/prepare/PrepareWorker.ts", import.meta.url)
const settings = {
  cleaner: CleanerConfig.default,
  chunker: new ChunkerConfig({ chunkSize: ChunkSize.make(7), overlap: Overlap.make(2), tailPolicy: "pad" }),
  analyzer: AnalyzerConfig.default
}
const bodies = Array.from(
  { length: 300 },
  (_, i) =>
    `Document ${i}: the Running foxes' dens, ${"深".repeat(i % 3)} 😀 e.g. ${i % 7 === 0 ? "" : "stars and planets"}  `
)
const docs = bodies.map((body, i) => ({ title: `Title ${i % 5}`, body }))

const source = Layer.succeed(
  DocumentSource,
  DocumentSource.of({
    read: () =>
      Stream.fromIterable(
        docs.map((d, i) =>
          Result.succeed({
            source: "mem",
            line: i + 1,
            doc: new RawDoc({ docId: DocId.make(`d${i}`), title: d.title, body: d.body, categories: null })
          })
        )
      ),
    size: () => Effect.succeed(0)
  })
)

/** A batch with its term numbers replaced by the terms: what a writer makes of it, whatever the numbering. */
const resolved = (batch: PreparedBatch) => {
  let at = 0
  return {
    docs: batch.docs,
    chunks: Array.from(batch.termCounts, (count) =>
      Array.from(batch.termIds.subarray(at, (at += count)), (id) => batch.vocabulary[id]!)
    )
  }
}

describe("term numbering across batches", () => {
  it("numbers a term once per run, sends each term once, and gives the same terms as batches prepared alone", () => {
    const send = deltaPreparer()
    const receive = deltaReceiver()
    const batches = [docs.slice(0, 50), docs.slice(50, 51), [], docs.slice(51, 200)]
    const deltas = batches.map((batch) => send(batch, settings))
    const received = deltas.map((delta) => receive(delta)!)
    assert.deepStrictEqual(
      received.map(resolved),
      batches.map((batch) => resolved(prepareBatch(batch, settings)))
    )
    const sent = deltas.flatMap((delta) => delta.newTerms)
    assert.strictEqual(new Set(sent).size, sent.length, "no term is sent twice")
    assert.strictEqual(received[3]!.vocabulary, received[0]!.vocabulary, "one vocabulary, grown")
    assert.isBelow(deltas[1]!.newTerms.length, deltas[0]!.newTerms.length)
  })

  it("starts a new vocabulary when the numbering is full, and the batches still resolve to the same terms", () => {
    const numbering = new TermNumbering(20)
    const first = prepareBatch(docs.slice(0, 10), settings, numbering)
    const second = prepareBatch(docs.slice(10, 20), settings, numbering)
    assert.strictEqual(numbering.generation, 1)
    assert.notStrictEqual(second.vocabulary, first.vocabulary)
    assert.deepStrictEqual(
      [first, second].map(resolved),
      [docs.slice(0, 10), docs.slice(10, 20)].map((b) => resolved(prepareBatch(b, settings)))
    )
  })

  it("refuses a delta that skips part of the numbering (one sent but never received)", () => {
    const send = deltaPreparer()
    const receive = deltaReceiver()
    send(docs.slice(0, 5), settings)
    assert.isUndefined(receive(send(docs.slice(5, 10), settings)))
  })
})

describe("analysis on the preparing side", () => {
  // Words of several scripts and cases, joiners, a final sigma, a dotted capital I, emoji and lone surrogates.
  const piece = fc.constantFrom(
    "Run",
    "running",
    "the",
    "STARS",
    "e.g.",
    "don't",
    "3.5",
    "ΟΔΟΣ",
    "σοφός",
    "İstanbul",
    "深",
    "😀",
    "\uD800",
    " ",
    "  ",
    "\n",
    ".",
    "'",
    "-",
    "Ünïcode",
    "ǅ"
  )
  const text = fc.array(piece, { maxLength: 40 }).map((parts) => parts.join(""))
  const rules = fc.constantFrom(
    CleanerConfig.default,
    new CleanerConfig({ rules: ["strip"] }),
    new CleanerConfig({ rules: [] })
  )

  it("gives each chunk exactly the terms the analyzer finds in its title, a line break and its text", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(text, text), { minLength: 1, maxLength: 6 }), rules, (pairs, cleaner) => {
        const batchSettings = { ...settings, cleaner }
        const batch = resolved(
          prepareBatch(
            pairs.map(([title, body]) => ({ title, body })),
            batchSettings
          )
        )
        const expected = pairs.flatMap(([title, body]) =>
          chunkSpans(cleanText(body, cleaner), settings.chunker).map((span) =>
            analyze(`${title}\n${span.text}`, settings.analyzer)
          )
        )
        assert.deepStrictEqual(batch.chunks, expected)
      }),
      { numRuns: 300, seed: 20261130 }
    )
  })

  it("looks words up by range as a map looks them up by string, past growth and hash collisions", () => {
    const table = new WordTable()
    // 20,000 words: the table doubles many times and, at every size, words share slots.
    const words = Array.from({ length: 20_000 }, (_, i) => (i * 7919).toString(36) + (i % 3 === 0 ? "é" : ""))
    const text = words.join(" ")
    let at = 0
    const ranges = words.map((word) => {
      const from = at
      at += word.length + 1
      return [from, from + word.length] as const
    })
    words.forEach((word, i) => {
      const [from, to] = ranges[i]!
      const hash = WordTable.hash(text, from, to)
      assert.isUndefined(table.get(text, from, to, hash))
      table.set(word, hash, i)
    })
    assert.strictEqual(table.size, words.length)
    words.forEach((_, i) => {
      const [from, to] = ranges[i]!
      assert.strictEqual(table.get(text, from, to, WordTable.hash(text, from, to)), i)
    })
    // Words with the same hash (known FNV-1a collisions) are told apart by their text.
    const colliding = new WordTable()
    colliding.set("costarring", WordTable.hash("costarring", 0, 10), 1)
    assert.strictEqual(WordTable.hash("liquid", 0, 6), WordTable.hash("costarring", 0, 10))
    assert.isUndefined(colliding.get("liquid", 0, 6, WordTable.hash("liquid", 0, 6)))
    colliding.set("liquid", WordTable.hash("liquid", 0, 6), 2)
    assert.deepStrictEqual(
      ["costarring", "liquid"].map((w) => colliding.get(` ${w}`, 1, w.length + 1, WordTable.hash(w, 0, w.length))),
      [1, 2]
    )
    // A prefix or an extension of a stored word is another word.
    const [from, to] = ranges[1]!
    assert.isUndefined(table.get(text, from, to - 1, WordTable.hash(text, from, to - 1)))
    assert.isUndefined(table.get(`${words[1]}x`, 0, to - from + 1, WordTable.hash(`${words[1]}x`, 0, to - from + 1)))
  })
})

describe("local-sha256 vectors on the preparing side", () => {
  it("gives each chunk the vector the embedder gives its text, and no texts to embed", () => {
    const withTexts = prepareBatch(docs.slice(0, 40), settings)
    const withVectors = prepareBatch(docs.slice(0, 40), { ...settings, localVectors: true })
    const texts = withTexts.docs.flatMap((d) => d.texts)
    const vectors = withVectors.docs.flatMap((d) => Array.from(d.vectors!))
    assert.isAbove(texts.length, 40)
    assert.deepStrictEqual(
      vectors,
      texts.flatMap((t) => embedText(t).vector)
    )
    assert.deepStrictEqual(
      withVectors.docs.flatMap((d) => d.texts),
      []
    )
    assert.isTrue(withTexts.docs.every((d) => d.vectors === undefined))
    assert.deepStrictEqual(resolved({ ...withVectors, docs: [] }), resolved({ ...withTexts, docs: [] }))
  })
})

/** The documents with ids and categories, as `hashDocs` needs them. */
const whole = docs.map((d, i) => ({ ...d, docId: `d${i}`, categories: i % 3 === 0 ? null : `c${i % 4}; shared` }))

describe("content hashes on the preparing side", () => {
  it("gives each document the hash the sync plan gives it, and none unless asked", () => {
    const batch = prepareBatch(whole.slice(0, 40), { ...settings, hashDocs: true })
    assert.deepStrictEqual(batch.flat.hashes, whole.slice(0, 40).map(hashDoc))
    assert.isUndefined(prepareBatch(whole.slice(0, 40), settings).flat.hashes)
  })

  it("refuses to hash a document without its id or categories", () => {
    assert.throws(() => prepareBatch(docs.slice(0, 2), { ...settings, hashDocs: true }), /lacks its id or categories/)
  })
})

describe("the worker pool", () => {
  it.effect(
    "fails the batch of a thread that dies, and prepares later batches on a new one",
    () =>
      Effect.gen(function* () {
        const pool = yield* Preparer
        const lost = yield* Effect.exit(pool.prepare([{ title: "", body: "exit" }], settings))
        assert.isTrue(lost._tag === "Failure", "the lost batch fails")
        const later = yield* pool.prepare(docs.slice(0, 3), settings)
        assert.deepStrictEqual(later, prepareBatch(docs.slice(0, 3), settings))
      }).pipe(Effect.provide(layerWorkers(new URL("./children/DyingWorker.ts", import.meta.url), 1))),
    60_000
  )
})

describe("graphs built on the pool's threads", () => {
  /** A job of `count` rows of 8 components, each a unit vector from a fixed formula (a new array each time). */
  const job = (count: number): GraphJob => {
    const rows = new Float32Array((count + 1) * 8)
    for (let r = 0; r < count; r++) {
      let norm = 0
      for (let k = 0; k < 8; k++) norm += Math.sin(r * 1.7 + k) ** 2
      for (let k = 0; k < 8; k++) rows[r * 8 + k] = Math.sin(r * 1.7 + k) / Math.sqrt(norm)
    }
    return { rows, count, dimensions: 8, m: 8, efConstruction: 40 }
  }

  it.live(
    "gives the bytes this thread builds, and nothing (for the caller to build) from a thread that dies",
    () =>
      Effect.gen(function* () {
        const expected = buildGraphBytes(job(500))
        const built = yield* Effect.flatMap(Preparer, (pool) => pool.graphs!.build(job(500))).pipe(
          Effect.provide(layerWorkers(new URL("../src/index/prepare/PrepareWorker.ts", import.meta.url), 1))
        )
        assert.deepStrictEqual(built, expected)
        // A thread that cannot build (this one throws on any message that is not a batch, and dies).
        const lost = yield* Effect.flatMap(Preparer, (pool) => pool.graphs!.build(job(50))).pipe(
          Effect.provide(layerWorkers(new URL("./children/DyingWorker.ts", import.meta.url), 1))
        )
        assert.isUndefined(lost)
      }),
    60_000
  )
})

describe("a thread started early by a launcher", () => {
  const dying = new URL("./children/DyingWorker.ts", import.meta.url)
  const holder = globalThis as { [EARLY_WORKER]?: EarlyWorker }
  /**
   * Leaves a thread for `script` where a launcher leaves it, and returns what waits for its exit code. The exit is
   * listened for at once: a listener added later (by a fiber yet to run) could miss an early exit and wait for ever.
   */
  const startEarly = (script: URL, failed = false): Effect.Effect<number> => {
    const worker = new Worker(script)
    const exited = new Promise<number>((resolve) => worker.once("exit", resolve))
    holder[EARLY_WORKER] = { script: script.href, worker, failed }
    return Effect.promise(() => exited)
  }

  it.effect(
    "is the pool's first thread: the pool sends it batches",
    () =>
      Effect.gen(function* () {
        const exitCode = startEarly(dying)
        const pool = yield* Preparer
        const batch = yield* pool.prepare(docs.slice(0, 3), settings)
        assert.deepStrictEqual(batch, prepareBatch(docs.slice(0, 3), settings))
        assert.isUndefined(holder[EARLY_WORKER], "taken once")
        // The dying thread exits with code 3 on this batch: the early thread had it.
        assert.isTrue((yield* Effect.exit(pool.prepare([{ title: "", body: "exit" }], settings)))._tag === "Failure")
        assert.strictEqual(yield* exitCode, 3)
      }).pipe(Effect.provide(layerWorkers(dying, 1))),
    60_000
  )

  it.effect(
    "is ended, not used, when it failed or runs another script",
    () =>
      Effect.gen(function* () {
        const pool = yield* Preparer
        for (const [script, failed] of [
          [dying.href, true],
          [new URL("./children/Elsewhere.ts", import.meta.url).href, false]
        ] as const) {
          // A stand-in that exits with code 3 on any batch: were it used, the batch would fail.
          const worker = new Worker(`require("node:worker_threads").parentPort.on("message", () => process.exit(3))`, {
            eval: true
          })
          // Listened for at once: a listener added later (by a fiber yet to run) could miss an early exit and wait.
          const exited = new Promise<number>((resolve) => worker.once("exit", resolve))
          holder[EARLY_WORKER] = { script, worker, failed }
          const batch = yield* pool.prepare(docs.slice(0, 3), settings)
          assert.deepStrictEqual(batch, prepareBatch(docs.slice(0, 3), settings))
          assert.isUndefined(holder[EARLY_WORKER])
          assert.notStrictEqual(yield* Effect.promise(() => exited), 3, "ended without a batch")
          // The pool's own thread exits on this batch, so the next batch starts a thread (and looks for an early one).
          assert.isTrue((yield* Effect.exit(pool.prepare([{ title: "", body: "exit" }], settings)))._tag === "Failure")
        }
      }).pipe(Effect.provide(layerWorkers(dying, 1))),
    60_000
  )
})

// One pool of two threads for the tests below: starting a thread loads the stage's modules, which takes a while. A
// thread with a batch waiting leaves the hashing of the next to the caller, so both sides hash in the tests.
layer(layerWorkers(script, 2, { hash: 1, pack: 1 }), { timeout: 60_000 })("a shared worker pool", (it) => {
  it.effect(
    "prepares every batch exactly as the inline stage",
    () =>
      Effect.gen(function* () {
        const pool = yield* Preparer
        const batches = [docs.slice(0, 64), docs.slice(64, 65), [], docs.slice(65)]
        const viaWorkers = yield* Effect.forEach(batches, (batch) => pool.prepare(batch, settings), { concurrency: 4 })
        assert.deepStrictEqual(
          viaWorkers.map(resolved),
          batches.map((batch) => resolved(prepareBatch(batch, settings)))
        )
      }),
    60_000
  )

  it.effect(
    "hashes each document as the sync plan does, on the thread that is not behind",
    () =>
      Effect.gen(function* () {
        const pool = yield* Preparer
        // Four batches at once over two threads: the first two go to idle threads, which hash them; the next two find
        // a batch waiting, and the caller hashes them.
        const batches = [whole.slice(0, 50), whole.slice(50, 100), whole.slice(100, 150), whole.slice(150)]
        const prepared = yield* Effect.forEach(
          batches,
          (batch) => pool.prepare(batch, { ...settings, hashDocs: true }),
          { concurrency: 4 }
        )
        assert.deepStrictEqual(
          prepared.map((p) => p.flat.hashes),
          batches.map((batch) => batch.map(hashDoc))
        )
      }),
    60_000
  )

  it.effect(
    "builds an index that answers exactly as one built inline",
    () =>
      Effect.gen(function* () {
        const answers = (preparer: Layer.Layer<never>) =>
          Effect.gen(function* () {
            yield* indexPaths(["corpus"], { chunker: settings.chunker, batchSize: 16 })
            return yield* Effect.forEach(["running fox", "stars 😀", "深"], (q) =>
              Effect.map(queryIndex(q, 20, { mode: "hybrid", explain: true }), (a) => [a.results, a.explanations])
            )
          }).pipe(Effect.provide(Layer.mergeAll(layerTemporary, source, preparer)))
        const inline = yield* answers(Layer.succeed(Preparer, makeInlinePreparer()))
        const pooled = yield* answers(Layer.succeed(Preparer, yield* Preparer))
        assert.deepStrictEqual(pooled, inline)
        assert.isAbove((inline[0]![0] as ReadonlyArray<unknown>).length, 0)
      }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer))),
    60_000
  )
})
