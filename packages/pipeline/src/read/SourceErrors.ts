/** What stops reading the paths named for indexing altogether (a `BadRecord`, by contrast, skips one record). */
import { Schema } from "effect"

/** A path named for indexing does not exist. */
export class SourceMissing extends Schema.TaggedError<SourceMissing>()("SourceMissing", {
  path: Schema.String
}) {
  override get message(): string {
    return `nothing at ${this.path}: check the path`
  }
}

/** A path exists but cannot be read (permissions, a device, a broken link). */
export class SourceUnreadable extends Schema.TaggedError<SourceUnreadable>()("SourceUnreadable", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot read ${this.path}: ${this.reason}`
  }
}

/** A file named for indexing is of a kind FuncPipe does not read. */
export class UnsupportedSource extends Schema.TaggedError<UnsupportedSource>()("UnsupportedSource", {
  path: Schema.String
}) {
  override get message(): string {
    return `${this.path} is not a kind of file FuncPipe reads: give .md, .txt, .pdf, .html, .docx or .epub files, a .csv, a .jsonl, or a directory`
  }
}

/** A directory named for indexing holds no file FuncPipe reads. */
export class NoDocuments extends Schema.TaggedError<NoDocuments>()("NoDocuments", {
  path: Schema.String
}) {
  override get message(): string {
    return `${this.path} holds no .md, .txt, .pdf, .html, .docx, .epub, .csv or .jsonl files to index`
  }
}

/** What stops reading altogether (as opposed to a `BadRecord`, which skips one record). */
export type SourceError = SourceMissing | SourceUnreadable | UnsupportedSource | NoDocuments
