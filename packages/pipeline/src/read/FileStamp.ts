/** Takes a file's stamp (see `base/Stamps.ts`), and the record of a file the source left unread because of it. */

import { type Stats, statSync } from "node:fs"
import type { FileStamp } from "../base/Stamps.ts"

/**
 * The stamp of a regular file (read by the converter of version `reader`, if one reads it), `undefined` for anything
 * else or a file that cannot be looked at.
 */
export const stampOf = (file: string, shown: string, reader?: number): FileStamp | undefined => {
  let info: Stats | undefined
  try {
    // Not as big integers (nanoseconds): those cost a third more per file, and a microsecond is fine enough.
    info = statSync(file, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
  if (info === undefined || !info.isFile()) return undefined
  const stamp = { shown, size: info.size, mtimeMs: info.mtimeMs, ctimeMs: info.ctimeMs, ino: info.ino }
  return reader === undefined ? stamp : { ...stamp, reader }
}

/**
 * What the source is told to leave unread: given a file and its stamp now, whether the index already holds what it
 * gives (see `IndexRun`).
 */
export type KnownFile = (file: string, stamp: FileStamp) => boolean

/** A file the source left unread because `KnownFile` said the index holds it: a record in its place in the stream. */
export class UnreadFile {
  readonly _tag = "UnreadFile"
  readonly source: string
  readonly stamp: FileStamp
  constructor(source: string, stamp: FileStamp) {
    this.source = source
    this.stamp = stamp
  }
  get message(): string {
    return `${this.stamp.shown}: unchanged since it was indexed, not read again`
  }
}
