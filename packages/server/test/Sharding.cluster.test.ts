/**
 * Sharded serving with real processes: two runner processes on 127.0.0.1 host the shards of a PostgreSQL index, this
 * process is the entry point. Answers over 1, 2 and 8 shards equal the single-node answers to the bit, in every mode,
 * ties included; a runner killed under load costs errors for a bounded time, never a wrong or partial answer; a
 * committed run is seen by every shard of a query at once. Run by `npm run test:cluster` (CI runs it).
 */

import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, it } from "@effect/vitest"
import { type AnswerView, answerJson } from "@funcpipe/domain/Answer"
import { ChunkerConfig, ChunkSize, Overlap } from "@funcpipe/domain/Config"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { DEFAULT_ANN } from "@funcpipe/domain/Manifest"
import { rankingOrder } from "@funcpipe/domain/Ranking"
import { anyOf, eq, type Rule, startsWith } from "@funcpipe/domain/Rule"
import { shardOf } from "@funcpipe/pipeline/cluster/Shards"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { type IndexOptions, indexPaths } from "@funcpipe/pipeline/programs/IndexRun"
import { queryIndex } from "@funcpipe/pipeline/programs/QueryIndex"
import { queryShards } from "@funcpipe/pipeline/programs/ShardedQuery"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { layerPostgres } from "@funcpipe/pipeline/store/postgres/PgIndexStore"
import { describePg, freshSchema, onServer } from "@funcpipe/test-kit/PgFixture"
import { Clock, Effect, Layer, Result, Stream } from "effect"
import { clusterPrefix, layerEntry } from "../src/Cluster.ts"

type Corpus = ReadonlyArray<readonly [docId: string, body: string]>

const runnerScript = fileURLToPath(new URL("./children/ShardRunner.ts", import.meta.url))
const chunker = new ChunkerConfig({ chunkSize: ChunkSize.make(24), overlap: Overlap.make(4), tailPolicy: "emit_short" })
const LOCK_SECONDS = 6

const words = ["alpha", "beta", "gamma", "delta", "omega", "zeta", "kappa", "sigma", "tau", "rho", "über", "naïve"]

/**
 * 120 documents over a small vocabulary (so terms have every document frequency), with whole texts repeated across
 * documents and ids outside the BMP, so every mode meets score ties that only the doc id, span or text break.
 */
const corpusOf = (seed: number): Corpus =>
  Array.from({ length: 120 }, (_, i) => {
    let x = (i + 1) * 2654435761 + seed
    const body = Array.from({ length: 6 + (i % 9) }, () => {
      x = (x * 1103515245 + 12345) % 2147483648
      return words[x % words.length]!
    }).join(" ")
    const id = i % 7 === 0 ? `doc-😀-${i}` : i % 5 === 0 ? `doc-～-${i}` : `doc-${i}`
    return [id, i % 10 < 3 ? "alpha beta gamma delta" : body] as const
  })

const sourceOf = (state: { corpus: Corpus }) =>
  Layer.succeed(
    DocumentSource,
    DocumentSource.of({
      read: () =>
        Stream.suspend(() =>
          Stream.fromIterable(
            state.corpus.map(([docId, body]) =>
              Result.succeed({
                source: "mem",
                line: 0,
                doc: new RawDoc({ docId: DocId.make(docId), title: `title of ${docId}`, body, categories: null })
              })
            )
          )
        ),
      size: () => Effect.succeed(0)
    })
  )

const modes = ["lexical", "vector", "hybrid"] as const
const queries = [
  ["alpha beta", 10],
  ["alpha beta gamma delta", 5],
  ["omega über", 50],
  ["naïve kappa tau", 3],
  ["rho", 200]
] as const
/** Each query in each mode, and the first two again with a filter (a document's chunks all lie in one shard). */
const filter = anyOf([startsWith("doc_id", "doc-😀"), eq("doc_id", "doc-3")])
const cases = [
  ...queries.flatMap(([q, k]) => modes.map((mode) => [q, k, mode, undefined] as const)),
  ...queries.slice(0, 2).flatMap(([q, k]) => modes.map((mode) => [q, k, mode, filter] as const))
]

type Row = readonly [score: number, docId: string, start: number, end: number, text: string]

/** A query under load: when it ended (ms after the kill, -1 before), how long it took, and how it ended. */
interface Outcome {
  readonly at: number
  readonly ms: number
  readonly exact: boolean
  readonly error?: string
}

const rowsOf = (answer: AnswerView): Array<Row> =>
  answer.results.map((r) => [r.score, r.chunk.docId, r.chunk.start, r.chunk.end, r.chunk.text] as Row)

const singleAnswer = (q: string, k: number, mode: (typeof modes)[number], where?: Rule) =>
  queryIndex(q, k, { mode, ...(where === undefined ? {} : { where }) })

