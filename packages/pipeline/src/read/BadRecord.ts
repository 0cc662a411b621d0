/** The per-record failure of a document source: one bad row, line or file, while the rest goes on. */
import { Schema } from "effect"

/** A record that could not become a document; `line` is 1-based (0 when the whole file is meant). */
export class BadRecord extends Schema.TaggedError<BadRecord>()("BadRecord", {
  source: Schema.String,
  line: Schema.Int,
  reason: Schema.String
}) {
  override get message(): string {
    return this.line > 0 ? `${this.source}:${this.line}: ${this.reason}` : `${this.source}: ${this.reason}`
  }
}
