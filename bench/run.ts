/** The engine benchmark: index a synthetic corpus with the real CLI, time queries cold and warm, check and compare. */
import { existsSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync, statSync } from "node:fs"
import { cpus, loadavg, tmpdir, totalmem } from "node:os"
import { join, relative, resolve } from "node:path"
import { parseArgs } from "node:util"
import { NodeServices } from "@effect/platform-node"
import type { RankKey, RetrievalMode } from "@funcpipe/domain"
import { Embedder, layerSqlite, queryIndex } from "@funcpipe/pipeline"
import { Layer, ManagedRuntime } from "effect"
import MiniSearch from "minisearch"
import { CLI_SOURCE, cliBundle, cliEntry, REPO_ROOT, runNode } from "./Child.ts"
import { prng, writeJsonlCorpus } from "./Corpus.ts"
import { peersReport } from "./peers.ts"
import { comparePruning } from "./pruning.ts"
import { type BenchQuery, pickQueries, type QueryKind, WORD_KINDS } from "./Queries.ts"
import { buildReference, type ChunkRow, firstDifference, readChunkRows } from "./Reference.ts"
import { shortDocsReport } from "./shortDocs.ts"
import { type SmallFilesFigures, smallFilesReport } from "./smallFiles.ts"
import { count, fixed, kibToMb, markdownTable, maximum, median, ms, p95 } from "./Table.ts"
import {
  engineTop,
  engineView,
  fullSortTop,
  plainScan,
  randomQuery,
  randomVectors,
  syntheticKey
} from "./VectorScan.ts"

const USAGE = `Usage: npm run bench -- [options]   (each figure is explained in bench/README.md)
  --mb N             size of the generated corpus in MB (default 50; 210 gives about 442k chunks)
  --queries N        word queries to time (default 20)
  --vectors N        rows of the in-memory vector scan comparison (default 1000000)
  --dims D           dimensions of those rows (default 16)
  --dir PATH         work folder (default: a folder under the system's temporary folder)
  --keep             keep the generated corpus and index
  --seed N           seed of the generated corpus and queries (default 42)
  --stages-mb N      size of the pure-stage benchmark (default 4; 0 skips it)
  --no-minisearch    skip the MiniSearch comparison
  --force-minisearch run it even above 200,000 chunks
  --cli PATH         the CLI entry to time (default packages/cli/bin/funcpipe.mjs)`

let parsed: ReturnType<typeof parseFlags>
try {
  parsed = parseFlags()
} catch (error) {
  console.error(`bench: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`)
  process.exit(2)
}
if (parsed.help) {
  console.log(USAGE)
  process.exit(0)
}
const flags = parsed

function parseFlags() {
  return parseArgs({
    options: {
      help: { type: "boolean", default: false },
      mb: { type: "string", default: "50" },
      queries: { type: "string", default: "20" },
      keep: { type: "boolean", default: false },
      "no-minisearch": { type: "boolean", default: false },
      "force-minisearch": { type: "boolean", default: false },
      vectors: { type: "string", default: "1000000" },
      dims: { type: "string", default: "16" },
      dir: { type: "string" },
      cli: { type: "string" },
      seed: { type: "string", default: "42" },
      "stages-mb": { type: "string", default: "4" },
      "no-peers": { type: "boolean", default: false },
      files: { type: "string", default: "40000" },
      "short-mb": { type: "string", default: "74" }
    },
    strict: true
  }).values
}
const positive = (name: string, raw: string, integer: boolean, allowZero = false): number => {
  const n = Number(raw)
  if (!Number.isFinite(n) || (allowZero ? n < 0 : n <= 0) || (integer && !Number.isInteger(n))) {
    const kind = `${integer ? "whole " : ""}number above ${allowZero ? "or at " : ""}0`
    console.error(`bench: --${name} must be a ${kind}, not ${raw}`)
    process.exit(2)
  }
  return n
}
const MB = positive("mb", flags.mb, false)
const WORD_QUERIES = positive("queries", flags.queries, true)
const VECTOR_ROWS = positive("vectors", flags.vectors, true)
const DIMS = positive("dims", flags.dims, true)
const SEED = positive("seed", flags.seed, true, true)
const STAGES_MB = positive("stages-mb", flags["stages-mb"], false, true)
const PEERS = !flags["no-peers"]
const FILES = positive("files", flags.files, true, true)
const SHORT_MB = positive("short-mb", flags["short-mb"], false, true)
const KEEP = flags.keep
const MINISEARCH = !flags["no-minisearch"]
const FORCE_MINISEARCH = flags["force-minisearch"]
const DIR = resolve(flags.dir ?? join(tmpdir(), "funcpipe-bench"))
const CLI_ENTRY = flags.cli === undefined ? cliEntry() : resolve(flags.cli)
const BUNDLE = cliBundle()

