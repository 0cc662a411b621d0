/** `node -C @funcpipe/source bench/pruneonly.ts <index.db> [queries] [seed]`: the pruned-against-exhaustive table alone, on an index the benchmark kept. */
import { comparePruning } from "./pruning.ts"
import { pickQueries, WORD_KINDS } from "./Queries.ts"

const KINDS = [...WORD_KINDS, "chunk text" as const]

import { readChunkRows } from "./Reference.ts"

const [file = "", queries = "20", seed = "42"] = process.argv.slice(2)
const rows = readChunkRows(file)
const picked = pickQueries(rows, Number(queries), 5, Number(seed))
const report = await comparePruning(file, picked, KINDS, 10, Number(process.env.REPS ?? 5))
console.log(report.table)
console.log(
  report.mismatches.length === 0
    ? "pruned answers identical to exhaustive ones: all"
    : `MISMATCHES: ${report.mismatches.join(" | ")}`
)
if (report.mismatches.length > 0) process.exitCode = 1
