/**
 * A private index that lives as long as its layer, for tests and one-off runs (`funcpipe search`): the SQLite store on
 * a file in a temporary folder.
 */

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { IndexStore, StoreFailure } from "./IndexStore.ts"
import { makeSqliteStore } from "./SqliteIndexStore.ts"

/**
 * A private index that lives as long as the layer, for tests and one-off runs (`funcpipe search`). It is the SQLite
 * store on a file in a temporary folder that is removed when the layer is released, so it follows the same contract
 * and keeps memory bounded however much is indexed.
 */
export const layerMemory = Layer.effect(
  IndexStore,
  Effect.map(
    Effect.acquireRelease(
      Effect.try({
        try: () => {
          const dir = mkdtempSync(join(tmpdir(), "funcpipe-memory-"))
          return { dir, store: makeSqliteStore(join(dir, "index.db")) }
        },
        catch: (error) => new StoreFailure({ location: "memory", reason: String(error), cause: error })
      }),
      ({ dir, store }) =>
        Effect.andThen(
          store.close,
          Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
        )
    ),
    ({ store }) => IndexStore.of({ ...store.service, location: "memory" })
  )
)
