/** Reading Prometheus' text format in tests, and checking it with Debian's promtool. */

import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"

/** Whether a line is a sample of `name` with every one of `labels`. */
const isSample = (line: string, name: string, labels: Record<string, string>): boolean =>
  (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) &&
  Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`))

const numberIn = (line: string): number => Number(line.slice(line.lastIndexOf(" ") + 1))

/** The value of the first sample of `name` whose labels include every one of `labels`, or undefined. */
export const sample = (text: string, name: string, labels: Record<string, string> = {}): number | undefined => {
  const line = text.split("\n").find((one) => isSample(one, name, labels))
  return line === undefined ? undefined : numberIn(line)
}

/** The sum of the samples of `name` whose labels include every one of `labels` (say, over every mode). */
export const total = (text: string, name: string, labels: Record<string, string> = {}): number =>
  text
    .split("\n")
    .filter((line) => isSample(line, name, labels))
    .reduce((sum, line) => sum + numberIn(line), 0)

const PROMTOOL = "/usr/bin/promtool"

/**
 * Whether promtool checks run: CI installs Debian's prometheus package (.ci/run) and must run them; elsewhere they are
 * skipped without it.
 */
export const promtoolChecks = existsSync(PROMTOOL) || process.env["CI"] !== undefined

/** `promtool check metrics` on `text`: its exit status and what it printed. */
export const checkMetrics = (text: string): { readonly status: number | null; readonly output: string } => {
  const checked = spawnSync(PROMTOOL, ["check", "metrics"], { input: text, encoding: "utf8" })
  return { status: checked.status, output: `${checked.stdout}${checked.stderr}` }
}
