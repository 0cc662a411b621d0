/** Test helpers over an index file's paged graphs (the `ann_rows` table). */
import { DatabaseSync } from "node:sqlite"

/** Rewrites every stored graph row of the index at `file` through `change`, given a view on the row's bytes. */
export const rewriteGraphRows = (file: string, change: (row: DataView) => void): void => {
  const db = new DatabaseSync(file)
  try {
    const rewrite = db.prepare("UPDATE ann_rows SET data = ? WHERE id = ?")
    for (const row of db.prepare("SELECT id, data FROM ann_rows").all() as Array<{ id: number; data: Uint8Array }>) {
      change(new DataView(row.data.buffer, row.data.byteOffset, row.data.byteLength))
      rewrite.run(row.data, row.id)
    }
  } finally {
    db.close()
  }
}
