import { DatabaseSync } from "node:sqlite"
for (const mm of [0, 1 << 30, 0, 1 << 30]) {
  const t0 = performance.now()
  const db = new DatabaseSync("/tmp/fp/abe/index.db", { readOnly: true })
  if (mm) db.exec(`PRAGMA mmap_size = ${mm}`)
  const t = performance.now(); let bytes = 0
  const st = db.prepare("SELECT data FROM vectors WHERE id = ?")
  const ids = db.prepare("SELECT id FROM vectors").all().map((r: any) => r.id)
  const t1 = performance.now()
  for (const id of ids) bytes += (st.get(id) as any).data.byteLength
  console.log(mm, "ids", (t1 - t).toFixed(1), "blobs", (performance.now() - t1).toFixed(1), "ms", bytes, ids.length, "open", (t - t0).toFixed(1))
  db.close()
}
