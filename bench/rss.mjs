/** Preload for benchmarked children: on exit, writes the peak resident set size (KiB) to $FUNCPIPE_BENCH_RSS_FILE. */
import { writeFileSync } from "node:fs"

const file = process.env["FUNCPIPE_BENCH_RSS_FILE"]
if (file !== undefined && file !== "") {
  process.on("exit", () => writeFileSync(file, String(process.resourceUsage().maxRSS)))
}
