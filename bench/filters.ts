/**
 * The query-filter benchmark: the engine benchmark's corpus with category labels, indexed in process, then the same
 * word queries timed with no filter, a filter passing half the documents and one passing 0.1 %, in every mode; each
 * filtered answer is checked against the unfiltered candidates restricted to the filter.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { NodeServices } from "@effect/platform-node"
import { Bm25Params, eq, printRule, type RetrievalMode, type Rule } from "@funcpipe/domain"
import {
  analyze,
  cleanText,
  DocumentSource,
  Embedder,
  embedText,
  FUSION_DEPTH,
  indexPaths,
  keyTies,
  layerSqlite,
  layerWorkers,
  openSnapshot,
  queryIndex,
  scoreQuery,
  topChunksOf,
  topOf
} from "@funcpipe/pipeline"
import { Effect, Layer, ManagedRuntime } from "effect"
import { writeJsonlCorpus } from "./Corpus.ts"
import { pickQueries } from "./Queries.ts"
import { readChunkRows } from "./Reference.ts"
import { count, markdownTable, median, ms, p95 } from "./Table.ts"

const USAGE = `Usage: npx node -C @funcpipe/source bench/filters.ts [--mb N] [--queries N] [--seed N] [--dir PATH] [--keep]
  --mb N       corpus size in MB, as npm run bench (default 50)
  --queries N  word queries (default 20)
  --seed N     seed of the corpus and the queries (default 42)
  --dir PATH   work folder (default: funcpipe-bench-filters under the system's temporary folder)
  --keep       keep the corpus and the index`

const flags = (() => {
  try {
    return parseArgs({
      options: {
        mb: { type: "string", default: "50" },
        queries: { type: "string", default: "20" },
        seed: { type: "string", default: "42" },
        dir: { type: "string" },
        keep: { type: "boolean", default: false },
        help: { type: "boolean", default: false }
      },
      strict: true
    }).values
  } catch (error) {
    console.error(`filters: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`)
    process.exit(2)
  }
})()
if (flags.help) {
  console.log(USAGE)
  process.exit(0)
}
const MB = Number(flags.mb)
const QUERIES = Number(flags.queries)
const SEED = Number(flags.seed)
if (!(MB > 0) || !(Number.isInteger(QUERIES) && QUERIES > 0) || !(Number.isInteger(SEED) && SEED >= 0)) {
  console.error(`filters: --mb must be above 0, --queries a whole number above 0, --seed a whole number\n${USAGE}`)
  process.exit(2)
}
const DIR = resolve(flags.dir ?? join(tmpdir(), "funcpipe-bench-filters"))
const TOP_K = 10
const REPS = 5
const log = (message: string) => console.error(`filters: ${message}`)
const say = (text = "") => console.log(text)

/** Document `i` is labelled `even` or `odd` (half each) and, one in a thousand, also `rare`. */
const labelsOf = (i: number): Array<string> => [i % 2 === 0 ? "even" : "odd", ...(i % 1000 === 0 ? ["rare"] : [])]

const FILTERS: ReadonlyArray<{ readonly name: string; readonly rule: Rule | undefined }> = [
  { name: "none", rule: undefined },
  { name: "50 %", rule: eq("categories", "even") },
  { name: "0.1 %", rule: eq("categories", "rare") }
]
const MODES: ReadonlyArray<RetrievalMode> = ["lexical", "vector", "hybrid"]

mkdirSync(DIR, { recursive: true })
const corpusFile = join(DIR, `labelled-${MB}mb-seed${SEED}.jsonl`)
const indexFile = join(DIR, "index.db")

if (!existsSync(corpusFile)) {
  log(`writing ${MB} MB of labelled JSON Lines to ${corpusFile}`)
  const partial = `${corpusFile}.partial`
  await writeJsonlCorpus(partial, MB * 1e6, SEED, (i) => ({ categories: labelsOf(i) }))
  renameSync(partial, corpusFile)
}

for (const suffix of ["", "-wal", "-shm"]) rmSync(`${indexFile}${suffix}`, { force: true })
const runtime = ManagedRuntime.make(
  Layer.mergeAll(
    layerSqlite(indexFile),
    Embedder.layerLocalSha256,
    DocumentSource.layer,
    layerWorkers(new URL(import.meta.resolve("@funcpipe/pipeline/worker")))
  ).pipe(Layer.provideMerge(NodeServices.layer))
)
log("indexing in process")
const t0 = performance.now()
const report = await runtime.runPromise(indexPaths([corpusFile], { rebuild: true }))
const indexSeconds = (performance.now() - t0) / 1000

