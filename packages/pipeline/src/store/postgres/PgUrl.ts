/**
 * PostgreSQL index URLs: recognising, reading and printing them without the password. Kept apart from the store so
 * that every command can tell a URL from a file without loading the database driver.
 */
import { Redacted, Result } from "effect"

/** Whether an `--index` value names a PostgreSQL database (`postgres://…`, `postgresql://…`) rather than a file. */
export const isPostgresUrl = (index: string): boolean => /^postgres(?:ql)?:\/\//i.test(index)

/** The schema an index lives in unless the URL's `schema` parameter names another. */
export const DEFAULT_SCHEMA = "funcpipe"

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/** Where a PostgreSQL index lives, from its URL. */
export interface PgTarget {
  /** The URL for the driver: FuncPipe's own `schema` parameter taken out. */
  readonly url: Redacted.Redacted<string>
  /** The URL without its password, for messages. */
  readonly location: string
  readonly schema: string
  readonly database: string
  /** The password as written in the URL, so that messages can be scrubbed of it. */
  readonly password: Redacted.Redacted<string> | undefined
}

/**
 * The URL with any password taken out (`user:secret@` becomes `user@`, a `password` parameter is dropped), for
 * printing; text that is not a URL is returned with anything between `:` and `@` after `//` removed.
 */
export const scrubUrl = (text: string): string => {
  try {
    const url = new URL(text)
    url.password = ""
    url.searchParams.delete("password")
    return url.href
  } catch {
    return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*):.*@/i, "$1@")
  }
}

/**
 * Reads `postgres://user:password@host:port/database?schema=NAME` (any other parameters go to the driver). The schema
 * defaults to `funcpipe` and must be a plain lowercase name. Fails with the reason, never echoing the password.
 */
export const parsePgUrl = (text: string): Result.Result<PgTarget, string> => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return Result.fail("it is not a valid URL (postgres://user:password@host:port/database?schema=NAME)")
  }
  const schema = url.searchParams.get("schema") ?? DEFAULT_SCHEMA
  if (!SCHEMA_NAME.test(schema)) {
    return Result.fail(
      `the schema name ${JSON.stringify(schema)} must be lowercase letters, digits and _, not starting with a digit`
    )
  }
  url.searchParams.delete("schema")
  const database = decodeURIComponent(url.pathname.replace(/^\//, ""))
  const password =
    url.password !== "" ? decodeURIComponent(url.password) : (url.searchParams.get("password") ?? undefined)
  return Result.succeed({
    url: Redacted.make(url.href),
    location: scrubUrl(text),
    schema,
    database: database === "" ? "(the user's default)" : database,
    password: password === undefined ? undefined : Redacted.make(password)
  })
}
