/**
 * Boundary service: vectors a model already made, kept by (model fingerprint, SHA-256 of the text), so that a run of a
 * slow or paid model that stopped halfway pays, when run again, only for what it had not embedded.
 */

import { createHash } from "node:crypto"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { Embedding } from "@funcpipe/domain/Embedding"
import { Context, Effect, Layer, Schema } from "effect"
import { countEmbeddingCache } from "../platform/Telemetry.ts"
import { Embedder } from "./Embedder.ts"

/** The cache file cannot be opened, read or written. */
export class CacheFailure extends Schema.TaggedError<CacheFailure>()("CacheFailure", {
  location: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `the embedding cache at ${this.location} cannot be used (${this.reason}); delete it and run again`
  }
}

export class EmbeddingCache extends Context.Service<
  EmbeddingCache,
  {
    /** The cached vector of each text under `fingerprint` (`undefined` where there is none), in order. */
    readonly get: (
      fingerprint: string,
      texts: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<Float64Array | undefined>, CacheFailure>
    /** Keeps vectors made under `fingerprint`, durably (each call commits on its own). */
    readonly put: (
      fingerprint: string,
      entries: ReadonlyArray<{ readonly text: string; readonly vector: ReadonlyArray<number> }>
    ) => Effect.Effect<void, CacheFailure>
  }
>()("pipeline/EmbeddingCache") {
  /** No cache: every text is embedded (the default, and right for a fast local model). */
  static readonly layerNone = Layer.succeed(
    EmbeddingCache,
    EmbeddingCache.of({
      get: (_, texts) => Effect.succeed(texts.map(() => undefined)),
      put: () => Effect.void
    })
  )

  /** A cache in the SQLite file `file` (made when needed), opened on first use and closed with the layer. */
  static readonly layerSqlite = (file: string) =>
    Layer.effect(
      EmbeddingCache,
      Effect.gen(function* () {
        let db: DatabaseSync | undefined
        const fail = (error: unknown) =>
          new CacheFailure({ location: file, reason: error instanceof Error ? error.message : String(error) })
        const open = (): DatabaseSync => {
          if (db !== undefined) return db
          mkdirSync(dirname(file), { recursive: true })
          const opened = new DatabaseSync(file, { timeout: 5000 })
          opened.exec(
            "PRAGMA journal_mode = WAL; CREATE TABLE IF NOT EXISTS vectors " +
              "(fingerprint TEXT NOT NULL, hash BLOB NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (fingerprint, hash)) WITHOUT ROWID"
          )
          return (db = opened)
        }
        yield* Effect.addFinalizer(() => Effect.sync(() => db?.close()))
        return EmbeddingCache.of({
          get: (fingerprint, texts) =>
            Effect.try({
              try: () => {
                const select = open().prepare("SELECT vector FROM vectors WHERE fingerprint = ? AND hash = ?")
                return texts.map((text) => {
                  const row = select.get(fingerprint, textHash(text)) as { vector: Uint8Array } | undefined
                  return row === undefined ? undefined : toVector(row.vector)
                })
              },
              catch: fail
            }),
          put: (fingerprint, entries) =>
            Effect.try({
              try: () => {
                if (entries.length === 0) return
                const opened = open()
                const insert = opened.prepare(
                  "INSERT OR REPLACE INTO vectors (fingerprint, hash, vector) VALUES (?, ?, ?)"
                )
                opened.exec("BEGIN IMMEDIATE")
                try {
                  for (const { text, vector } of entries) insert.run(fingerprint, textHash(text), fromVector(vector))
                  opened.exec("COMMIT")
                } catch (error) {
                  opened.exec("ROLLBACK")
                  throw error
                }
              },
              catch: fail
            })
        })
      })
    )
}

/** Where the cache of the index at `index` lives: beside it, as `<index>.embeddings` (safe to delete at any time). */
export const cacheFileFor = (index: string): string => `${index}.embeddings`

const textHash = (text: string): Uint8Array => createHash("sha256").update(text, "utf8").digest()

const toVector = (bytes: Uint8Array): Float64Array => {
  const copy = new Uint8Array(bytes) // aligned for the float view
  return new Float64Array(copy.buffer, 0, copy.byteLength / 8)
}

const fromVector = (vector: ReadonlyArray<number>): Uint8Array => new Uint8Array(Float64Array.from(vector).buffer)

/**
 * `embedder` with `cache` in front: cached texts are not sent to the model again, and what the model makes is kept
 * (after each batch, so a run stopped halfway keeps what it paid for). Vectors come back bit for bit as the model made
 * them (float64), so a cached run indexes exactly as an uncached one.
 */
export const cachedEmbedder = (embedder: Embedder["Service"], cache: EmbeddingCache["Service"]): Embedder["Service"] =>
  Embedder.of({
    ...embedder,
    embedMany: (texts) =>
      Effect.gen(function* () {
        const cached = yield* cache.get(embedder.fingerprint, texts).pipe(
          Effect.orElseSucceed(() => texts.map(() => undefined)) // a broken cache costs requests, not the run
        )
        const missing = texts.filter((_, i) => cached[i] === undefined)
        yield* countEmbeddingCache(texts.length, texts.length - missing.length)
        const made = missing.length === 0 ? [] : yield* embedder.embedMany(missing)
        if (made.length > 0) {
          yield* Effect.ignore(
            cache.put(
              embedder.fingerprint,
              made.map((e, i) => ({ text: missing[i]!, vector: e.vector }))
            )
          )
        }
        let next = 0
        return texts.map((_, i) => {
          const hit = cached[i]
          if (hit === undefined) return made[next++]!
          return new Embedding(
            { vector: Array.from(hit) as [number, ...Array<number>], model: embedder.model },
            { disableChecks: true }
          )
        })
      })
  })
