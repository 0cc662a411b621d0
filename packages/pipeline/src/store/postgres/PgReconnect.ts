/** A PostgreSQL store that connects when first used, and again with a growing wait after an attempt fails. */

import { Clock, Effect, Result, Semaphore } from "effect"
import { IndexStore } from "../IndexStore.ts"
import type { StoreError } from "../StoreErrors.ts"

/** How long a store waits after a failed connection before trying again: doubling from 1 s up to 30 s. */
const RETRY_MILLIS = { first: 1_000, most: 30_000 }

/**
 * A store that connects on first use rather than when it is made, and again after a failed attempt: a server whose
 * database is down starts, answers with the reason, and serves once the database is back. Between attempts (1 s,
 * doubling to 30 s) every use fails at once with the last attempt's error, so a server polling each second does not
 * knock each second.
 */
export const reconnecting = (
  location: string,
  connect: Effect.Effect<IndexStore["Service"], StoreError>
): IndexStore["Service"] => {
  let store: IndexStore["Service"] | undefined
  let failed: { readonly error: StoreError; readonly at: number; readonly wait: number } | undefined
  const lock = Semaphore.makeUnsafe(1)
  const connected: Effect.Effect<IndexStore["Service"], StoreError> = lock.withPermits(1)(
    Effect.gen(function* () {
      if (store !== undefined) return store
      const now = yield* Clock.currentTimeMillis
      if (failed !== undefined && now - failed.at < failed.wait) return yield* Effect.fail(failed.error)
      const made = yield* Effect.result(connect)
      if (Result.isFailure(made)) {
        const wait = failed === undefined ? RETRY_MILLIS.first : Math.min(RETRY_MILLIS.most, failed.wait * 2)
        failed = { error: made.failure, at: now, wait }
        return yield* Effect.fail(made.failure)
      }
      failed = undefined
      return (store = made.success)
    })
  )
  return IndexStore.of({
    location,
    manifest: Effect.flatMap(connected, (s) => s.manifest),
    roots: Effect.flatMap(connected, (s) => s.roots),
    documents: Effect.flatMap(connected, (s) => s.documents),
    snapshot: Effect.flatMap(connected, (s) => s.snapshot),
    version: Effect.flatMap(connected, (s) => s.version),
    checkpoint: Effect.void,
    check: Effect.flatMap(connected, (s) => s.check),
    transaction: (body, transactionOptions) => Effect.flatMap(connected, (s) => s.transaction(body, transactionOptions))
  })
}