/** Results per query and mode; the figures below are the top 10, as the issue's targets are. */
const TOP_K = 10
/** Timed repetitions of each query in process, after one warm-up run. */
const REPS = 5
/** Exact chunk texts among the queries (vector mode must find each first, with score 1). */
const EXACT = Math.max(3, Math.round(WORD_QUERIES / 4))
/** Cold CLI runs per mode, and of `--version`. */
const CLI_RUNS = 5
/** MiniSearch holds its whole index in the heap; above this many chunks it runs only with --force-minisearch. */
const MINISEARCH_MAX_CHUNKS = 200_000
/** Vector scan: timed queries per scan, warm-up queries, and queries also checked against a full sort. */
const VECTOR_QUERIES = 20
const VECTOR_WARMUP = 3
const VECTOR_FULL_SORTS = 3

const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")
const log = (message: string) => console.error(`bench: ${message}`)
const say = (text = "") => console.log(text)
const seconds = (millis: number) => fixed(millis / 1000, 2)
const mbOf = (bytes: number) => fixed(bytes / 1e6, 1)
const time = <A>(f: () => A): { readonly value: A; readonly ms: number } => {
  const t0 = performance.now()
  const value = f()
  return { value, ms: performance.now() - t0 }
}

mkdirSync(DIR, { recursive: true })
const rssFile = join(DIR, `rss-${process.pid}.txt`)
const corpusFile = join(DIR, `corpus-${MB}mb-seed${SEED}.jsonl`)
const indexFile = join(DIR, "index.db")
const indexFiles = [indexFile, `${indexFile}-wal`, `${indexFile}-shm`]
let generatedCorpus = false
let failed = false

say("# FuncPipe engine benchmark")
say()
say(
  `${new Date().toISOString()} · ${cpus().length} cores (${cpus()[0]?.model.trim() ?? "unknown CPU"}) · ` +
    `${mbOf(totalmem())} MB of memory · node ${process.version} on ${process.platform}/${process.arch} · ` +
    `load average ${loadAverage()} at the start`
)
say()
say(
  `Corpus ${MB} MB (seed ${SEED}), ${WORD_QUERIES} word queries + ${EXACT} exact chunk texts, top ${TOP_K}; ` +
    `vector scan ${count(VECTOR_ROWS)} × ${DIMS}. MB = 10^6 bytes; times are wall-clock.`
)
say()
say(
  `CLI: \`node ${relative(REPO_ROOT, CLI_ENTRY)}\`` +
    (BUNDLE === undefined
      ? " (no bundle built: the launcher runs the TypeScript sources)"
      : `; bundle ${relative(REPO_ROOT, BUNDLE.path)}` +
        (BUNDLE.stale ? " is OLDER than the sources: the launcher runs stale code (npm run build)" : " is up to date"))
)

// 1. The corpus, reused when a complete one of this size and seed is already in the work folder.
const corpusBytes = await (async () => {
  if (existsSync(corpusFile)) {
    log(`reusing ${corpusFile}`)
    return statSync(corpusFile).size
  }
  log(`writing ${MB} MB of JSON Lines to ${corpusFile}`)
  const partial = `${corpusFile}.partial`
  const t0 = performance.now()
  const written = await writeJsonlCorpus(partial, Math.round(MB * 1e6), SEED)
  renameSync(partial, corpusFile)
  generatedCorpus = true
  log(`wrote ${count(written.docs)} documents in ${seconds(performance.now() - t0)} s`)
  return written.bytes
})()

