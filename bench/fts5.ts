/**
 * SQLite FTS5 as a peer, run as a child of the benchmark so its wall time and peak memory are measured as FuncPipe's
 * are: `node bench/fts5.ts index <corpus.jsonl> <fts.db>` builds an FTS5 table (porter tokenizer over unicode61) of
 * the corpus' titles and texts in one transaction; `node bench/fts5.ts query <fts.db> <queries.json> <k> <reps>`
 * answers each query (its words OR-ed, ranked by `bm25()`) once to warm and `reps` times timed, and prints the times
 * as JSON.
 */
import { createReadStream, readFileSync } from "node:fs"
import { createInterface } from "node:readline"
import { DatabaseSync } from "node:sqlite"

const [command, ...args] = process.argv.slice(2)

/** The words of a query as an FTS5 expression: each word quoted, OR-ed (as BM25 engines rank). */
const ftsQuery = (text: string): string =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => `"${w}"`).join(" OR ")

if (command === "index") {
  const [corpus, file] = args as [string, string]
  const db = new DatabaseSync(file)
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
  db.exec("CREATE VIRTUAL TABLE docs USING fts5(doc_id UNINDEXED, title, body, tokenize = 'porter unicode61')")
  const insert = db.prepare("INSERT INTO docs (doc_id, title, body) VALUES (?, ?, ?)")
  db.exec("BEGIN")
  let docs = 0
  for await (const line of createInterface({ input: createReadStream(corpus), crlfDelay: Infinity })) {
    if (line === "") continue
    const record = JSON.parse(line) as { id: string; title: string; text: string }
    insert.run(record.id, record.title, record.text)
    docs++
  }
  db.exec("COMMIT")
  db.close()
  console.log(JSON.stringify({ docs }))
} else if (command === "query") {
  const [file, queriesFile, k, reps] = args as [string, string, string, string]
  const db = new DatabaseSync(file, { readOnly: true })
  const select = db.prepare("SELECT doc_id, bm25(docs) AS score FROM docs WHERE docs MATCH ? ORDER BY score LIMIT ?")
  const queries = JSON.parse(readFileSync(queriesFile, "utf8")) as ReadonlyArray<string>
  const times = queries.map((text) => {
    const expression = ftsQuery(text)
    if (expression === "") return []
    select.all(expression, Number(k))
    return Array.from({ length: Number(reps) }, () => {
      const t0 = performance.now()
      select.all(expression, Number(k))
      return performance.now() - t0
    })
  })
  console.log(JSON.stringify(times))
} else if (command !== undefined) {
  console.error(`fts5.ts: unknown command ${command}`)
  process.exitCode = 2
}
