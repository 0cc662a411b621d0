/**
 * Preload for benchmarked children: on exit, writes the peak resident set size (KiB) to $FUNCPIPE_BENCH_RSS_FILE.
 * On Linux it is the process's own high-water mark (VmHWM): `resourceUsage().maxRSS` keeps, across exec, the peak
 * of the forked copy of the parent, so a small child reported the benchmark's own size.
 */
import { readFileSync, writeFileSync } from "node:fs"

const peakKiB = () => {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync("/proc/self/status", "utf8"))
    if (match !== null) return Number(match[1])
  } catch {}
  return process.resourceUsage().maxRSS
}

const file = process.env["FUNCPIPE_BENCH_RSS_FILE"]
if (file !== undefined && file !== "") {
  process.on("exit", () => writeFileSync(file, String(peakKiB())))
}
