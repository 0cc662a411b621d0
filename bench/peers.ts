/**
 * Peers on the same corpus and word queries, each run as a child of the benchmark as the CLI is: SQLite FTS5
 * (`bench/fts5.ts`, through `node:sqlite`, porter tokenizer, `bm25()`) and, where Debian's `python3-xapian` is
 * installed, Xapian (`bench/xapian_peer.py`: BM25, English stemming, words OR-ed).
 */
import { spawn, spawnSync } from "node:child_process"
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { runNode } from "./Child.ts"
import type { BenchQuery, QueryKind } from "./Queries.ts"
import { fixed, kibToMb, markdownTable, median, ms } from "./Table.ts"

/** Debian's Python, which holds `python3-xapian` (another `python3` first on the PATH may not). */
const PYTHON = "/usr/bin/python3"

/** Whether Xapian's Python bindings can be imported. */
const hasXapian = (): boolean => spawnSync(PYTHON, ["-c", "import xapian"], { stdio: "ignore" }).status === 0

/** A Python child's wall time and its JSON output (which carries its own peak memory). */
const runPython = (args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number; readonly wallMs: number; readonly output: string; readonly stderr: string }>(
    (resolve, reject) => {
      const started = performance.now()
      const child = spawn(PYTHON, args, { stdio: ["ignore", "pipe", "pipe"] })
      const out: Array<Buffer> = []
      const err: Array<Buffer> = []
      child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
      child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
      child.on("error", reject)
      child.on("close", (code) =>
        resolve({
          code: code ?? 1,
          wallMs: performance.now() - started,
          output: Buffer.concat(out).toString("utf8"),
          stderr: Buffer.concat(err).toString("utf8")
        })
      )
    }
  )

/** A folder's size in bytes (a Xapian database is a folder of files). */
const folderBytes = (dir: string): number =>
  readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0)

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
  // Xapian, where installed.
  let xapian: { wallMs: number; peakKiB: number; bytes: number; times: ReadonlyArray<ReadonlyArray<number>> } | string
  if (!hasXapian()) xapian = "Xapian: not installed (Debian's python3-xapian), skipped"
  else {
    const xapianDir = join(dir, "xapian.db")
    rmSync(xapianDir, { recursive: true, force: true })
    writeFileSync(queriesFile, JSON.stringify(words))
    const xIndex = await runPython([join("bench", "xapian_peer.py"), "index", corpusFile, xapianDir])
    const xQuery =
      xIndex.code === 0
        ? await runPython([join("bench", "xapian_peer.py"), "query", xapianDir, queriesFile, String(k), String(reps)])
        : xIndex
    if (xQuery.code !== 0)
      xapian = `Xapian failed (exit code ${xQuery.code}): ${xQuery.stderr.trim().split("\n").at(-1)}`
    else {
      const indexed = JSON.parse(xIndex.output) as { peak_kib: number }
      const answeredX = JSON.parse(xQuery.output) as { times: ReadonlyArray<ReadonlyArray<number>> }
      xapian = {
        wallMs: xIndex.wallMs,
        peakKiB: indexed.peak_kib,
        bytes: folderBytes(xapianDir),
        times: answeredX.times
      }
    }
    rmSync(xapianDir, { recursive: true, force: true })
    rmSync(queriesFile, { force: true })
  }
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
      row("SQLite FTS5 (porter, bm25())", built.wallMs, built.peakRssKiB, ftsBytes, ftsTimes),
      ...(typeof xapian === "string"
        ? []
        : [row("Xapian 1.4 (BM25, English stemming)", xapian.wallMs, xapian.peakKiB, xapian.bytes, xapian.times)])
    ]
  )
  const ratiosTo = (times: ReadonlyArray<ReadonlyArray<number>>) =>
    kinds.map((kind) => `${kind} ${fixed(byKind(funcpipe.times, kind) / byKind(times, kind), 2)}×`).join(", ")
  return (
    `${table}\n\nFuncPipe's warm query time as a share of FTS5's: ${ratiosTo(ftsTimes)}` +
    (typeof xapian === "string" ? `; ${xapian}` : `; of Xapian's: ${ratiosTo(xapian.times)}`) +
    " (below 1: FuncPipe is faster)"
  )
}
