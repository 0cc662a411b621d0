/** The status each pipeline failure answers with: the server's table, the docs' table, and a real request. */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { PIPELINE_STATUS } from "../src/Handlers.ts"
import { fixtureIndex, send, serverOver } from "./Fixture.ts"

const DOCS = fileURLToPath(new URL("../../../docs/cli.md", import.meta.url))

/** The rows of the docs' table of statuses by reason. */
const documented = (): Record<string, number> => {
  const text = readFileSync(DOCS, "utf8")
  const from = text.indexOf("<!-- statuses by reason")
  assert.isAbove(from, 0, "docs/cli.md has the table of statuses by reason")
  const rows: Record<string, number> = {}
  for (const line of text.slice(from).split("\n").slice(3)) {
    const row = /^\| `(\w+)` \| (\d{3}) \|/.exec(line)
    if (row === null) break
    rows[row[1]!] = Number(row[2])
  }
  return rows
}

describe("statuses", () => {
  it("are documented exactly as the server answers them, and the client's faults are never 5xx", () => {
    assert.deepStrictEqual(documented(), { ...PIPELINE_STATUS })
    for (const tag of ["InvalidInput", "ZeroVector", "QueryFilterInvalid", "NothingToIndex", "NothingKept"] as const) {
      assert.strictEqual(PIPELINE_STATUS[tag], 400, tag)
    }
  })

  it.effect("answer an invalid filter with 400 naming the field, not 503", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const found = yield* send("POST", "/v1/query", { text: "moon", where: "body = moon" }).pipe(
        Effect.provide(serverOver(file))
      )
      assert.strictEqual(found.status, 400)
      assert.strictEqual(found.body._tag, "InvalidRequest")
      assert.deepStrictEqual(
        found.body.issues.map((i: { path: string }) => i.path),
        ["where"]
      )
      assert.match(found.body.message, /reads body/)
    })
  )
})