// 2. Index with the real CLI in a child process, from an empty file so the size on disk is that of a fresh build.
for (const file of indexFiles) rmSync(file, { force: true })
log("indexing with the CLI")
const indexRun = await runNode([CLI_ENTRY, "index", corpusFile, "--index", indexFile, "--rebuild", "--json"], rssFile)
if (indexRun.code !== 0) {
  console.error(indexRun.stderr)
  throw new Error(`funcpipe index failed with exit code ${indexRun.code}`)
}
const indexReport = JSON.parse(indexRun.stdout) as {
  documents: number
  chunks: number
  skipped: ReadonlyArray<unknown>
}
const indexBytes = indexFiles.slice(0, 2).reduce((sum, file) => sum + (existsSync(file) ? statSync(file).size : 0), 0)
const indexMbPerS = corpusBytes / 1e6 / (indexRun.wallMs / 1000)
const indexRatio = indexBytes / corpusBytes

say()
say("## Indexing (`funcpipe index <corpus> --index <dir>/index.db --rebuild --json`, one child process)")
say()
say(
  markdownTable(
    [
      "input MB",
      "documents",
      "chunks",
      "skipped",
      "wall s",
      "MB/s",
      "peak RSS MB",
      "index MB (db + wal)",
      "index / input"
    ],
    [
      [
        mbOf(corpusBytes),
        count(indexReport.documents),
        count(indexReport.chunks),
        count(indexReport.skipped.length),
        seconds(indexRun.wallMs),
        fixed(indexMbPerS, 1),
        kibToMb(indexRun.peakRssKiB),
        mbOf(indexBytes),
        `${fixed(indexRatio, 2)}×`
      ]
    ]
  )
)

// 3. Queries drawn from the indexed chunks.
const rows: Array<ChunkRow> = readChunkRows(indexFile)
if (rows.length !== indexReport.chunks) {
  throw new Error(`the index reports ${indexReport.chunks} chunks but holds ${rows.length} rows`)
}
const queries = pickQueries(rows, WORD_QUERIES, EXACT, SEED)
const wordQueries = queries.filter((q) => q.kind !== "chunk text")
const kinds: ReadonlyArray<QueryKind> = [...WORD_KINDS, "chunk text"]
say()
say("## Queries")
say()
say(
  markdownTable(
    ["kind", "count", "examples"],
    kinds.map((kind) => {
      const of = queries.filter((q) => q.kind === kind)
      const shown = of.slice(0, 3).map((q) => JSON.stringify(q.text.length > 40 ? `${q.text.slice(0, 40)}…` : q.text))
      return [kind, String(of.length), shown.join(", ")]
    })
  )
)

// 4. Cold CLI runs: one process per query, as a user or a script would run them.
const spread = <A>(xs: ReadonlyArray<A>, n: number): Array<A> =>
  xs.length <= n ? [...xs] : Array.from({ length: n }, (_, i) => xs[Math.floor((i * xs.length) / n)]!)
