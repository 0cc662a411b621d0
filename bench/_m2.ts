import { DatabaseSync } from "node:sqlite"
const db = new DatabaseSync("/tmp/fp/abe/index.db", { readOnly: true })
const ids = db.prepare("SELECT id FROM vectors").all().map((r: any) => r.id)
for (const sql of ["SELECT data FROM vectors WHERE id = ?", "SELECT length(data) AS data FROM vectors WHERE id = ?", "SELECT hex(substr(data, 1, 4)) AS data FROM vectors WHERE id = ?", "SELECT data FROM vectors WHERE id = ?", "SELECT sum(length(data)) AS data FROM vectors WHERE id = ?"]) {
  const st = db.prepare(sql)
  const t = performance.now()
  for (const id of ids) st.get(id)
  console.log(sql, (performance.now() - t).toFixed(1))
}
const t = performance.now(); const bufs = []; for (let i = 0; i < 109; i++) bufs.push(new Uint8Array(130000).fill(1)); console.log("fresh fill", (performance.now() - t).toFixed(1))