const queries = pickQueries(readChunkRows(indexFile), QUERIES, 0, SEED).filter((q) => q.kind !== "chunk text")

/** Times `f` once. */
const timed = async (f: () => Promise<unknown>): Promise<number> => {
  const start = performance.now()
  await f()
  return performance.now() - start
}

/**
 * Checks a filtered answer in lexical and vector mode: the engine's filtered top k equals the unfiltered candidates
 * restricted to the filter's positions, then the top k. Returns how many results it has.
 */
const check = (text: string, mode: RetrievalMode, rule: Rule) =>
  Effect.scoped(
    Effect.gen(function* () {
      const snapshot = yield* openSnapshot()
      const cleaned = cleanText(text)
      const query = { terms: analyze(cleaned), vector: mode === "lexical" ? undefined : embedText(cleaned).vector }
      const filter = snapshot.filter(rule)
      const scored = scoreQuery(snapshot, query, mode, Bm25Params.default, FUSION_DEPTH, undefined, filter)
      const filtered = topChunksOf(snapshot, scored, TOP_K, query)
      const all = scoreQuery(snapshot, query, mode, Bm25Params.default)
      const restricted = (visit: (p: number, s: number) => void) =>
        all.candidates((p, s) => (filter.allowed[p] === 1 ? visit(p, s) : undefined))
      const expected = topOf(restricted, TOP_K, keyTies(snapshot.keyOf))
      if (JSON.stringify(filtered) !== JSON.stringify(expected)) {
        throw new Error(`${mode} "${text}" ${printRule(rule)}: the filtered answer differs from the restricted ranking`)
      }
      return filtered.length
    })
  )

const rows: Array<Array<string>> = []
const firstRows: Array<Array<string>> = []
let checked = 0
for (const { name, rule } of FILTERS) {
  // The first query with a rule builds the per-document table and value index (once per index state) and the
  // filter's positions (then kept for repeated queries); it is shown apart from the warm figures.
  if (rule !== undefined) {
    const ask = () => runtime.runPromise(queryIndex(queries[0]!.text, TOP_K, { mode: "lexical", where: rule }))
    const first = await timed(ask)
    firstRows.push([name, printRule(rule), ms(first)])
  }
  for (const mode of MODES) {
    const times: Array<number> = []
    let results = 0
    for (const q of queries) {
      const options = { mode, ...(rule === undefined ? {} : { where: rule }) }
      const ask = () => runtime.runPromise(queryIndex(q.text, TOP_K, options))
      const answer = await ask()
      results += answer.results.length
      for (let r = 0; r < REPS; r++) times.push(await timed(ask))
      if (rule !== undefined && mode !== "hybrid") {
        await runtime.runPromise(check(q.text, mode, rule))
        checked++
      }
    }
    const perQuery = (results / queries.length).toFixed(1)
    rows.push([name, mode, String(queries.length), perQuery, ms(median(times)), ms(p95(times))])
  }
  log(`timed filter ${name}`)
}

const load = loadavg()
  .map((x) => x.toFixed(2))
  .join(" ")
say(`# Query filters (${new Date().toISOString()}, ${cpus().length} cores, load average ${load} at the end)`)
say()
say(
  `Corpus ${MB} MB (seed ${SEED}, the engine benchmark's documents with labels even/odd and rare one in 1,000): ` +
    `${count(report.documents)} documents, ${count(report.chunks)} chunks, indexed in process in ` +
    `${indexSeconds.toFixed(1)} s.`
)
say(
  `${queries.length} word queries, top ${TOP_K}, ${REPS} timed runs each after one warm-up, \`queryIndex\` on one ` +
    `ManagedRuntime (warm caches, as in a server); ${checked} filtered answers checked against the unfiltered ` +
    `candidates restricted to the filter.`
)
say()
say(markdownTable(["filter", "mode", "queries", "results / query", "median ms", "p95 ms"], rows))
say()
say(
  "First query with each filter (it builds the filter's positions, and the document table and value index once " +
    "per index state):"
)
say()
say(markdownTable(["filter", "rule", "first query ms"], firstRows))

await runtime.dispose()
if (!flags.keep) {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${indexFile}${suffix}`, { force: true })
  rmSync(corpusFile, { force: true })
}
log(flags.keep ? `done; the corpus and the index are in ${DIR}` : "done")
