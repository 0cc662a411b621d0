import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { progressLine, terminalProgress } from "../src/output/Progress.ts"

describe("terminalProgress", () => {
  it.effect("stays quiet for quick runs, then redraws one line and clears it at the end", () =>
    Effect.gen(function* () {
      const written: Array<string> = []
      const progress = yield* terminalProgress(
        (text) => void written.push(text),
        () => 80
      )
      yield* progress.update("embedding documents", 1, 4)
      assert.deepStrictEqual(written, [])
      yield* TestClock.adjust("1 second")
      yield* progress.update("embedding documents", 2, 4)
      yield* progress.finish
      assert.deepStrictEqual(written, [
        `\rembedding documents [${"#".repeat(15)}${".".repeat(15)}] 2/4, 1/s, 2s left`,
        "\r\u001b[K"
      ])
    })
  )

  it.effect("shows the rate since the stage began and the time left, and starts over for a new stage", () =>
    Effect.gen(function* () {
      const written: Array<string> = []
      const progress = yield* terminalProgress(
        (text) => void written.push(text),
        () => 100
      )
      yield* progress.update("embedding documents", 0, 90_000)
      yield* TestClock.adjust("4 seconds")
      yield* progress.update("embedding documents", 12_000, 90_000)
      yield* progress.update("writing documents", 0, 0)
      yield* TestClock.adjust("2 seconds")
      yield* progress.update("writing documents", 500, 0)
      assert.deepStrictEqual(
        written.map((line) => line.replace(/\[[#.]+\] /, "")),
        [
          "\rembedding documents 12000/90000, 3000/s, 26s left",
          "\rwriting documents: 0",
          "\rwriting documents: 500, 250/s"
        ]
      )
    })
  )
})

describe("terminalProgress without a known total", () => {
  it.effect("shows the running count alone", () =>
    Effect.gen(function* () {
      const written: Array<string> = []
      const progress = yield* terminalProgress(
        (text) => void written.push(text),
        () => 80
      )
      yield* TestClock.adjust("1 second")
      yield* progress.update("indexing documents", 640, 0)
      assert.deepStrictEqual(written, ["\rindexing documents: 640"])
    })
  )
})

describe("terminalProgress in a narrow terminal", () => {
  it.effect("keeps every line shorter than the terminal, so it redraws in place instead of wrapping", () =>
    Effect.gen(function* () {
      const written: Array<string> = []
      let columns = 40
      const progress = yield* terminalProgress(
        (text) => void written.push(text),
        () => columns
      )
      yield* TestClock.adjust("1 second")
      yield* progress.update("indexing documents", 1234, 5678)
      columns = 12 // the window was made narrower
      yield* progress.update("indexing documents", 2345, 5678)
      yield* progress.update("indexing documents", 2346, 0)
      assert.deepStrictEqual(written, ["\rindexing documents: 1234/5678", "\r2345/5678", "\r2346"])
    })
  )

  it("narrows the bar before dropping it, and always fits", () => {
    const half = `${"#".repeat(7)}${".".repeat(7)}`
    assert.strictEqual(progressLine("indexing documents", 5, 10, 41), `indexing documents [${half}] 5/10`)
    for (let columns = 1; columns <= 100; columns++) {
      for (const [done, total] of [
        [5, 10],
        [123456, 0],
        [99999, 100000]
      ] as const) {
        const line = progressLine("running queries", done, total, columns)
        assert.isAtMost(line.length, Math.max(columns - 1, 1), `${columns} columns: ${line}`)
      }
    }
  })
})
