/**
 * An index in PostgreSQL with an approximate vector index: graphs stored with their codes in the run's transaction, the
 * same graphs from the same documents, exact scores, graphs kept in step with added, changed and deleted documents,
 * filters that stay exact, shards that walk only for their own documents, and damage reported as damage.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, it } from "@effect/vitest"
import { DEFAULT_ANN } from "@funcpipe/domain/Manifest"
import { parseRule } from "@funcpipe/domain/RuleParser"
import { describePg, freshSchema, onServer } from "@funcpipe/test-kit/PgFixture"
import { Effect, FileSystem, Layer, Option, Result } from "effect"
import { makePartitionReader } from "../src/cluster/PgPartition.ts"
import { mergeHits, shardOf } from "../src/cluster/Shards.ts"
import { Embedder } from "../src/models/Embedder.ts"
import { checkIndex, isSound } from "../src/programs/CheckIndex.ts"
import { type IndexOptions, indexPaths } from "../src/programs/IndexRun.ts"
import { type QueryOptions, queryIndex } from "../src/programs/QueryIndex.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { topVectors } from "../src/search/VectorScan.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerPostgres } from "../src/store/postgres/PgIndexStore.ts"
import { IndexCorrupt } from "../src/store/StoreErrors.ts"

/** `ids` as documents of distinct words (so their vectors are distinct and a walk must choose where it goes). */
const jsonl = (ids: ReadonlyArray<number>, changed: ReadonlySet<number> = new Set()) =>
  ids
    .map((id) => {
      const salt = changed.has(id) ? 500 : 0
      const text = Array.from({ length: 6 }, (_, j) => `w${(id * 7919 + j * 104_729 + salt) % 997}`).join(" ")
      return JSON.stringify({ doc_id: `d${id}`, title: `Note ${id}`, text })
    })
    .join("\n")

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i)

const on = (url: string) =>
  Effect.provide(Layer.mergeAll(layerPostgres(url), Embedder.layerLocalSha256, DocumentSource.layer))

/** Indexes `content` (as `docs.jsonl` in `dir`) into the index at `url`. */
const write = (url: string, dir: string, content: string, options: IndexOptions = {}) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.writeFileString(`${dir}/docs.jsonl`, content)
    return yield* indexPaths([`${dir}/docs.jsonl`], { prune: true, ...options }).pipe(on(url))
  })

/** A fresh schema and folder, with `content` indexed there with graphs. */
const built = (content: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-pgann-" })
    const { schema, url } = yield* freshSchema
    yield* write(url, dir, content, { ann: DEFAULT_ANN })
    return { dir, schema, url }
  })

/** The stored graphs of the index in `schema`, in their order: id, documents, graph and codes. */
const graphRows = (schema: string) =>
  onServer((sql) =>
    sql<{ id: string; docs: Uint8Array; graph: Uint8Array; codes: Uint8Array }>`
      SELECT id::text AS id, docs, graph, codes FROM ${sql(`${schema}.ann`)} ORDER BY first_doc`.pipe(
      Effect.map((rows) => rows.map((row) => ({ ...row })))
    )
  )

const ask = (url: string, text: string, options: QueryOptions, k = 10) =>
  queryIndex(text, k, { mode: "vector", ...options }).pipe(
    on(url),
    Effect.map((answer) => answer.results.map((r) => [r.chunk.docId, r.score] as const))
  )

/** The text of document `id` as `jsonl` writes it (changed: as changed). */
const textOf = (id: number, changed = false) => JSON.parse(jsonl([id], new Set(changed ? [id] : [])))["text"] as string

const TEXTS = ["w1 w2 w3", "w10 w500", "w77 w78 w79 w80", "w900 w3 w41", "w5", "w600 w601"]

