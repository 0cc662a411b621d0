/**
 * Nothing lost: a real indexing process killed with SIGKILL mid-transaction leaves the previous index intact (its
 * vector graphs too), in a SQLite file and in PostgreSQL (where `FUNCPIPE_TEST_PG` names a server).
 */

import { spawn } from "node:child_process"
import { DatabaseSync } from "node:sqlite"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { DEFAULT_ANN } from "@funcpipe/domain/Manifest"
import { describePg, freshSchema, onServer, writeLocks } from "@funcpipe/test-kit/PgFixture"
import { Effect, Fiber, FileSystem, Layer } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { layerIndexStore } from "../src/programs/IndexLocation.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

const child = fileURLToPath(new URL("./children/IndexUntilKilled.ts", import.meta.url))
const chunker = new ChunkerConfig({
  chunkSize: ChunkSize.make(480),
  overlap: Overlap.make(0),
  tailPolicy: "emit_short"
})

/** A JSONL corpus of `count` documents of about 4,000 characters; `version` changes every body. */
const corpus = (count: number, version: string) =>
  `${Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      id: `doc-${i}`,
      title: `Document ${i}`,
      text: Array.from({ length: 80 }, (_, s) => `Sentence ${s} of document ${i}, ${version}, with some words.`).join(
        " "
      )
    })
  ).join("\n")}\n`

/**
 * A JSONL corpus of `count` documents of about 6,500 characters of made-up words, which compress about as badly as
 * real text: enough of them overflow SQLite's page cache, so a run writes pages into the file before it commits. The
 * words come from a pool of 65,536: every word new (half a million of them) made the run's vocabulary alone fill a
 * segment, and the run spent most of its time writing one before it could be killed.
 */
const noisyCorpus = (count: number) => {
  let seed = 12345
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0)
  const word = () => Array.from({ length: 3 + (next() % 6) }, () => String.fromCharCode(97 + (next() % 26))).join("")
  const pool = Array.from({ length: 1 << 16 }, word)
  return `${Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      id: `doc-${i}`,
      title: `Document ${i}`,
      text: Array.from({ length: 1000 }, () => pool[next() >>> 16]).join(" ")
    })
  ).join("\n")}\n`
}

/**
 * Starts the child, waits until it says it is inside its write (where it then stays), runs `whileInside` (a check of
 * what the stalled run holds), kills it with SIGKILL, and resolves its signal.
 */
const runUntilKilled = <E = never>(
  indexFile: string,
  corpusFile: string,
  stopAfter: number,
  whileInside: Effect.Effect<void, E> = Effect.void
) =>
  Effect.gen(function* () {
    // Killed however the test ends: a stalled child would otherwise wait for ever.
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [child, indexFile, corpusFile, String(stopAfter)], {
          stdio: ["ignore", "pipe", "pipe"]
        })
      ),
      (proc) => Effect.sync(() => void proc.kill("SIGKILL"))
    )
    let stderr = ""
    proc.stderr.on("data", (data: Buffer) => void (stderr += data.toString()))
    const exited = Effect.callback<string, Error>((resume) => {
      proc.on("exit", (code, signal) =>
        resume(
          signal === "SIGKILL" ? Effect.succeed(signal) : Effect.fail(new Error(`child exited with ${code}: ${stderr}`))
        )
      )
    })
    const exit = yield* Effect.forkChild(exited)
    yield* Effect.callback<void>((resume) => {
      proc.stdout.on("data", (data: Buffer) => {
        if (data.toString().includes("mid-run")) resume(Effect.void)
      })
    }).pipe(Effect.raceFirst(Fiber.join(exit)))
    yield* whileInside
    proc.kill("SIGKILL")
    return yield* Fiber.join(exit)
  })

/** The index file's vector graphs (their heads, by segment) and their rows, with the rows' scan codes. */
const graphsIn = (indexFile: string) => {
  const db = new DatabaseSync(indexFile, { readOnly: true })
  try {
    return {
      heads: db.prepare("SELECT segment, config, data, layout FROM ann ORDER BY segment").all(),
      rows: db.prepare("SELECT id, data FROM ann_rows ORDER BY id").all()
    }
  } finally {
    db.close()
  }
}

const Base = Layer.mergeAll(Embedder.layerLocalSha256, DocumentSource.layer).pipe(
  Layer.provideMerge(NodeServices.layer)
)

const snapshot = (indexFile: string) =>
  Effect.gen(function* () {
    const answers = yield* Effect.forEach(
      ["sentence 3 of document 17, v1, with some", "document 299", "with some words."],
      (q) =>
        Effect.map(queryIndex(q, 10), (r) =>
          r.results.map((x) => [x.score, x.chunk.docId, x.chunk.start, x.chunk.text])
        )
    )
    const store = yield* IndexStore
    return { answers, manifest: yield* store.manifest, documents: yield* store.documents }
  }).pipe(Effect.provide(layerIndexStore(indexFile)))