const cliSets: ReadonlyArray<{ readonly mode: RetrievalMode; readonly queries: ReadonlyArray<BenchQuery> }> = [
  { mode: "lexical", queries: spread(wordQueries, CLI_RUNS) },
  {
    mode: "vector",
    queries: [
      ...queries.filter((q) => q.kind === "chunk text").slice(0, 3),
      ...spread(wordQueries, Math.max(0, CLI_RUNS - 3))
    ]
  }
]
log("timing cold CLI runs")
const bareRuns = []
for (let i = 0; i < CLI_RUNS; i++) bareRuns.push(await runNode(["-e", "0"], rssFile))
const versionRuns = []
for (let i = 0; i < CLI_RUNS; i++) versionRuns.push(await runNode([CLI_ENTRY, "--version"], rssFile))
const sourceVersionRuns = []
if (CLI_ENTRY !== CLI_SOURCE) {
  for (let i = 0; i < CLI_RUNS; i++) sourceVersionRuns.push(await runNode([CLI_SOURCE, "--version"], rssFile))
}
interface CliAnswer {
  readonly mode: RetrievalMode
  readonly query: BenchQuery
  readonly answer: Array<RankKey>
}
const cliAnswers: Array<CliAnswer> = []
const cliRows: Array<Array<string>> = []
const cliRss: Array<number> = []
const cliModeMedians: Array<number> = []
for (const { mode, queries: set } of cliSets) {
  const runs = []
  for (const query of set) {
    const run = await runNode(
      [CLI_ENTRY, "query", query.text, "--json", "--index", indexFile, "--mode", mode, "--top-k", String(TOP_K)],
      rssFile
    )
    if (run.code !== 0) {
      throw new Error(`funcpipe query ${JSON.stringify(query.text)} --mode ${mode} failed: ${run.stderr}`)
    }
    const parsed = JSON.parse(run.stdout) as {
      results: ReadonlyArray<{ score: number; doc_id: string; start: number; end: number; text: string }>
    }
    cliAnswers.push({
      mode,
      query,
      answer: parsed.results.map((r) => ({ score: r.score, docId: r.doc_id, start: r.start, end: r.end, text: r.text }))
    })
    runs.push(run)
  }
  const walls = runs.map((r) => r.wallMs)
  cliRss.push(...runs.map((r) => r.peakRssKiB))
  cliModeMedians.push(median(walls))
  cliRows.push([
    `query --mode ${mode}`,
    String(runs.length),
    ms(median(walls)),
    ms(maximum(walls)),
    kibToMb(maximum(runs.map((r) => r.peakRssKiB)))
  ])
}
const versionWall = median(versionRuns.map((r) => r.wallMs))
const cliRow = (name: string, runs: ReadonlyArray<{ readonly wallMs: number; readonly peakRssKiB: number }>) => [
  name,
  String(runs.length),
  ms(median(runs.map((r) => r.wallMs))),
  ms(maximum(runs.map((r) => r.wallMs))),
  kibToMb(maximum(runs.map((r) => r.peakRssKiB)))
]
cliRows.unshift(
  cliRow("node -e 0 (start-up alone, for scale)", bareRuns),
  cliRow("--version", versionRuns),
  ...(sourceVersionRuns.length === 0 ? [] : [cliRow("--version from src/bin.ts (for scale)", sourceVersionRuns)])
)

// 5. Warm queries in process: one runtime (one store, its caches warm), each query once to warm, then timed.
log("timing warm queries in process")
const runtime = ManagedRuntime.make(
  Layer.mergeAll(layerSqlite(indexFile), Embedder.layerLocalSha256).pipe(Layer.provideMerge(NodeServices.layer))
)
const ask = async (text: string, mode: RetrievalMode): Promise<Array<RankKey>> => {
  const answer = await runtime.runPromise(queryIndex(text, TOP_K, { mode }))
  return answer.results.map(({ chunk, score }) => ({
    score,
    docId: chunk.docId,
    start: chunk.start,
    end: chunk.end,
    text: chunk.text
  }))
}
const modes: ReadonlyArray<RetrievalMode> = ["lexical", "vector"]
const answers = new Map<RetrievalMode, Array<Array<RankKey>>>(modes.map((m) => [m, []]))
const timings = new Map<RetrievalMode, Array<Array<number>>>(modes.map((m) => [m, []]))
for (const mode of modes) {
  for (const query of queries) {
    answers.get(mode)!.push(await ask(query.text, mode))
    const times: Array<number> = []
    for (let r = 0; r < REPS; r++) {
      const t0 = performance.now()
      await ask(query.text, mode)
      times.push(performance.now() - t0)
    }
    timings.get(mode)!.push(times)
  }
}
await runtime.dispose()
const timesOf = (mode: RetrievalMode, include: (q: BenchQuery) => boolean) =>
  queries.flatMap((q, i) => (include(q) ? timings.get(mode)![i]! : []))
