/**
 * PostgreSQL for tests: the server named by `FUNCPIPE_TEST_PG` (a URL such as
 * `postgres://funcpipe:funcpipe@127.0.0.1:5432/funcpipe`; `.ci/run` starts one and sets it). Every store a test makes
 * lives in a schema of its own, dropped when the test ends, so tests never see each other's indexes. Without the
 * variable, the suites that need the server are skipped and say so on the console: never passed without running.
 */

import { randomUUID } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { describe, it } from "@effect/vitest"
import { Effect, Redacted, type Scope } from "effect"
import { Reactivity } from "effect/reactivity"

/** The test server's URL, or `undefined` when none is configured. */
export const PG_URL: string | undefined = process.env["FUNCPIPE_TEST_PG"] || undefined

/** `describe` when the test server is configured; otherwise the suite is skipped with a warning on the console. */
export const describePg = (name: string, body: () => void): void => {
  if (PG_URL !== undefined) {
    describe(name, body)
    return
  }
  console.warn(`SKIPPED "${name}": it needs PostgreSQL; set FUNCPIPE_TEST_PG=postgres://user:password@host:port/db`)
  describe.skip(name, () => it("needs PostgreSQL (FUNCPIPE_TEST_PG)", () => undefined))
}

/** `url` with its `schema` parameter set. */
export const withSchema = (url: string, schema: string): string => {
  const parsed = new URL(url)
  parsed.searchParams.set("schema", schema)
  return parsed.href
}

/** Runs statements on the test server (outside any store), for set-up and clean-up. */
export const onServer = <A, E>(f: (sql: PgClient.PgClient) => Effect.Effect<A, E>, url = PG_URL!) =>
  Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(url), maxConnections: 1 }), f)).pipe(
    Effect.provide(Reactivity.layer)
  )

/** A fresh schema on the test server: its name and the store URL naming it; dropped when the scope closes. */
export const freshSchema: Effect.Effect<{ readonly schema: string; readonly url: string }, never, Scope.Scope> =
  Effect.acquireRelease(
    Effect.sync(() => {
      const schema = `test_${randomUUID().replace(/-/g, "").slice(0, 16)}`
      return { schema, url: withSchema(PG_URL!, schema) }
    }),
    ({ schema }) => Effect.orDie(onServer((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))
  )

/**
 * How many FuncPipe write locks on the index in `schema` the server shows as held (`granted`) or waited for: the
 * advisory lock a writer takes is keyed by 'FPIP' and the schema's name, hashed.
 */
export const writeLocks = (schema: string, granted: boolean) =>
  Effect.map(
    onServer(
      (sql) =>
        sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND granted = ${granted} AND classid = ${0x46504950}
          AND objid::bigint = (hashtext(${schema})::bigint + 4294967296) % 4294967296`
    ),
    (rows) => rows[0]!.n
  )
