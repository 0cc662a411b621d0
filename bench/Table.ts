/** Markdown tables and the small statistics and number formats of the benchmark report. */

/** The value at quantile `q` (0 … 1) of `xs` by the nearest-rank method; NaN for no values. */
export const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  if (xs.length === 0) return Number.NaN
  const sorted = Float64Array.from(xs).sort()
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

/** The median (the lower middle value for an even count). */
export const median = (xs: ReadonlyArray<number>): number => quantile(xs, 0.5)

/** The 95th percentile. */
export const p95 = (xs: ReadonlyArray<number>): number => quantile(xs, 0.95)

/** The largest value (NaN for none). */
export const maximum = (xs: ReadonlyArray<number>): number => (xs.length === 0 ? Number.NaN : Math.max(...xs))

/** A number with `digits` decimals, or "n/a" when it is not finite. */
export const fixed = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : "n/a")

/** Milliseconds with a precision that suits their size. */
export const ms = (x: number): string => fixed(x, x < 1 ? 3 : x < 100 ? 2 : 0)

/** KiB as MB (10^6 bytes). */
export const kibToMb = (kib: number): string => fixed((kib * 1024) / 1e6, 1)

/** An integer with thousands separators. */
export const count = (n: number): string => n.toLocaleString("en-US")

const NUMERIC = /^(?:[-+]?[\d.,]+(?:[×%]|\s.*)?|n\/a|NaN)$/

/**
 * A Markdown table: a column is right-aligned when every body cell of it is a number (possibly followed by a unit or a
 * note), left-aligned otherwise, and the first column always left. Cells are padded so the source reads as a table
 * too; pipes inside cells are escaped.
 */
export const markdownTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const escapeCell = (cell: string) => cell.replace(/\|/g, "\\|")
  const cells = [header, ...rows].map((row) => row.map(escapeCell))
  const widths = header.map((_, c) => Math.max(3, ...cells.map((row) => (row[c] ?? "").length)))
  const right = header.map(
    (_, c) =>
      c > 0 &&
      rows.some((row) => (row[c] ?? "") !== "") &&
      rows.every((row) => (row[c] ?? "") === "" || NUMERIC.test(row[c]!))
  )
  const line = (row: ReadonlyArray<string>) =>
    `| ${widths.map((w, c) => (right[c] ? (row[c] ?? "").padStart(w) : (row[c] ?? "").padEnd(w))).join(" | ")} |`
  const rule = `| ${widths.map((w, c) => (right[c] ? `${"-".repeat(w - 1)}:` : "-".repeat(w))).join(" | ")} |`
  return [line(cells[0]!), rule, ...cells.slice(1).map(line)].join("\n")
}
