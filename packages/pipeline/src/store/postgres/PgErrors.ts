/**
 * The failures of an index that lives on a database server (PostgreSQL) rather than in a file: the server cannot be
 * reached, it refuses the credentials, or the place named holds tables that are not a FuncPipe index. Locations in
 * them are shown without the password.
 */
import { Schema } from "effect"

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
