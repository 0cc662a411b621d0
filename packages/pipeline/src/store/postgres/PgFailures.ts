/** The PostgreSQL driver's failures as the store's errors, in words a person can act on and with every trace of the password taken out. */

import { oneLine } from "@funcpipe/domain/Decode"
import { Redacted } from "effect"
import type { SqlError } from "effect/sql"
import { IndexBusy, IndexCredentialsRefused, IndexUnreachable, type StoreError, StoreFailure } from "../StoreErrors.ts"
import type { PgTarget } from "./PgUrl.ts"

/** The words for the network failures people meet. */
export const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "unknown host",
  EAI_AGAIN: "the host name could not be looked up",
  ETIMEDOUT: "timed out",
  ECONNRESET: "the connection was reset",
  EHOSTUNREACH: "no route to the host",
  ENETUNREACH: "the network is unreachable"
}

/** Translates the driver's error into the store's, with every trace of the password taken out of the text. */
export const storeError = (target: PgTarget, what: string, error: SqlError.SqlError): StoreError => {
  const location = target.location
  const reason = error.reason
  const cause = reason.cause as { readonly code?: unknown; readonly message?: unknown } | undefined
  const code = typeof cause?.code === "string" ? cause.code : undefined
  let detail = oneLine(typeof cause?.message === "string" && cause.message !== "" ? cause.message : error.message)
  if (target.password !== undefined) {
    const secret = Redacted.value(target.password)
    for (const form of [secret, encodeURIComponent(secret)]) if (form !== "") detail = detail.split(form).join("***")
  }
  switch (reason._tag) {
    case "ConnectionError":
      return new IndexUnreachable({
        location,
        reason: (code === undefined ? undefined : NETWORK_REASONS[code]) ?? detail
      })
    case "AuthenticationError":
      return new IndexCredentialsRefused({ location })
    case "LockTimeoutError":
      return new IndexBusy({ location })
  }
  switch (code) {
    case "28000": // invalid_authorization_specification: no such role, or pg_hba.conf turns it away
    case "28P01": // invalid_password
      return new IndexCredentialsRefused({ location })
    case "3D000": // invalid_catalog_name
      return new StoreFailure({
        location,
        reason: `the database ${target.database} does not exist; create it first (see docs/team.md)`
      })
    case "57P01": // admin_shutdown
    case "57P02": // crash_shutdown
    case "57P03": // cannot_connect_now
      return new IndexUnreachable({ location, reason: "the server is shutting down or starting up" })
    case "53100": // disk_full
      return new StoreFailure({ location, reason: "the database server's disk is full; nothing was changed" })
    case "42501": // insufficient_privilege
      return new StoreFailure({ location, reason: `permission denied while ${what}: ${detail}` })
  }
  return new StoreFailure({ location, reason: `${what}: ${detail}` })
}
