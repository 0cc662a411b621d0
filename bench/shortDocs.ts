/**
 * Many short documents (abstract-sized records of about 500 bytes, as the 140k-document corpus): a JSON Lines
 * corpus of the synthetic text cut short, indexed by the CLI and by SQLite FTS5, each a child process, with the size
 * of each index against the input's.
 */
import { existsSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"
import { runNode } from "./Child.ts"
import { shortText, writeJsonlCorpus } from "./Corpus.ts"
import { count, fixed, kibToMb, markdownTable } from "./Table.ts"

/** The bytes of a SQLite file and its journal files. */
const sqliteBytes = (file: string): number =>
  ["", "-wal", "-shm"].reduce((sum, suffix) => sum + (existsSync(file + suffix) ? statSync(file + suffix).size : 0), 0)

/** Writes about `mb` MB of short documents, indexes them both ways and tabulates the runs. */
export const shortDocsReport = async (
  cli: string,
  dir: string,
  mb: number,
  seed: number,
  rssFile: string
): Promise<string> => {
  const corpus = join(dir, `short-${mb}mb-seed${seed}.jsonl`)
  const index = join(dir, "short.db")
  const fts = join(dir, "short-fts5.db")
  const remove = () => {
    for (const file of [corpus, index, fts])
      for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true })
  }
  remove()
  const written = await writeJsonlCorpus(corpus, Math.round(mb * 1e6), seed + 2, () => ({}), shortText)
  const funcpipe = await runNode([cli, "index", corpus, "--index", index, "--rebuild", "--json"], rssFile)
  const fts5 = await runNode([join("bench", "fts5.ts"), "index", corpus, fts], rssFile)
  const failed = [funcpipe, fts5].find((run) => run.code !== 0)
  if (failed !== undefined) {
    remove()
    return `a short-documents run failed (exit code ${failed.code}): ${failed.stderr.trim().split("\n").at(-1)}`
  }
  const row = (name: string, run: { wallMs: number; peakRssKiB: number }, bytes: number) => [
    name,
    fixed(run.wallMs / 1000, 2),
    fixed(written.bytes / 1e6 / (run.wallMs / 1000), 1),
    kibToMb(run.peakRssKiB),
    fixed(bytes / 1e6, 1),
    `${fixed(bytes / written.bytes, 2)}×`
  ]
  const table = markdownTable(
    ["engine", "wall s", "MB/s", "peak RSS MB", "index MB", "index / input"],
    [row("FuncPipe", funcpipe, sqliteBytes(index)), row("SQLite FTS5 (porter)", fts5, sqliteBytes(fts))]
  )
  remove()
  return `${count(written.docs)} documents, ${fixed(written.bytes / 1e6, 1)} MB (${fixed(written.bytes / written.docs, 0)} bytes each)\n\n${table}`
}
