/** The PostgreSQL server a benchmark runs against, a schema of its own there, and statements run on it directly. */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"

/** The server: `--url` (given as `flag`), else $FUNCPIPE_BENCH_PG, else $FUNCPIPE_TEST_PG; exits 2 naming how. */
export const benchServer = (flag: string | undefined): string => {
  const server = flag ?? process.env["FUNCPIPE_BENCH_PG"] ?? process.env["FUNCPIPE_TEST_PG"]
  if (server === undefined) {
    console.error("name a PostgreSQL server: --url postgres://user:password@host:port/db (or FUNCPIPE_BENCH_PG)")
    process.exit(2)
  }
  return server
}

/** The index URL for `schema` on `server`. */
export const inSchema = (server: string, schema: string): string => {
  const url = new URL(server)
  url.searchParams.set("schema", schema)
  return url.href
}

/** Runs `f` on one connection to `server`, closed after. */
export const onServer = <A>(server: string, f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(server), maxConnections: 1 }), f)).pipe(
      Effect.provide(Reactivity.layer)
    ) as Effect.Effect<A>
  )
