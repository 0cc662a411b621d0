/** The one rule every run reads records by: bad records skipped, the first record of a doc id wins, then the keep rule. */
import { assert, describe, it } from "@effect/vitest"
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { Result } from "effect"
import { BadRecord } from "../src/read/BadRecord.ts"
import { claimer } from "../src/read/Claim.ts"

const record = (docId: string, source: string, line: number) =>
  Result.succeed({
    source,
    line,
    doc: new RawDoc({ docId: DocId.make(docId), title: "", body: "text", categories: null })
  })
const records = [
  record("a", "one.jsonl", 1),
  Result.fail(new BadRecord({ source: "one.jsonl", line: 2, reason: "not JSON" })),
  record("b", "one.jsonl", 3),
  record("a", "two.jsonl", 1),
  record("c", "note.md", 0),
  record("c", "two.jsonl", 2)
]
const noB = (doc: RawDoc) => doc.docId !== "b"

describe("claimer", () => {
  it("takes the first record of a doc id, skips later ones naming where the first was read, then applies the rule", () => {
    const claim = claimer(noB)
    const taken = records.map((r) => {
      const c = claim.take(r)
      return c._tag === "Skipped"
        ? `skip ${c.skip.source}:${c.skip.line} ${c.skip.reason}`
        : c._tag === "Unread"
          ? `unread ${c.file}`
          : `${c._tag} ${c.sourced.doc.docId}`
    })
    assert.deepStrictEqual(taken, [
      "Kept a",
      "skip one.jsonl:2 not JSON",
      "Dropped b",
      'skip two.jsonl:1 the doc id "a" was already read from one.jsonl:1',
      "Kept c",
      'skip two.jsonl:2 the doc id "c" was already read from note.md'
    ])
    // A document the rule left out was still read: it is not "gone" from the paths.
    assert.deepStrictEqual(["a", "b", "c", "d"].map(claim.has), [true, true, true, false])
  })

  it("takes every record again with repeats kept, as the reference's chunk output does", () => {
    const claim = claimer(noB, "keep")
    assert.deepStrictEqual(
      records.map((r) => claim.take(r)._tag),
      ["Kept", "Skipped", "Dropped", "Kept", "Kept", "Kept"]
    )
  })
})