const single = (q: string, k: number, mode: (typeof modes)[number], where?: Rule) =>
  Effect.map(singleAnswer(q, k, mode, where), rowsOf)

const sharded = (q: string, k: number, mode: (typeof modes)[number], shards: number, where?: Rule) =>
  Effect.map(
    queryShards(q, k, { mode, shards, timeout: "60 seconds", ...(where === undefined ? {} : { where }) }),
    (answer) => ({ token: answer.token, answer, rows: rowsOf(answer) })
  )

const freePort = () =>
  Effect.callback<number>((resume) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resume(Effect.succeed(port)))
    })
  })

/** A runner process, killed (SIGKILL) when the scope closes if still alive; resolves once it prints "ready". */
const startRunner = (url: string, weight = 1) =>
  Effect.gen(function* () {
    const port = yield* freePort()
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(
          process.execPath,
          ["-C", "@funcpipe/source", runnerScript, url, String(port), String(LOCK_SECONDS), String(weight)],
          { stdio: ["ignore", "pipe", "pipe"] }
        )
      ),
      (proc) => Effect.sync(() => proc.exitCode === null && proc.kill("SIGKILL"))
    )
    let errors = ""
    proc.stderr!.on("data", (chunk) => (errors += String(chunk)))
    yield* Effect.callback<void, Error>((resume) => {
      proc.stdout!.on("data", (chunk) => String(chunk).includes("ready") && resume(Effect.void))
      proc.on("exit", (code) => resume(Effect.fail(new Error(`runner exited with ${code}: ${errors}`))))
    })
    return proc
  })

const kill = (proc: ChildProcess) =>
  Effect.callback<void>((resume) => {
    proc.on("exit", () => resume(Effect.void))
    proc.kill("SIGKILL")
  })

/** The index in a fresh schema, its cluster tables dropped when the scope closes. */
const indexed = (state: { corpus: Corpus }, options: Omit<IndexOptions, "chunker"> = {}) =>
  Effect.gen(function* () {
    const { url } = yield* freshSchema
    const prefix = clusterPrefix({ index: url })
    yield* Effect.addFinalizer(() =>
      Effect.orDie(
        onServer((sql) =>
          Effect.gen(function* () {
            const tables = yield* sql<{ readonly name: string }>`
            SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND starts_with(tablename, ${prefix})`
            for (const { name } of tables) yield* sql`DROP TABLE IF EXISTS ${sql(name)} CASCADE`
          })
        )
      )
    )
    yield* indexPaths(["corpus"], { chunker, ...options }).pipe(
      Effect.provide(Layer.merge(layerPostgres(url), sourceOf(state)))
    )
    return url
  })

/** The schema a test URL names. */
const parsed = (url: string) => ({ schema: new URL(url).searchParams.get("schema")! })

const local = Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)