const lexicalWordTimes = timesOf("lexical", (q) => q.kind !== "chunk text")
const warmRows: Array<Array<string>> = []
for (const mode of modes) {
  const groups: ReadonlyArray<readonly [string, (q: BenchQuery) => boolean]> = [
    ...kinds.map((kind) => [kind, (q: BenchQuery) => q.kind === kind] as const),
    ["all word queries", (q: BenchQuery) => q.kind !== "chunk text"] as const
  ]
  for (const [name, include] of groups) {
    const times = timesOf(mode, include)
    if (times.length === 0) continue
    warmRows.push([mode, name, String(times.length / REPS), ms(median(times)), ms(p95(times)), ms(maximum(times))])
  }
}
const exactChecks = queries.flatMap((q, i) => {
  if (q.expected === undefined) return []
  const first = answers.get("vector")![i]![0]
  const found =
    first !== undefined &&
    first.docId === q.expected.docId &&
    first.start === q.expected.start &&
    first.end === q.expected.end &&
    first.text === q.expected.text
  return [{ found, score: first?.score ?? Number.NaN }]
})

say()
say(`## Cold CLI (\`node ${relative(REPO_ROOT, CLI_ENTRY)} …\`, one process per run, top ${TOP_K})`)
say()
say(markdownTable(["command", "runs", "median ms", "max ms", "max peak RSS MB"], cliRows))
say()
say(
  `## Warm queries in process (\`queryIndex\` on one ManagedRuntime, top ${TOP_K}, ` +
    `${REPS} timed runs each after one warm-up)`
)
say()
say(markdownTable(["mode", "queries", "count", "median ms", "p95 ms", "max ms"], warmRows))
say()
const exactFound = exactChecks.filter((c) => c.found).length
say(
  `exact chunk texts in vector mode: ${exactFound}/${exactChecks.length} ranked first; ` +
    `scores ${[...new Set(exactChecks.map((c) => String(c.score)))].join(", ")}` +
    (exactChecks.every((c) => c.found && c.score === 1) ? " (all exactly 1)" : " (expected exactly 1)")
)

// 5b. Pruned against exhaustive lexical top k on the same snapshot.
log("timing pruned against exhaustive lexical top k")
const pruning = await comparePruning(indexFile, queries, kinds, TOP_K, REPS)
say()
say(
  `## Pruned lexical top ${TOP_K} against scoring every posting (in process, one snapshot, ${REPS} interleaved ` +
    "runs each after one check)"
)
say()
say(pruning.table)
say()
say(
  `pruned answers identical to exhaustive ones: ${pruning.mismatches.length === 0 ? "all" : `not for ${pruning.mismatches.length}`}` +
    (pruning.mismatches.length === 0 ? "" : `; first: ${JSON.stringify(pruning.mismatches[0])}`)
)
if (pruning.mismatches.length > 0) failed = true

// CLI answers against the in-process ones: the same engine, so they must be the same.
const cliDifferences = cliAnswers.flatMap(({ answer, mode, query }) => {
  const difference = firstDifference(answers.get(mode)![queries.indexOf(query)]!, answer)
  return difference === undefined ? [] : [`${mode} ${JSON.stringify(query.text.slice(0, 60))}: ${difference}`]
})
say(
  `CLI answers identical to in-process answers: ${cliAnswers.length - cliDifferences.length}/${cliAnswers.length}` +
    (cliDifferences.length === 0 ? "" : `; first difference: ${cliDifferences[0]}`)
)
if (cliDifferences.length > 0) failed = true

// 6. The reference check: the simple in-memory BM25 and a full cosine sort, built from the chunk rows alone.
log("building the reference ranking")
const referenceBuild = time(() => buildReference(rows))
const reference = referenceBuild.value
let identical = 0
const differences: Array<string> = []
const referenceAnswer = time(() => {
  for (const mode of modes) {
    queries.forEach((query, i) => {
      const expected = mode === "lexical" ? reference.lexical(query.text, TOP_K) : reference.vector(query.text, TOP_K)
      const difference = firstDifference(expected, answers.get(mode)![i]!)
      if (difference === undefined) identical++
      else differences.push(`${mode} query ${JSON.stringify(query.text.slice(0, 60))} (${query.kind}): ${difference}`)
    })
  }
})
const checked = modes.length * queries.length
say()
say("## Reference check")
say()
say(
  `reference check: ${identical}/${checked} answers identical (doc id, start, end, text and score, with ===; ` +
    `lexical and vector, top ${TOP_K}); reference built in ${seconds(referenceBuild.ms)} s, answered in ` +
    `${seconds(referenceAnswer.ms)} s`
)
if (differences.length > 0) {
  failed = true
  say()
  say(`first difference: ${differences[0]}`)
}

