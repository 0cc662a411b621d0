/** Why an index run changed nothing: each failure says what it found and how to go on. */
import { Schema } from "effect"

/** The stored index was built with other settings; the message says what changed and how to go on. */
export class SettingsChanged extends Schema.TaggedError<SettingsChanged>()("SettingsChanged", {
  location: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return (
      `the index at ${this.location} cannot be updated: ${this.detail}. Run the same command with --rebuild ` +
      `to rebuild it from scratch with the new settings`
    )
  }
}

/** The run would delete more of the index than it may without `--prune`; nothing was written. */
export class PruneNeeded extends Schema.TaggedError<PruneNeeded>()("PruneNeeded", {
  location: Schema.String,
  deleted: Schema.Int,
  stored: Schema.Int,
  reason: Schema.String
}) {
  override get message(): string {
    return (
      `this run would delete ${this.deleted} of the ${this.stored} documents in ${this.location} (${this.reason}), ` +
      `so it changed nothing. Check the paths; to delete them, run again with --prune (add --dry-run to list them)`
    )
  }
}

/** Every record under the paths was skipped, so the run had nothing to index; nothing was written. */
export class NothingToIndex extends Schema.TaggedError<NothingToIndex>()("NothingToIndex", {
  location: Schema.String,
  skipped: Schema.Int,
  first: Schema.String
}) {
  override get message(): string {
    const records = this.skipped === 1 ? "the only record" : `all ${this.skipped} records`
    return (
      `nothing to index: ${records} under the paths could not be read (${this.first}), so ${this.location} ` +
      `was left as it was`
    )
  }
}

/** The keep rule matched none of the documents read, so the run would have emptied the index; nothing was written. */
export class NothingKept extends Schema.TaggedError<NothingKept>()("NothingKept", {
  location: Schema.String,
  rule: Schema.String,
  dropped: Schema.Int
}) {
  override get message(): string {
    return (
      `the keep rule ${this.rule} kept none of the ${this.dropped} documents under the paths, so ` +
      `${this.location} was left as it was; check the rule (values and labels compare exactly, case included)`
    )
  }
}

/** `--vector-codes` for an index without graphs: codes say how the approximate index's graphs are walked. */
export class CodesNeedGraphs extends Schema.TaggedError<CodesNeedGraphs>()("CodesNeedGraphs", {
  location: Schema.String
}) {
  override get message(): string {
    return (
      `--vector-codes sets how the graphs of an approximate vector index are walked, and ${this.location} has none: ` +
      "add --ann hnsw (changing it needs --rebuild), for example: funcpipe index notes/ --ann hnsw --vector-codes i8"
    )
  }
}

/** The failures of an index run's own rules (the store's and the models' have their families). */
export const IndexRunError = Schema.Union([SettingsChanged, PruneNeeded, NothingToIndex, NothingKept, CodesNeedGraphs])
export type IndexRunError = typeof IndexRunError.Type

/** Whether `u` is one of the index run's failures. */
export const isIndexRunError: (u: unknown) => u is IndexRunError = Schema.is(IndexRunError)
