/**
 * Peers on the same corpus and word queries: SQLite FTS5 (`bench/fts5.ts`, through `node:sqlite`, porter tokenizer,
 * `bm25()`), run as children of the benchmark as the CLI is; Xapian is not installed on the benchmark's machine.
 */
import { existsSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { runNode } from "./Child.ts"
import type { BenchQuery, QueryKind } from "./Queries.ts"
import { fixed, kibToMb, markdownTable, median, ms } from "./Table.ts"

export interface FuncPipeFigures {
  readonly wallMs: number
  readonly peakRssKiB: number
  readonly indexBytes: number
  /** Warm timed runs of each query, in `queries` order. */
  readonly times: ReadonlyArray<ReadonlyArray<number>>
}

/** Builds the FTS5 index of the corpus, times the word queries on it and tabulates both engines side by side. */
export const peersReport = async (
  corpusFile: string,
  corpusBytes: number,
  dir: string,
  queries: ReadonlyArray<BenchQuery>,
  kinds: ReadonlyArray<QueryKind>,
  funcpipe: FuncPipeFigures,
  k: number,
  reps: number,
  rssFile: string
): Promise<string> => {
  const ftsFile = join(dir, "fts5.db")
  const files = [ftsFile, `${ftsFile}-wal`, `${ftsFile}-shm`]
  for (const file of files) rmSync(file, { force: true })
  const built = await runNode([join("bench", "fts5.ts"), "index", corpusFile, ftsFile], rssFile)
  if (built.code !== 0) return `FTS5 failed to index (exit code ${built.code}): ${built.stderr.trim()}`
  const ftsBytes = files.reduce((sum, file) => sum + (existsSync(file) ? statSync(file).size : 0), 0)
  const words = queries.map((q) => (kinds.includes(q.kind) ? q.text : ""))
  const queriesFile = join(dir, "fts5-queries.json")
  writeFileSync(queriesFile, JSON.stringify(words))
  const answered = await runNode(
    [join("bench", "fts5.ts"), "query", ftsFile, queriesFile, String(k), String(reps)],
    rssFile
  )
  for (const file of [...files, queriesFile]) rmSync(file, { force: true })
  if (answered.code !== 0) return `FTS5 failed to answer (exit code ${answered.code}): ${answered.stderr.trim()}`
  const ftsTimes = JSON.parse(answered.stdout) as ReadonlyArray<ReadonlyArray<number>>
  const byKind = (times: ReadonlyArray<ReadonlyArray<number>>, kind: QueryKind) =>
    median(queries.flatMap((q, i) => (q.kind === kind ? times[i]! : [])))
  const row = (
    name: string,
    wallMs: number,
    rss: number,
    bytes: number,
    times: ReadonlyArray<ReadonlyArray<number>>
  ) => [
    name,
    fixed(wallMs / 1000, 2),
    fixed(corpusBytes / 1e6 / (wallMs / 1000), 1),
    kibToMb(rss),
    fixed(bytes / 1e6, 0),
    ...kinds.map((kind) => ms(byKind(times, kind)))
  ]
  const table = markdownTable(
    ["engine", "index wall s", "MB/s", "peak RSS MB", "index MB", ...kinds.map((kind) => `${kind} median ms`)],
    [
      row("FuncPipe", funcpipe.wallMs, funcpipe.peakRssKiB, funcpipe.indexBytes, funcpipe.times),
      row("SQLite FTS5 (porter, bm25())", built.wallMs, built.peakRssKiB, ftsBytes, ftsTimes)
    ]
  )
  const ratios = kinds
    .map((kind) => `${kind} ${fixed(byKind(funcpipe.times, kind) / byKind(ftsTimes, kind), 2)}×`)
    .join(", ")
  return `${table}\n\nFuncPipe's warm query time as a share of FTS5's: ${ratios} (below 1: FuncPipe is faster)`
}