// 7. MiniSearch on the same chunks (title + text), same word queries.
say()
say("## BM25 against MiniSearch (in process, same chunks, same word queries, top 10)")
say()
const funcpipeLexical = median(lexicalWordTimes)
let miniRatio = Number.NaN
if (!MINISEARCH) {
  say("skipped (--no-minisearch)")
} else if (rows.length > MINISEARCH_MAX_CHUNKS && !FORCE_MINISEARCH) {
  say(
    `skipped: ${count(rows.length)} chunks is above ${count(MINISEARCH_MAX_CHUNKS)} ` +
      "(MiniSearch keeps everything in " +
      "the heap); run with --force-minisearch, or compare at --mb 60 (about 123k chunks)"
  )
} else {
  log("building MiniSearch")
  const documents = rows.map((row, id) => ({ id, text: `${row.title}\n${row.text}` }))
  const mini = new MiniSearch<{ id: number; text: string }>({ fields: ["text"] })
  const build = time(() => mini.addAll(documents))
  const miniTimes: Array<number> = []
  for (const query of wordQueries) {
    mini.search(query.text).slice(0, TOP_K)
    for (let r = 0; r < REPS; r++) miniTimes.push(time(() => mini.search(query.text).slice(0, TOP_K)).ms)
  }
  const miniMedian = median(miniTimes)
  miniRatio = funcpipeLexical / miniMedian
  say(
    markdownTable(
      ["engine", "build s", "median ms/query", "p95 ms/query", "FuncPipe / MiniSearch"],
      [
        ['MiniSearch 7 (fields ["text"], default BM25)', seconds(build.ms), ms(miniMedian), ms(p95(miniTimes)), ""],
        [
          "FuncPipe (queryIndex, lexical)",
          "see Indexing",
          ms(funcpipeLexical),
          ms(p95(lexicalWordTimes)),
          `${fixed(miniRatio, 3)}×`
        ]
      ]
    )
  )
}

// 8. The vector scan in memory: a plain Float32Array scan against the engine on an in-memory IndexView.
log(`vector scan over ${count(VECTOR_ROWS)} × ${DIMS}`)
const vectors = randomVectors(VECTOR_ROWS, DIMS, SEED + 1)
const plain = plainScan(vectors)
const view = engineView(vectors)
const random = prng(SEED + 2)
const vectorQueries = Array.from({ length: VECTOR_QUERIES + VECTOR_WARMUP }, () => randomQuery(random, DIMS))
for (const q of vectorQueries.slice(0, VECTOR_WARMUP)) {
  plain.top(Float32Array.from(q), TOP_K)
  engineTop(view, q, TOP_K)
}
const plainTimes: Array<number> = []
const engineTimes: Array<number> = []
let overlap = 0
const engineTops = vectorQueries.slice(VECTOR_WARMUP).map((q) => {
  const f32 = Float32Array.from(q)
  const a = time(() => plain.top(f32, TOP_K))
  const b = time(() => engineTop(view, q, TOP_K))
  plainTimes.push(a.ms)
  engineTimes.push(b.ms)
  const mine = new Set(b.value.map((t) => t.position))
  overlap += a.value.filter((t) => mine.has(t.position)).length
  return b.value
})
const fullSorts = time(
  () =>
    vectorQueries.slice(VECTOR_WARMUP, VECTOR_WARMUP + VECTOR_FULL_SORTS).filter((q, i) => {
      const expected = fullSortTop(vectors, q, TOP_K)
      const actual = engineTops[i]!.map((t) => ({ ...syntheticKey(t.position), score: t.score }))
      return firstDifference(expected, actual) === undefined
    }).length
)
const vectorRatio = median(engineTimes) / median(plainTimes)
const sortsChecked = Math.min(VECTOR_FULL_SORTS, VECTOR_QUERIES)
say()
say(
  `## Vector scan in memory (${count(VECTOR_ROWS)} × ${DIMS}, ${VECTOR_QUERIES} queries after ${VECTOR_WARMUP} ` +
    `warm-ups, top ${TOP_K})`
)
say()
say(
  markdownTable(
    ["scan", "median ms", "p95 ms", "ratio"],
    [
      ["Float32Array, precomputed norms, k-heap", ms(median(plainTimes)), ms(p95(plainTimes)), "1.00×"],
      [
        "FuncPipe (scoreQuery + topChunksOf on a float32 block: WebAssembly SIMD, exact re-scoring)",
        ms(median(engineTimes)),
        ms(p95(engineTimes)),
        `${fixed(vectorRatio, 2)}×`
      ]
    ]
  )
)
say()
say(
  `FuncPipe top ${TOP_K} against a full sort with rankingOrder on float64 cosines: ` +
    `${fullSorts.value === sortsChecked ? "identical" : "DIFFERENT"} on ${fullSorts.value}/${sortsChecked} queries ` +
    `(${seconds(fullSorts.ms)} s); the float32 scan's top ${TOP_K} shares ${overlap}/${VECTOR_QUERIES * TOP_K} ` +
    "positions with FuncPipe's (its norms are rounded to float32)"
)
if (fullSorts.value !== sortsChecked) failed = true

