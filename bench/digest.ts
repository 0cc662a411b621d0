/**
 * Prints a digest of a SQLite index, table by table: its row count and a SHA-256 over its rows in key order. Two
 * indexes built from the same corpus with the same settings must print the same lines; only the run's generation id
 * and the manifest's timestamps are left out, since they differ on every run.
 *
 *   node bench/digest.ts .funcpipe/index.db
 */
import { createHash } from "node:crypto"
import { DatabaseSync } from "node:sqlite"

const file = process.argv[2]
if (file === undefined) {
  process.stderr.write("usage: node bench/digest.ts INDEX.db\n")
  process.exit(2)
}
const db = new DatabaseSync(file, { readOnly: true })
const tables = db
  .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
  .all()
  .map((row) => String(row["name"]))

/** A value as bytes for the hash: blobs as they are, everything else as its JSON text, each with a type mark. */
const feed = (hash: ReturnType<typeof createHash>, value: unknown): void => {
  if (value instanceof Uint8Array) hash.update("b").update(String(value.length)).update(":").update(value)
  else hash.update("v").update(JSON.stringify(value)).update("\u0000")
}

for (const table of tables) {
  const columns = db
    .prepare(`PRAGMA table_info(${table})`)
    .all()
    .map((row) => String(row["name"]))
  const hash = createHash("sha256")
  let rows = 0
  for (const row of db
    .prepare(`SELECT * FROM ${table} ORDER BY ${columns.map((_, i) => i + 1).join(", ")}`)
    .iterate()) {
    rows += 1
    if (table === "meta" && row["key"] === "generation") continue
    for (const column of columns) {
      let value = row[column]
      if (table === "meta" && row["key"] === "manifest" && column === "value") {
        const { createdAt: _c, updatedAt: _u, ...rest } = JSON.parse(String(value))
        value = JSON.stringify(rest)
      }
      feed(hash, value)
    }
  }
  process.stdout.write(`${table.padEnd(12)} ${String(rows).padStart(9)} rows  ${hash.digest("hex")}\n`)
}
