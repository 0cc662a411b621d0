import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { terminalProgress } from "../src/Progress.ts"

describe("terminalProgress", () => {
  it.effect("stays quiet for quick runs, then redraws one line and clears it at the end", () =>
    Effect.gen(function*() {
      const written: Array<string> = []
      const progress = yield* terminalProgress((text) => void written.push(text))
      yield* progress.update("embedding documents", 1, 4)
      assert.deepStrictEqual(written, [])
      yield* TestClock.adjust("1 second")
      yield* progress.update("embedding documents", 2, 4)
      yield* progress.finish
      assert.deepStrictEqual(written, [
        `\rembedding documents [${"#".repeat(15)}${".".repeat(15)}] 2/4`,
        "\r\u001b[K"
      ])
    }))
})

describe("terminalProgress without a known total", () => {
  it.effect("shows the running count alone", () =>
    Effect.gen(function*() {
      const written: Array<string> = []
      const progress = yield* terminalProgress((text) => void written.push(text))
      yield* TestClock.adjust("1 second")
      yield* progress.update("indexing documents", 640, 0)
      assert.deepStrictEqual(written, ["\rindexing documents: 640"])
    }))
})
