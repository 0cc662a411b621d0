/**
 * Where an index lives, as a user names it (`--index`, `FUNCPIPE_INDEX`): a `postgres://` URL picks the PostgreSQL
 * store, anything else is the path of a SQLite file. The one place that tells them apart.
 */
import { createHash } from "node:crypto"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { cacheFileFor } from "../models/EmbeddingCache.ts"
import { isPostgresUrl, scrubUrl } from "../store/postgres/PgUrl.ts"
import { layerSqlite } from "../store/sqlite/SqliteIndexStore.ts"

/**
 * The store of the index at `index`: PostgreSQL for a `postgres://` (or `postgresql://`) URL, else a SQLite file. The
 * PostgreSQL store and its driver load only when a URL is given, so commands on a file start without them.
 */
export const layerIndexStore = (index: string) =>
  isPostgresUrl(index)
    ? Layer.unwrap(
        Effect.promise(() => import("../store/postgres/PgIndexStore.ts")).pipe(
          Effect.map((pg) => pg.layerPostgres(index))
        )
      )
    : layerSqlite(index)

/** `index` as it may be printed: a URL loses its password. */
export const showIndex = (index: string): string => (isPostgresUrl(index) ? scrubUrl(index) : index)

/**
 * Where the embedding cache of the index at `index` lives: beside a SQLite file; for a database, in `.funcpipe/` under
 * the working directory, named after the URL without its password (so each index of a server has its own).
 */
export const embeddingCacheFor = (index: string): string =>
  isPostgresUrl(index)
    ? join(".funcpipe", `postgres-${sha256(scrubUrl(index)).slice(0, 16)}.embeddings`)
    : cacheFileFor(index)

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex")