describe("crash safety", () => {
  it.effect(
    "a SIGKILL in the middle of re-indexing megabytes of documents leaves the index as it was",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-crash-" })
        const indexFile = `${dir}/index.db`
        yield* fs.writeFileString(`${dir}/corpus.jsonl`, corpus(300, "v1"))
        // With an approximate vector index: its graphs and their scan codes are written in the same transaction, so
        // they survive alike. (A small graph: what is tested is that it survives, not how well it finds.)
        const ann = { ...DEFAULT_ANN, m: 8, efConstruction: 16, codes: "i8" as const }
        yield* indexPaths([`${dir}/corpus.jsonl`], { chunker, ann }).pipe(Effect.provide(layerSqlite(indexFile)))
        const before = { ...(yield* snapshot(indexFile)), graphs: graphsIn(indexFile) }
        assert.strictEqual(before.documents.length, 300)
        assert.isNotEmpty(before.graphs.heads)
        assert.isNotEmpty(before.graphs.rows)
        assert.isTrue(before.graphs.heads.every((graph) => graph["layout"] === "rows+i8"))

        // Every document changes, so the killed run had rewritten most of the index inside its transaction.
        yield* fs.writeFileString(`${dir}/corpus.jsonl`, corpus(400, "v2"))
        const signal = yield* runUntilKilled(indexFile, `${dir}/corpus.jsonl`, 5)
        assert.strictEqual(signal, "SIGKILL")
        // The killed run was inside its write transaction (it stalls in the embedder, which runs inside it); what it had
        // written is in the write-ahead log or still in memory, and neither may show.
        assert.isTrue(yield* fs.exists(`${indexFile}-wal`), "the killed run had opened the index for writing")

        const after = { ...(yield* snapshot(indexFile)), graphs: graphsIn(indexFile) }
        assert.deepStrictEqual(after, before)

        // And the index still takes the next run normally.
        const report = yield* indexPaths([`${dir}/corpus.jsonl`], { chunker }).pipe(
          Effect.provide(layerSqlite(indexFile))
        )
        assert.deepStrictEqual([report.plan.added.length, report.plan.updated.length], [100, 300])
      }).pipe(Effect.provide(Base)),
    120_000
  )

  it.effect(
    "a SIGKILL during the very first run leaves no index rather than half of one",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-crash-" })
        const indexFile = `${dir}/index.db`
        yield* fs.writeFileString(`${dir}/corpus.jsonl`, noisyCorpus(800))
        yield* runUntilKilled(indexFile, `${dir}/corpus.jsonl`, 12)
        // A new file is written through a rollback journal: the killed run had written pages into the file itself.
        assert.isAbove(Number((yield* fs.stat(indexFile)).size), 0, "the killed run wrote into the file")
        assert.isTrue(yield* fs.exists(`${indexFile}-journal`), "and left its journal")
        const error = yield* Effect.flip(queryIndex("anything", 3).pipe(Effect.provide(layerSqlite(indexFile))))
        assert.strictEqual(error._tag, "IndexMissing")
        assert.isFalse(yield* fs.exists(`${indexFile}-journal`), "the query played the journal back")

        // And the file takes a first run again.
        yield* fs.writeFileString(`${dir}/corpus.jsonl`, noisyCorpus(10))
        const report = yield* indexPaths([`${dir}/corpus.jsonl`], { chunker }).pipe(
          Effect.provide(layerSqlite(indexFile))
        )
        assert.strictEqual(report.plan.added.length, 10)
      }).pipe(Effect.provide(Base)),
    60_000
  )
})

describePg("crash safety in PostgreSQL", () => {
  it.effect(
    "a SIGKILL in the middle of re-indexing leaves the index as it was, and frees the write lock",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-crash-" })
        const { schema, url } = yield* freshSchema
        yield* fs.writeFileString(`${dir}/corpus.jsonl`, corpus(150, "v1"))
        // With graphs, written in the same transaction as the documents, so they survive alike.
        const ann = { ...DEFAULT_ANN, m: 8, efConstruction: 16 }
        yield* indexPaths([`${dir}/corpus.jsonl`], { chunker, ann }).pipe(Effect.provide(layerIndexStore(url)))
        const graphs = onServer((sql) =>
          Effect.map(
            sql`SELECT id, first_doc, docs, counts, graph, codes FROM ${sql(`${schema}.ann`)} ORDER BY id`,
            (rows) => rows.map((row) => ({ ...row }))
          )
        )
        const before = { ...(yield* snapshot(url)), graphs: yield* graphs }
        assert.strictEqual(before.documents.length, 150)
        assert.isNotEmpty(before.graphs)

        yield* fs.writeFileString(`${dir}/corpus.jsonl`, corpus(200, "v2"))
        // While the child waits to be killed it holds the index's write lock: it is inside its write transaction.
        const signal = yield* runUntilKilled(
          url,
          `${dir}/corpus.jsonl`,
          2,
          Effect.gen(function* () {
            assert.strictEqual(yield* writeLocks(schema, true), 1, "the stalled run holds the write lock")
          })
        )
        assert.strictEqual(signal, "SIGKILL")
        // The server notices the dead connection on its own time; a write lock it kept would stop every later run.
        while ((yield* writeLocks(schema, true)) > 0) yield* Effect.sleep("10 millis")

        assert.deepStrictEqual({ ...(yield* snapshot(url)), graphs: yield* graphs }, before)
        // The server rolled the dead run back: the next run goes ahead.
        const report = yield* indexPaths([`${dir}/corpus.jsonl`], { chunker }).pipe(
          Effect.provide(layerIndexStore(url))
        )
        assert.deepStrictEqual([report.plan.added.length, report.plan.updated.length], [50, 150])
      }).pipe(Effect.provide(Base)),
    120_000
  )
})
