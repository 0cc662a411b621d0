/**
 * The store's errors: one family for every store (the SQLite file and PostgreSQL), each with a message a person can
 * act on, and one guard that tells them from anything else.
 */
import { Schema } from "effect"

/**
 * What the store was told by the layer below it (SQLite's or the system's error), kept for logs and debugging: a
 * store error's message never shows it, and it is left out wherever the error is shown to people.
 */
const UnderlyingCause = Schema.optionalKey(Schema.Defect())

/** The file is not a FuncPipe index (another SQLite database, or not a database at all). */
export class NotAnIndex extends Schema.TaggedError<NotAnIndex>()("NotAnIndex", {
  location: Schema.String,
  cause: UnderlyingCause
}) {
  override get message(): string {
    return `${this.location} is not a FuncPipe index; pass another --index path or move the file away`
  }
}

/** The index file is damaged (truncated, overwritten) or holds values that break the index's rules. */
export class IndexCorrupt extends Schema.TaggedError<IndexCorrupt>()("IndexCorrupt", {
  location: Schema.String,
  detail: Schema.String,
  cause: UnderlyingCause
}) {
  override get message(): string {
    return (
      `the index at ${this.location} is damaged (${this.detail}); rebuild it with: ` +
      `funcpipe index <paths...> --rebuild --index ${this.location}`
    )
  }
}

/** The index was written by a newer FuncPipe whose layout this build does not know. */
export class IndexTooNew extends Schema.TaggedError<IndexTooNew>()("IndexTooNew", {
  location: Schema.String,
  found: Schema.Int,
  supported: Schema.Int
}) {
  override get message(): string {
    // The file's own layout number is not the index's format (what `status` shows): the message names neither.
    return `the index at ${this.location} was made by a newer FuncPipe, in a format this one cannot read; upgrade FuncPipe`
  }
}

/** The index was written by an older FuncPipe whose layout this build no longer reads; it must be rebuilt. */
export class IndexTooOld extends Schema.TaggedError<IndexTooOld>()("IndexTooOld", {
  location: Schema.String,
  found: Schema.Int,
  supported: Schema.Int
}) {
  override get message(): string {
    return (
      `the index at ${this.location} was made by an older FuncPipe, in a format this one no longer reads; ` +
      `rebuild it with: funcpipe index <paths...> --rebuild --index ${this.location}`
    )
  }
}

/** Another process is writing the index right now. */
export class IndexBusy extends Schema.TaggedError<IndexBusy>()("IndexBusy", {
  location: Schema.String,
  cause: UnderlyingCause
}) {
  override get message(): string {
    return `another FuncPipe run is writing the index at ${this.location}; try again when it has finished`
  }
}

/** The index could not be read or written for a reason outside FuncPipe (disk full, permissions, …). */
export class StoreFailure extends Schema.TaggedError<StoreFailure>()("StoreFailure", {
  location: Schema.String,
  reason: Schema.String,
  cause: UnderlyingCause
}) {
  override get message(): string {
    return `cannot use the index at ${this.location}: ${this.reason}`
  }
}

/**
 * The failures of an index that lives on a database server (PostgreSQL) rather than in a file: the server cannot be
 * reached, it refuses the credentials, or the place named holds tables that are not a FuncPipe index. Locations in
 * them are shown without the password.
 */

/** The database server could not be reached (nothing listens at the address, the host is unknown, or it timed out). */
export class IndexUnreachable extends Schema.TaggedError<IndexUnreachable>()("IndexUnreachable", {
  location: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return (
      `cannot reach the database server of the index at ${this.location} (${this.reason}); check that it runs ` +
      "and that the host and port in the URL are right"
    )
  }
}

/** The database server refused the user name or password (which is never shown). */
export class IndexCredentialsRefused extends Schema.TaggedError<IndexCredentialsRefused>()("IndexCredentialsRefused", {
  location: Schema.String
}) {
  override get message(): string {
    return (
      `the database server refused the user name or password for the index at ${this.location}; check them ` +
      "in the URL (the password is not shown)"
    )
  }
}

/** The schema holds tables that are not a FuncPipe index, so FuncPipe neither reads nor writes them. */
export class ForeignSchema extends Schema.TaggedError<ForeignSchema>()("ForeignSchema", {
  location: Schema.String,
  schema: Schema.String,
  tables: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const shown = this.tables.slice(0, 5).join(", ") + (this.tables.length > 5 ? ", …" : "")
    return (
      `the schema ${this.schema} at ${this.location} holds tables that are not a FuncPipe index (${shown}); ` +
      "name another schema with ?schema=NAME in the URL"
    )
  }
}

/** Every error a store fails with. */
export const StoreError = Schema.Union([
  NotAnIndex,
  IndexCorrupt,
  IndexTooNew,
  IndexTooOld,
  IndexBusy,
  StoreFailure,
  IndexUnreachable,
  IndexCredentialsRefused,
  ForeignSchema
])
export type StoreError = typeof StoreError.Type

/** Whether `u` is one of the store's errors. */
export const isStoreError: (u: unknown) => u is StoreError = Schema.is(StoreError)