// The pure stages, from bench/stages.ts in a child, on a smaller corpus.
if (STAGES_MB > 0) {
  log(`pure stages on ${STAGES_MB} MB (bench/stages.ts)`)
  const stages = await runNode([join("bench", "stages.ts"), String(STAGES_MB), String(SEED)], rssFile)
  say()
  say(`## Pure stages (\`node bench/stages.ts ${STAGES_MB} ${SEED}\`: clean → chunk → embed in process)`)
  say()
  const lines = stages.stdout.trim().split("\n")
  const head = lines.findIndex((line) => line.startsWith("path"))
  if (stages.code !== 0 || head < 0) {
    say(`bench/stages.ts failed (exit code ${stages.code}): ${stages.stderr.trim().split("\n").slice(-3).join(" ")}`)
  } else {
    say(lines.slice(0, head).join(" · "))
    say()
    const split = (line: string) => line.trim().split(/\s{2,}/)
    say(markdownTable(split(lines[head]!), lines.slice(head + 1).map(split)))
  }
}

// 8b. Peers on the same corpus and queries.
say()
say(`## Peers (same corpus, same word queries, top ${TOP_K}, each in its own child process)`)
say()
if (!PEERS) say("skipped (--no-peers)")
else {
  log("indexing and querying with SQLite FTS5")
  say(
    await peersReport(
      corpusFile,
      corpusBytes,
      DIR,
      queries,
      WORD_KINDS,
      {
        wallMs: indexRun.wallMs,
        peakRssKiB: indexRun.peakRssKiB,
        indexBytes,
        times: timings.get("lexical")!
      },
      TOP_K,
      REPS,
      rssFile
    )
  )
}

// 8c. A folder of many small files.
say()
say("## A folder of small Markdown files (`funcpipe index <tree>`, again unchanged, then `status`; one child each)")
say()
let smallFiles: SmallFilesFigures | undefined
if (FILES === 0) say("skipped (--files 0)")
else {
  log(`writing ${count(FILES)} small files and indexing them`)
  smallFiles = await smallFilesReport(CLI_ENTRY, DIR, FILES, SEED, rssFile)
  say(smallFiles.report)
}

// 8d. Many short documents.
say()
say("## Short documents (`funcpipe index <corpus> --rebuild` and SQLite FTS5, one child each)")
say()
if (SHORT_MB === 0) say("skipped (--short-mb 0)")
else {
  log(`writing ${SHORT_MB} MB of short documents and indexing them`)
  say(await shortDocsReport(CLI_ENTRY, DIR, SHORT_MB, SEED, rssFile))
}

