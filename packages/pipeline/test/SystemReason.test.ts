/** The system's real reason in messages: a refusal is named as one, not mistaken for a missing folder. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { folderReason, openReason } from "../src/platform/SystemReason.ts"

/** A Node system error with `code`, as `mkdirSync` or `accessSync` throws one. */
const systemError = (code: string) => Object.assign(new Error(`${code}: refused, mkdir`), { code })

describe("folderReason", () => {
  it("names a refusal and the folder that could not be written, not a folder that does not exist", () => {
    const root = mkdtempSync(join(tmpdir(), "funcpipe-reason-"))
    try {
      const file = join(root, "ro", "sub", "new.db")
      // The folder `ro` exists and refuses: the message says so (its subfolder does not exist only because of that).
      writeFileSync(join(root, "marker"), "")
      assert.strictEqual(
        folderReason(systemError("EACCES"), join(root, "sub", "new.db")),
        `permission denied: ${root} cannot be written to`
      )
      assert.strictEqual(
        folderReason(systemError("EROFS"), file),
        `the file system is read-only: ${root} cannot be written to`
      )
      // A file standing where a folder should be is what the path shows.
      assert.strictEqual(
        folderReason(systemError("ENOTDIR"), join(root, "marker", "new.db")),
        `${join(root, "marker")} is a file, not a folder`
      )
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe("openReason", () => {
  it("says whether the file or its folder refuses, when SQLite only says it cannot open", () => {
    const root = mkdtempSync(join(tmpdir(), "funcpipe-reason-"))
    try {
      const existing = join(root, "index.db")
      writeFileSync(existing, "")
      const refuse = () => {
        throw systemError("EACCES")
      }
      assert.strictEqual(openReason(existing, refuse), "permission denied: the file cannot be read and written")
      assert.strictEqual(
        openReason(join(root, "new.db"), refuse),
        `permission denied: the folder ${root} cannot be written to`
      )
      // Allowed, and nothing wrong with the path: the cause is elsewhere, and no reason is made up.
      assert.isUndefined(openReason(existing, () => undefined))
      assert.match(openReason(root, refuse) ?? "", /^it is a directory/)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})
