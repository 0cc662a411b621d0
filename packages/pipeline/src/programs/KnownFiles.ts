/**
 * The stat-based fast path of index runs and `status`: files whose stamp is as the index recorded it are not read
 * (their stored documents stand for them), and a run records the stamps of the files it read.
 */

import { type FileStamp, type RecordedStamp, sameStamp, settled } from "../base/Stamps.ts"
import type { KnownFile } from "../read/FileStamp.ts"
import type { StoredEntry } from "../store/IndexStore.ts"

/** Which files the index holds as they are now, and the stored documents of each. */
export interface KnownFiles {
  readonly known: KnownFile
  /** The stored documents read from `file`, in no particular order. */
  readonly docsOf: (file: string) => ReadonlyArray<StoredEntry>
  /** The stamp recorded for `file`. */
  readonly recorded: (file: string) => RecordedStamp | undefined
}

/**
 * The files whose stamp now is the one recorded and whose recorded documents are all stored (a document deleted or
 * skipped since, by another run or another build, sends the file to be read again).
 */
export const knownFiles = (stamps: ReadonlyMap<string, RecordedStamp>, stored: Iterable<StoredEntry>): KnownFiles => {
  const bySource = new Map<string, Array<StoredEntry>>()
  if (stamps.size > 0) {
    for (const entry of stored) {
      if (!stamps.has(entry.source)) continue
      const list = bySource.get(entry.source)
      if (list === undefined) bySource.set(entry.source, [entry])
      else list.push(entry)
    }
  }
  return {
    known: (file, stamp) => {
      const recorded = stamps.get(file)
      return recorded !== undefined && sameStamp(recorded, stamp) && bySource.get(file)?.length === recorded.docs
    },
    docsOf: (file) => bySource.get(file) ?? [],
    recorded: (file) => stamps.get(file)
  }
}

/** What a run learns of its files' stamps as it reads: each file's stamp and documents, and the files not to record. */
export class StampTally {
  private readonly files = new Map<string, { readonly stamp: FileStamp; docs: number }>()
  /** Files left unread with all their documents: their recorded stamps stand as they are. */
  private readonly kept = new Map<string, RecordedStamp>()
  /** Files (by path or shown name) a record of which was skipped, left out or empty: read again next time. */
  private readonly unclean = new Set<string>()

  /** A document of `file` that the run keeps. */
  read(file: string, stamp: FileStamp | undefined): void {
    if (stamp === undefined) return
    const entry = this.files.get(file)
    if (entry === undefined) this.files.set(file, { stamp, docs: 1 })
    else entry.docs++
  }

  /** A file left unread, whose `docs` stored documents stand for it (`recorded` says how many it gave). */
  unread(file: string, recorded: RecordedStamp, docs: number): void {
    if (docs === recorded.docs) this.kept.set(file, recorded)
    else this.files.set(file, { stamp: recorded, docs })
  }

  /** A record of this file (path or shown name) gave no document the index holds. */
  skipped(source: string): void {
    this.unclean.add(source)
  }

  /**
   * The stamps to record after a run that started at `startedAt` (files with every record kept and a settled stamp,
   * see `settled`), or `undefined` when the run read nothing and left every recorded file unread, so they stand as
   * recorded. A store writes only the rows that changed.
   */
  result(
    startedAt: number,
    recorded: ReadonlyMap<string, RecordedStamp>
  ): ReadonlyMap<string, RecordedStamp> | undefined {
    if (this.files.size === 0 && this.unclean.size === 0 && this.kept.size === recorded.size) return undefined
    const next = new Map<string, RecordedStamp>()
    for (const [file, stamp] of this.kept) if (!this.unclean.has(file)) next.set(file, stamp)
    for (const [file, { docs, stamp }] of this.files) {
      if (docs === 0 || this.unclean.has(file) || this.unclean.has(stamp.shown) || !settled(stamp, startedAt)) continue
      next.set(file, { ...stamp, docs })
    }
    return next
  }
}
