/**
 * What one `funcpipe query --mode vector` costs in a process of its own, on the indexes you give: the exact scan
 * (`--exact`), the command as it is (which walks an index built with `--vector-codes i8`, paged graphs read as the walk
 * reaches them, and scans any other), and `--ann-candidates 64` (a walk whatever the index). Each round runs the three
 * in turn on each query and index, so the machine's state weighs on them alike; the table gives each one's wall time
 * (Node's start-up included), its peak resident memory, and recall@k of its answers against the exact scan's.
 * Usage: npm run bench:cold-query -- --index FILE [--index FILE]… [--rounds 5] [--top-k 10] [--query TEXT]… (a model
 * served over HTTP takes its address and key from the environment, as the command does: FUNCPIPE_EMBED_URL, …_KEY).
 */

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { cliEntry, runNode } from "./Child.ts"
import { fixed, kibToMb, markdownTable, maximum, median } from "./Table.ts"

const { values } = parseArgs({
  options: {
    index: { type: "string", multiple: true },
    rounds: { type: "string", default: "5" },
    "top-k": { type: "string", default: "10" },
    query: { type: "string", multiple: true, default: ["rust ownership and borrowing", "a quiet night sky", "tides"] }
  }
})
if (values.index === undefined || values.index.length === 0) {
  console.error("give the index: --index FILE (a SQLite index with vectors; several to compare them)")
  process.exit(2)
}
const indexes = values.index
const rounds = Number(values.rounds)
const topK = Number(values["top-k"])
const ways = [
  { name: "--exact", flags: ["--exact"] },
  { name: "as it is", flags: [] },
  { name: "--ann-candidates 64", flags: ["--ann-candidates", "64"] }
]
const scratch = mkdtempSync(join(tmpdir(), "funcpipe-cold-"))
const rssFile = join(scratch, "rss")
const entry = cliEntry()

/** One fresh `funcpipe query` on `index` with `flags`: its wall time, peak memory and results' keys. */
const ask = async (index: string, query: string, flags: ReadonlyArray<string>) => {
  const run = await runNode(
    [entry, "query", query, "--json", "--mode", "vector", "--top-k", String(topK), "--index", index, ...flags],
    rssFile
  )
  if (run.code !== 0) throw new Error(`funcpipe query ${flags.join(" ")} failed: ${run.stderr.trim()}`)
  const { results } = JSON.parse(run.stdout) as { results: ReadonlyArray<{ doc_id: string; start: number }> }
  return { wallMs: run.wallMs, rssKiB: run.peakRssKiB, keys: results.map((r) => `${r.doc_id} ${r.start}`) }
}

const runs = indexes.map(() =>
  ways.map(() => ({ walls: [] as Array<number>, rss: [] as Array<number>, hits: 0, asked: 0 }))
)
try {
  for (let round = 0; round < rounds; round++) {
    for (const query of values.query) {
      for (const [at, index] of indexes.entries()) {
        const answers = []
        for (const way of ways) answers.push(await ask(index, query, way.flags))
        const truth = new Set(answers[0]!.keys)
        answers.forEach((answer, i) => {
          const run = runs[at]![i]!
          run.walls.push(answer.wallMs)
          run.rss.push(answer.rssKiB)
          run.hits += answer.keys.filter((key) => truth.has(key)).length
          run.asked += truth.size
        })
      }
    }
    console.error(`round ${round + 1} of ${rounds}`)
  }
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
console.log(
  markdownTable(
    ["index", "`funcpipe query --mode vector`", "median s", "min–max s", "peak MB (median)", `recall@${topK}`],
    indexes.flatMap((index, at) =>
      ways.map((way, i) => {
        const { asked, hits, rss, walls } = runs[at]![i]!
        return [
          index,
          way.name,
          fixed(median(walls) / 1000, 2),
          `${fixed(Math.min(...walls) / 1000, 2)}–${fixed(maximum(walls) / 1000, 2)}`,
          kibToMb(median(rss)),
          fixed(asked === 0 ? Number.NaN : hits / asked, 3)
        ]
      })
    )
  )
)
console.log(`\n${rounds} rounds of ${values.query.length} queries, each way and index in turn`)
