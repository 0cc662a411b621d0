/** The guard's changeable settings (`serve` reloads them on SIGHUP): what changes is made anew, what does not keeps its state. */

import { assert, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import { GuardCell } from "../src/Guard.ts"

describe("GuardCell", () => {
  it("keeps a limit's state when the limit did not change, and makes it anew when it did", () => {
    const cell = new GuardCell({
      token: Redacted.make("one"),
      maxBodyBytes: 1024,
      rateLimit: { perSecond: 5, burst: 10 },
      concurrency: { inFlight: 2, queue: 4 }
    })
    const first = cell.state
    cell.set({ ...cell.current, token: Redacted.make("two"), maxBodyBytes: 2048 })
    const second = cell.state
    assert.strictEqual(second.rates, first.rates)
    assert.strictEqual(second.turns, first.turns)
    assert.notDeepEqual(second.expected, first.expected)
    assert.strictEqual(second.maxBodyBytes, 2048)
    cell.set({ ...cell.current, rateLimit: { perSecond: 1, burst: 1 }, concurrency: undefined })
    const third = cell.state
    assert.notStrictEqual(third.rates, second.rates)
    assert.isDefined(third.rates)
    assert.isUndefined(third.turns)
    cell.set({ ...cell.current, token: undefined })
    assert.isUndefined(cell.state.expected)
  })
})