describePg("sharded serving", () => {
  it.live(
    "1, 2 and 8 shards on 2 runner processes answer as one node does, to the bit, in every mode",
    () =>
      Effect.gen(function* () {
        const state = { corpus: corpusOf(1) }
        const url = yield* indexed(state)
        const answers = yield* Effect.forEach(cases, ([q, k, mode, where]) => singleAnswer(q, k, mode, where)).pipe(
          Effect.provide(layerPostgres(url))
        )
        const expected = answers.map(rowsOf)
        // Ties: some answer has equal scores in a row in each mode.
        for (const mode of modes) {
          const lists = expected.filter((_, i) => cases[i]![2] === mode)
          assert.isTrue(
            lists.some((rows) => rows.some((row, i) => i > 0 && row[0] === rows[i - 1]![0])),
            `${mode} ties`
          )
        }
        for (const rows of expected) {
          const keys = rows.map(([score, docId, start, end, text]) => ({ score, docId, start, end, text }))
          assert.deepStrictEqual([...keys].sort(rankingOrder), keys)
        }
        // The filter leaves some chunks, and only its documents'.
        cases.forEach(([, , , where], i) => {
          if (where === undefined) return
          assert.isAbove(expected[i]!.length, 0)
          for (const [, docId] of expected[i]!) assert.isTrue(docId.startsWith("doc-😀") || docId === "doc-3", docId)
        })
        // Every shard of 8 holds documents, and the corpus is spread over both runners' shards.
        assert.strictEqual(new Set(state.corpus.map(([id]) => shardOf(id, 8))).size, 8)
        yield* startRunner(url)
        yield* startRunner(url)
        yield* Effect.gen(function* () {
          for (const shards of [1, 2, 8]) {
            const got = yield* Effect.forEach(cases, ([q, k, mode, where]) => sharded(q, k, mode, shards, where))
            cases.forEach(([q, k, mode, where], i) => {
              const name = `${shards} shards, ${mode} "${q}" top ${k}${where === undefined ? "" : " filtered"}`
              assert.deepStrictEqual(got[i]!.rows, expected[i]!, name)
              // The same answer shape as an unsharded query, field for field (what --json and the text lines print).
              assert.deepStrictEqual(answerJson(got[i]!.answer), answerJson(answers[i]!), `${name}: its JSON`)
            })
          }
        }).pipe(Effect.provide(layerEntry({ index: url })))
      }).pipe(Effect.provide(local)),
    180_000
  )

  it.live(
    "an index with graphs: each shard walks them for its documents, and the merged answer is scored exactly",
    () =>
      Effect.gen(function* () {
        const state = { corpus: corpusOf(5) }
        const url = yield* indexed(state, { ann: DEFAULT_ANN })
        const asked = [
          ["alpha beta", 10, "vector"],
          ["omega über kappa", 20, "vector"],
          ["alpha beta gamma delta", 10, "hybrid"]
        ] as const
        const store = Effect.provide(layerPostgres(url))
        const exact = yield* Effect.forEach(asked, ([q, k, mode]) =>
          Effect.map(queryIndex(q, k, { mode, exact: true }), rowsOf)
        ).pipe(store)
        // Every chunk's exact cosine, to hold each walked answer's scores to.
        const cosines = yield* Effect.forEach(asked, ([q]) =>
          Effect.map(
            queryIndex(q, 10_000, { mode: "vector", exact: true }),
            (answer) => new Map(rowsOf(answer).map(([score, docId, start]) => [`${docId} ${start}`, score]))
          )
        ).pipe(store)
        yield* startRunner(url)
        yield* startRunner(url)
        yield* Effect.gen(function* () {
          for (const shards of [2, 8]) {
            for (const [i, [q, k, mode]] of asked.entries()) {
              const name = `${shards} shards, ${mode} "${q}"`
              // Where each walk may look at every row, the answer is the exact one, to the bit.
              const all = yield* queryShards(q, k, { mode, shards, annCandidates: 10_000, timeout: "60 seconds" })
              assert.deepStrictEqual(rowsOf(all), exact[i]!, name)
              // At a small efSearch, every vector score is the chunk's exact cosine, in the ranking order.
              const walked = rowsOf(yield* queryShards(q, k, { mode, shards, annCandidates: 4, timeout: "60 seconds" }))
              assert.isAbove(walked.length, 0, name)
              const keys = walked.map(([score, docId, start, end, text]) => ({ score, docId, start, end, text }))
              assert.deepStrictEqual([...keys].sort(rankingOrder), keys, name)
              if (mode === "vector")
                for (const [score, docId, start] of walked)
                  assert.strictEqual(score, cosines[i]!.get(`${docId} ${start}`), name)
            }
          }
          // The runners walk the graphs: a new version whose graphs' codes are damaged fails as damage when walked,
          // and still answers when every vector is scored.
          state.corpus = corpusOf(6)
          yield* indexPaths(["corpus"], { chunker }).pipe(
            Effect.provide(Layer.merge(layerPostgres(url), sourceOf(state)))
          )
          const { schema } = parsed(url)
          yield* onServer((sql) => sql`UPDATE ${sql(`${schema}.ann`)} SET codes = substring(codes from 1 for 10)`)
          const failed = yield* Effect.flip(
            queryShards("alpha", 5, { mode: "vector", shards: 2, timeout: "60 seconds" })
          )
          assert.include(failed.message, "scan codes")
          const scanned = yield* queryShards("alpha", 5, {
            mode: "vector",
            shards: 2,
            exact: true,
            timeout: "60 seconds"
          })
          assert.strictEqual(scanned.results.length, 5)
        }).pipe(Effect.provide(layerEntry({ index: url })))
      }).pipe(Effect.provide(local)),
    180_000
  )

  it.live(
    "a runner killed under load: every answer is exact or a clear error, and answers are exact again",
    () =>
      Effect.gen(function* () {
        const state = { corpus: corpusOf(2) }
        const url = yield* indexed(state)
        const [q, k] = ["alpha beta gamma", 20] as const
        const expected = yield* Effect.forEach(modes, (mode) => single(q, k, mode)).pipe(
          Effect.provide(layerPostgres(url))
        )
        yield* startRunner(url)
        // The victim takes 4 in 5 of the cluster's shards, so it surely hosts some of the 8 index shards.
        const victim = yield* startRunner(url, 4)
        const outcomes = yield* Effect.gen(function* () {
          // Warm: every shard loaded and answering.
          for (const mode of modes) {
            assert.deepStrictEqual((yield* sharded(q, k, mode, 8)).rows, expected[modes.indexOf(mode)]!)
          }
          const outcomes: Array<Outcome> = []
          let killedAt = 0
          let exactAfter = 0
          for (let i = 0; exactAfter < 20 && i < 400; i++) {
            if (i === 10) {
              yield* kill(victim)
              killedAt = yield* Clock.currentTimeMillis
            }
            const mode = modes[i % 3]!
            const started = yield* Clock.currentTimeMillis
            const result = yield* Effect.result(
              Effect.map(queryShards(q, k, { mode, shards: 8, timeout: "3 seconds" }), rowsOf)
            )
            const ended = yield* Clock.currentTimeMillis
            const exact = Result.isSuccess(result)
            if (exact) assert.deepStrictEqual(result.success, expected[modes.indexOf(mode)]!, `query ${i} (${mode})`)
            outcomes.push({
              at: killedAt === 0 ? -1 : ended - killedAt,
              ms: ended - started,
              exact,
              ...(Result.isFailure(result) ? { error: `${result.failure._tag}: ${result.failure.message}` } : {})
            })
            if (killedAt > 0 && exact) exactAfter++
          }
          return outcomes
        }).pipe(Effect.provide(layerEntry({ index: url })))
        const afterKill = outcomes.filter((o) => o.at >= 0)
        const errors = afterKill.filter((o) => !o.exact)
        // Recovered: the first exact answer after the last error, timed from the kill.
        const lastError = afterKill.findLastIndex((o) => !o.exact)
        const recovered = afterKill.slice(lastError + 1).find((o) => o.exact)
        const slowest = Math.max(...outcomes.map((o) => o.ms))
        console.log(
          `runner kill: ${afterKill.length} queries after the kill, ${errors.length} errors ` +
            `(${[...new Set(errors.map((e) => e.error!.split(":")[0]))].join(", ")}), ` +
            `exact again ${recovered?.at} ms after ` +
            `the kill, slowest query ${slowest} ms; timeline (ms after kill, ms taken, ok): ` +
            afterKill
              .slice(0, 12)
              .map((o) => `${o.at}/${o.ms}/${o.exact ? "ok" : "err"}`)
              .join(" ")
        )
        assert.isDefined(recovered)
        // The victim hosted shards: queries failed or waited for their reassignment.
        assert.isTrue(errors.length > 0 || afterKill.some((o) => o.ms > 1000), "the kill was felt")
        // Every query ended (answer or error) within its 3 s bound plus scheduling slack: none waits for the lock expiry.
        assert.isBelow(slowest, 10_000)
        for (const e of errors) assert.match(e.error!, /^(ShardsUnavailable|ShardConnectionLost)/)
      }).pipe(Effect.provide(local)),
    240_000
  )

  it.live(
    "a committed run is seen by every shard of a query at once: no answer mixes two versions",
    () =>
      Effect.gen(function* () {
        const state = { corpus: corpusOf(3) }
        const url = yield* indexed(state)
        const store = layerPostgres(url)
        const [q, k] = ["alpha beta", 30] as const
        const before = yield* single(q, k, "lexical").pipe(Effect.provide(store))
        yield* startRunner(url)
        yield* startRunner(url)
        const next = corpusOf(4)
        const seen = yield* Effect.gen(function* () {
          assert.deepStrictEqual((yield* sharded(q, k, "lexical", 8)).rows, before)
          // Queries run while a run commits a different corpus, and go on for a few after the commit: each answer is
          // the old one or the new one, whole.
          let committed = false
          const queries = Effect.gen(function* () {
            const answers = []
            for (let after = 0; after < 3; after += committed ? 1 : 0) answers.push(yield* sharded(q, k, "lexical", 8))
            return answers
          })
          const writer = Effect.gen(function* () {
            state.corpus = next
            yield* indexPaths(["corpus"], { chunker }).pipe(Effect.provide(Layer.merge(store, sourceOf(state))))
            committed = true
          })
          const [answers] = yield* Effect.all([queries, writer], { concurrency: 2 })
          return answers
        }).pipe(Effect.provide(layerEntry({ index: url })))
        const after = yield* single(q, k, "lexical").pipe(Effect.provide(store))
        assert.notStrictEqual(JSON.stringify(after), JSON.stringify(before))
        // The last answers came after the commit, so they are the new version's.
        assert.deepStrictEqual(seen.at(-1)!.rows, after)
        const tokens = new Map<string, ReadonlyArray<Row>>()
        for (const { rows, token } of seen) {
          assert.isTrue(
            JSON.stringify(rows) === JSON.stringify(before) || JSON.stringify(rows) === JSON.stringify(after),
            "an answer is one version's, whole"
          )
          // One token, one answer.
          if (tokens.has(token)) assert.deepStrictEqual(rows, tokens.get(token))
          tokens.set(token, rows)
        }
        const last = yield* sharded(q, k, "lexical", 8).pipe(Effect.provide(layerEntry({ index: url })))
        assert.deepStrictEqual(last.rows, after)
      }).pipe(Effect.provide(local)),
    180_000
  )
})
