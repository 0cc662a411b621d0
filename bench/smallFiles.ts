/**
 * A folder of many small Markdown files, as a user's notes or the tldr pages are: generated from the synthetic corpus
 * (each document cut to a few hundred bytes, 100 files a folder, times set an hour back so that the fast path may
 * trust them), then indexed, indexed again unchanged, and asked for its status, each by the CLI in a child process.
 */
import { mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { type ChildRun, runNode } from "./Child.ts"
import { syntheticDocs } from "./Corpus.ts"
import { count, fixed, kibToMb, markdownTable } from "./Table.ts"

/** Writes `files` Markdown files of about 500 bytes under `dir`; returns their total size in bytes. */
export const writeSmallFiles = (dir: string, files: number, seed: number): number => {
  rmSync(dir, { recursive: true, force: true })
  const hourAgo = Date.now() / 1000 - 3600
  let bytes = 0
  let n = 0
  for (const doc of syntheticDocs(seed + 1, Number.POSITIVE_INFINITY)) {
    if (n === files) break
    const folder = join(dir, `topic-${String(Math.floor(n / 100)).padStart(3, "0")}`)
    if (n % 100 === 0) mkdirSync(folder, { recursive: true })
    const body = doc.body.slice(0, 200 + (n % 7) * 90).replace(/\s+\S*$/, ".")
    const text = `# ${doc.title}\n\n${body}\n`
    const file = join(folder, `${doc.id}.md`)
    writeFileSync(file, text)
    utimesSync(file, hourAgo, hourAgo)
    bytes += Buffer.byteLength(text)
    n++
  }
  return bytes
}

/** One timed CLI run of the tree, failing loudly when the command does. */
const timed = async (label: string, args: ReadonlyArray<string>, rssFile: string): Promise<ChildRun> => {
  const run = await runNode(args, rssFile)
  if (run.code !== 0) throw new Error(`${label} failed (exit code ${run.code}): ${run.stderr.trim()}`)
  return run
}

/** Indexes the tree three ways and tabulates the runs. */
/** The tree's figures: the report, and the walls the targets are about. */
export interface SmallFilesFigures {
  readonly report: string
  readonly firstMbPerS: number
  readonly unchangedSeconds: number
  readonly statusSeconds: number
}

export const smallFilesReport = async (
  cli: string,
  dir: string,
  files: number,
  seed: number,
  rssFile: string
): Promise<SmallFilesFigures> => {
  const tree = join(dir, "small-files")
  const index = join(dir, "small-files.db")
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${index}${suffix}`, { force: true })
  const bytes = writeSmallFiles(tree, files, seed)
  const first = await timed("first index", [cli, "index", tree, "--index", index, "--json"], rssFile)
  const again = await timed("second index", [cli, "index", tree, "--index", index, "--json"], rssFile)
  const status = await timed("status", [cli, "status", "--index", index, "--json"], rssFile)
  const unchanged = (JSON.parse(again.stdout) as { unchanged: number }).unchanged
  const row = (name: string, run: ChildRun) => [
    name,
    fixed(run.wallMs / 1000, 2),
    fixed(bytes / 1e6 / (run.wallMs / 1000), 1),
    kibToMb(run.peakRssKiB)
  ]
  const table = markdownTable(
    ["run", "wall s", "MB/s", "peak RSS MB"],
    [row("first index", first), row("index again, nothing changed", again), row("status", status)]
  )
  rmSync(tree, { recursive: true, force: true })
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${index}${suffix}`, { force: true })
  return {
    report: `${count(files)} files, ${fixed(bytes / 1e6, 1)} MB; the second run found ${count(unchanged)} unchanged\n\n${table}`,
    firstMbPerS: bytes / 1e6 / (first.wallMs / 1000),
    unchangedSeconds: again.wallMs / 1000,
    statusSeconds: status.wallMs / 1000
  }
}