describePg("an index in PostgreSQL with an approximate vector index", () => {
  it.live(
    "stores the same graphs from the same documents, and every score it returns is the exact one",
    () =>
      Effect.gen(function* () {
        const one = yield* built(jsonl(range(0, 300)))
        const two = yield* built(jsonl(range(0, 300)))
        const graphs = yield* graphRows(one.schema)
        assert.strictEqual(graphs.length, 1)
        const strip = (rows: typeof graphs) => rows.map(({ codes, docs, graph }) => ({ codes, docs, graph }))
        assert.deepStrictEqual(strip(yield* graphRows(two.schema)), strip(graphs))
        // Graphs in PostgreSQL are walked over their codes, and the manifest says so.
        const manifest = Option.getOrThrow(yield* IndexStore.use((store) => store.manifest).pipe(on(one.url)))
        assert.deepStrictEqual(manifest.ann, { ...DEFAULT_ANN, codes: "i8" })
        for (const text of TEXTS) {
          const exact = yield* ask(one.url, text, { exact: true })
          // Every row looked at: the very rows, scores (bit for bit) and order.
          assert.deepStrictEqual(yield* ask(one.url, text, { annCandidates: 1000 }), exact)
          const approximate = yield* ask(one.url, text, { annCandidates: 16 })
          const everyScore = new Map(yield* ask(one.url, text, { exact: true }, 300))
          for (const [docId, score] of approximate) assert.strictEqual(score, everyScore.get(docId))
          for (let i = 1; i < approximate.length; i++) assert.isAtLeast(approximate[i - 1]![1], approximate[i]![1])
        }
        const report = yield* checkIndex({ queries: 8 }).pipe(on(one.url))
        assert.isTrue(isSound(report), JSON.stringify(report.checks))
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    30_000
  )

  it.live(
    "keeps its graphs in step with added, changed and deleted documents, never returning a row that is gone",
    () =>
      Effect.gen(function* () {
        const { dir, schema, url } = yield* built(jsonl(range(0, 200)))
        const first = yield* graphRows(schema)
        assert.strictEqual(first.length, 1)
        // A few documents deleted and one changed: the graph that holds their old rows stays, and walks through them;
        // the changed document's new row gets a graph of its own.
        const kept = range(0, 200).filter((id) => id < 10 || id >= 40)
        yield* write(url, dir, jsonl(kept, new Set([3])))
        const changed = yield* graphRows(schema)
        assert.strictEqual(changed.length, 2)
        assert.deepStrictEqual(changed[0], first[0])
        const live = new Set(kept.map((id) => `d${id}`))
        for (const text of [...TEXTS, textOf(3), textOf(3, true), textOf(20)]) {
          const exact = yield* ask(url, text, { exact: true })
          assert.deepStrictEqual(yield* ask(url, text, { annCandidates: 1000 }), exact)
          for (const [docId] of yield* ask(url, text, { annCandidates: 8 })) assert.isTrue(live.has(docId), docId)
        }
        // Each graph row maps to its own chunk: a live document's own text finds it first, at a narrow walk too.
        for (const id of [0, 5, 45, 120, 199])
          assert.strictEqual((yield* ask(url, textOf(id, id === 3), { annCandidates: 8 }, 1))[0]?.[0], `d${id}`)
        // The changed document is found by its new text, with its exact score (its old row is never returned).
        const found = yield* ask(url, textOf(3, true), { annCandidates: 1000 }, 1)
        assert.deepStrictEqual(found, yield* ask(url, textOf(3, true), { exact: true }, 1))
        assert.strictEqual(found[0]![0], "d3")
        // Added documents would make a third graph under half full: the two smallest are built again as one.
        const more = [...kept, ...range(200, 260)]
        yield* write(url, dir, jsonl(more, new Set([3])))
        const regrouped = yield* graphRows(schema)
        assert.strictEqual(regrouped.length, 2)
        assert.deepStrictEqual(regrouped[0], first[0])
        assert.notStrictEqual(regrouped[1]!.id, changed[1]!.id)
        // Most of that graph's documents deleted: it is built again from the rows still there.
        const few = more.filter((id) => id < 5 || id >= 180)
        yield* write(url, dir, jsonl(few, new Set([3])))
        const rebuilt = yield* graphRows(schema)
        assert.strictEqual(rebuilt.length, 2)
        assert.isFalse(rebuilt.some((row) => row.id === first[0]!.id))
        assert.isTrue(rebuilt.some((row) => row.id === regrouped[1]!.id))
        assert.strictEqual(
          rebuilt.reduce((n, row) => n + row.docs.byteLength, 0),
          8 * few.length
        )
        for (const text of TEXTS)
          assert.deepStrictEqual(yield* ask(url, text, { annCandidates: 1000 }), yield* ask(url, text, { exact: true }))
        const report = yield* checkIndex({ queries: 8 }).pipe(on(url))
        assert.isTrue(isSound(report), JSON.stringify(report.checks))
        // Without graphs again (a rebuild), the index keeps none.
        yield* write(url, dir, jsonl(few), { ann: "exact", rebuild: true })
        assert.deepStrictEqual(yield* graphRows(schema), [])
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    30_000
  )

  it.live(
    "never returns a chunk a filter refuses, and each shard walks for its own documents only",
    () =>
      Effect.gen(function* () {
        const { url } = yield* built(jsonl(range(0, 300)))
        const rule = Result.getOrThrow(parseRule("title ^= 'Note 1'"))
        for (const text of TEXTS) {
          const filtered = yield* ask(url, text, { annCandidates: 16, where: rule })
          for (const [docId] of filtered) assert.isTrue(docId.startsWith("d1"), docId)
          assert.deepStrictEqual(
            yield* ask(url, text, { annCandidates: 1000, where: rule }),
            yield* ask(url, text, { exact: true, where: rule })
          )
        }
        // Three shards, each holding a third of the documents and walking the whole graph for them.
        const reader = yield* makePartitionReader(url)
        const shards = yield* Effect.forEach([0, 1, 2], (shard) =>
          Effect.map(reader.load(shard, 3), (p) => Option.getOrThrow(p).snapshot)
        )
        const whole = Option.getOrThrow(yield* Effect.scoped(IndexStore.use((store) => store.snapshot)).pipe(on(url)))
        for (const text of TEXTS) {
          const [query] = yield* Embedder.use((e) => e.embedMany([text])).pipe(on(url))
          const hitsOf = (shard: number, ef: number) =>
            topVectors(shards[shard]!, query!.vector, 10, undefined, ef).map(({ position, score }) => {
              const key = shards[shard]!.keyOf(position)
              assert.strictEqual(shardOf(key.docId, 3), shard)
              return { score, docId: key.docId, start: key.start, end: key.end, text: key.text, title: "" }
            })
          const undivided = topVectors(whole, query!.vector, 10).map(({ position, score }) => [
            whole.keyOf(position).docId,
            score
          ])
          // Where each walk may look at every row, the merged answer is the undivided index's exact one.
          const merged = mergeHits(
            [0, 1, 2].map((shard) => hitsOf(shard, 1000)),
            10
          )
          assert.deepStrictEqual(
            merged.map((hit) => [hit.docId, hit.score]),
            undivided
          )
          // At a small efSearch each shard still answers with its own documents, scored exactly, and finds a document
          // of its own by that document's own text.
          const exactScores = new Map(
            topVectors(whole, query!.vector, 300).map(({ position, score }) => [whole.keyOf(position).docId, score])
          )
          for (const shard of [0, 1, 2]) {
            const hits = hitsOf(shard, 8)
            assert.strictEqual(hits.length, 10)
            for (const hit of hits) assert.strictEqual(hit.score, exactScores.get(hit.docId))
          }
        }
        for (const id of [1, 2, 77, 150, 299]) {
          const [query] = yield* Embedder.use((e) => e.embedMany([textOf(id)])).pipe(on(url))
          const shard = shardOf(`d${id}`, 3)
          const [top] = topVectors(shards[shard]!, query!.vector, 1, undefined, 8)
          assert.strictEqual(shards[shard]!.keyOf(top!.position).docId, `d${id}`)
        }
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    30_000
  )

  it.live(
    "reports damaged graphs and codes as damage, while exact queries still answer",
    () =>
      Effect.gen(function* () {
        const { dir, schema, url } = yield* built(jsonl(range(0, 120)))
        // A graph stored twice: approximate queries fail as damage, exact ones answer, and the next run builds anew.
        const ann = (sql: Parameters<Parameters<typeof onServer>[0]>[0]) => sql(`${schema}.ann`)
        yield* onServer(
          (sql) => sql`INSERT INTO ${ann(sql)} (first_doc, config, docs, counts, graph, codes)
          SELECT first_doc + 1, config, docs, counts, graph, codes FROM ${ann(sql)}`
        )
        const twice = yield* Effect.flip(ask(url, "w1 w2", { annCandidates: 16 }))
        assert.include(twice.message, "holds chunks another graph holds")
        assert.strictEqual((yield* ask(url, "w1 w2", { exact: true })).length, 10)
        yield* write(url, dir, jsonl(range(0, 121)))
        assert.strictEqual((yield* graphRows(schema)).length, 2)
        assert.strictEqual((yield* ask(url, "w1 w2", { annCandidates: 16 })).length, 10)
        yield* onServer((sql) => sql`UPDATE ${sql(`${schema}.ann`)} SET codes = substring(codes from 1 for 10)`)
        const damaged = yield* Effect.flip(ask(url, "w1 w2", { annCandidates: 16 }))
        assert.instanceOf(damaged, IndexCorrupt)
        assert.include(damaged.message, "scan codes")
        assert.strictEqual((yield* ask(url, "w1 w2", { exact: true })).length, 10)
        const checked = yield* checkIndex({ queries: 2 }).pipe(on(url))
        assert.isFalse(isSound(checked))
        assert.include(JSON.stringify(checked.checks), "scan codes")
        yield* onServer((sql) => sql`UPDATE ${sql(`${schema}.ann`)} SET graph = substring(graph from 1 for 20)`)
        assert.instanceOf(yield* Effect.flip(ask(url, "w1 w2", { annCandidates: 16 })), IndexCorrupt)
        // A graph whose documents do not match its rows.
        yield* onServer((sql) => sql`UPDATE ${sql(`${schema}.ann`)} SET docs = substring(docs from 1 for 3)`)
        const mismatched = yield* Effect.flip(ask(url, "w1 w2", { annCandidates: 16 }))
        assert.include(mismatched.message, "its documents do not read")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    30_000
  )
})