// 9. The targets of the issue.
const lexicalAt = rows.length >= 400_000 ? "" : ` (at ${count(rows.length)} chunks; the target is for 429k)`
// The indexing target is for 210 MB: on a smaller corpus, Node's start-up and the fixed costs of a run weigh more.
const indexAtScale = corpusBytes >= 200e6
const indexAt = indexAtScale ? "" : ` (at ${fixed(corpusBytes / 1e6, 0)} MB; the target is for 210 MB)`
// The BM25 target is for about 123k chunks (`--mb 60`); on a small index MiniSearch's lack of fixed costs dominates.
const bm25AtScale = rows.length >= 100_000
const bm25At = bm25AtScale ? "" : ` (at ${count(rows.length)} chunks; the target is for 123k)`
const miniSkipped = Number.isNaN(miniRatio)
const megabytes = (kib: number) => (kib * 1024) / 1e6
const cliWall = maximum(cliModeMedians)
const target = (name: string, value: string, bound: string, met: boolean | undefined) =>
  `${name} ${value} (${bound}) ${met === undefined ? "n/a" : met ? "met" : "MISSED"}`
const targets = [
  target("index", `${fixed(indexMbPerS, 1)} MB/s${indexAt}`, "≥ 30", indexAtScale ? indexMbPerS >= 30 : undefined),
  target("indexing peak RSS", `${kibToMb(indexRun.peakRssKiB)} MB`, "≤ 400", megabytes(indexRun.peakRssKiB) <= 400),
  target("index size", `${fixed(indexRatio, 2)}× input`, "≤ 1.5×", indexRatio <= 1.5),
  target("lexical in process", `${ms(funcpipeLexical)} ms median${lexicalAt}`, "≤ 10 ms", funcpipeLexical <= 10),
  target("CLI query wall", `${ms(cliWall)} ms median of the slower mode`, "≤ 500 ms", cliWall <= 500),
  target("CLI query RSS", `${kibToMb(maximum(cliRss))} MB max`, "≤ 200 MB", megabytes(maximum(cliRss)) <= 200),
  target("vector scan", `${fixed(vectorRatio, 2)}× Float32Array`, "≤ 2×", vectorRatio <= 2),
  target(
    "BM25",
    miniSkipped ? "vs MiniSearch skipped" : `${ms(funcpipeLexical)} ms, ${fixed(miniRatio, 3)}× MiniSearch${bm25At}`,
    "≤ 2 ms and ≤ 0.1×",
    miniSkipped || !bm25AtScale ? undefined : funcpipeLexical <= 2 && miniRatio <= 0.1
  ),
  target("--version", `${ms(versionWall)} ms`, "≤ 300 ms", versionWall <= 300),
  target(
    "pruned top k",
    pruning.mismatches.length === 0 ? "identical" : "DIFFERENT",
    "identical",
    pruning.mismatches.length === 0
  ),
  target(
    "small files, first index",
    smallFiles === undefined ? "skipped" : `${fixed(smallFiles.firstMbPerS, 1)} MB/s`,
    "≥ 10 MB/s",
    smallFiles === undefined ? undefined : smallFiles.firstMbPerS >= 10
  ),
  target(
    "small files unchanged, index / status",
    smallFiles === undefined
      ? "skipped"
      : `${fixed(smallFiles.unchangedSeconds, 2)} s / ${fixed(smallFiles.statusSeconds, 2)} s`,
    "≤ 1 s each",
    smallFiles === undefined ? undefined : Math.max(smallFiles.unchangedSeconds, smallFiles.statusSeconds) <= 1
  )
]
say()
say(
  `load average ${loadAverage()} at the end (1, 5, 15 minutes; above ${cpus().length} the machine was shared ` +
    "and the times are inflated)"
)
say()
say(`targets: ${targets.join(" · ")}`)

if (!KEEP) {
  for (const file of indexFiles) rmSync(file, { force: true })
  if (generatedCorpus) rmSync(corpusFile, { force: true })
  if (flags.dir === undefined && readdirSync(DIR).length === 0) rmdirSync(DIR)
}
if (failed) process.exitCode = 1
