/** A temporary index store: the SQLite store on a file in a temporary folder, private to one run or test. */

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { IndexStore } from "../IndexStore.ts"
import { StoreFailure } from "../StoreErrors.ts"
import { makeSqliteStore } from "./SqliteIndexStore.ts"

/**
 * A private index that lives as long as the layer, for tests and one-off runs (`funcpipe search`). It is the SQLite
 * store on a file in a temporary folder that is removed when the layer is released, so it follows the same contract
 * and keeps memory bounded however much is indexed.
 */
export const layerTemporary: Layer.Layer<IndexStore, StoreFailure> = Layer.effect(
  IndexStore,
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.try({
        try: () => mkdtempSync(join(tmpdir(), "funcpipe-memory-")),
        catch: (error) => new StoreFailure({ location: "memory", reason: String(error), cause: error })
      }),
      // Released after the store, so its connections are closed before the folder goes.
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    const store = yield* makeSqliteStore(join(dir, "index.db"))
    return IndexStore.of({ ...store, location: "memory" })
  })
)
