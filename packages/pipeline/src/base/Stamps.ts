/**
 * What a file's metadata says about its content, recorded per file as git's index does, so that a run over a tree of
 * unchanged files need not read them: a file whose size, modification and change times and inode are as recorded, and
 * whose recorded documents are all in the index, holds what it held then. Pure: `read/FileStamp.ts` takes stamps.
 */

/**
 * A file's stamp: its size, modification and status-change times in milliseconds as the system gives them (with
 * their fraction, to about a microsecond), inode, and the name its documents were read under (its doc id for a text
 * file), which decides their ids.
 */
export interface FileStamp {
  readonly shown: string
  readonly size: number
  readonly mtimeMs: number
  readonly ctimeMs: number
  readonly ino: number
  /**
   * The version of the converter that read it (a PDF, HTML, Word or EPUB file; see `read/Formats.ts`), absent for a
   * file read as it is: a new converter reads such a file again, though it is unchanged.
   */
  readonly reader?: number | undefined
}

/** A stamp as an index records it: with how many documents the file gave. */
export interface RecordedStamp extends FileStamp {
  readonly docs: number
}

/** Whether two stamps describe the same file content (as far as metadata can tell). */
export const sameStamp = (a: FileStamp, b: FileStamp): boolean =>
  a.size === b.size &&
  a.mtimeMs === b.mtimeMs &&
  a.ctimeMs === b.ctimeMs &&
  a.ino === b.ino &&
  a.shown === b.shown &&
  (a.reader ?? 0) === (b.reader ?? 0)

/**
 * The stored `shown` field: the name, and after a NUL the converter's version where a converter read the file (a name
 * holds no NUL, and rows stored before converters existed read as files read as they are).
 */
export const storedShown = (stamp: FileStamp): string =>
  stamp.reader === undefined ? stamp.shown : `${stamp.shown}\u0000${stamp.reader}`

const shownOf = (stored: string): { readonly shown: string; readonly reader?: number } => {
  const nul = stored.indexOf("\u0000")
  if (nul < 0) return { shown: stored }
  return { shown: stored.slice(0, nul), reader: Number(stored.slice(nul + 1)) }
}

/**
 * A file changed this close to the start of the run that reads it may change again within the same tick of the file
 * system's clock without its modification time changing (git calls such a file "racy"): its stamp is not recorded, so
 * the next run reads it again. Two seconds cover file systems that keep times to the second or two (FAT keeps two).
 * A file older than that gets a newer time from any later write; one whose time is set back (`touch -d`, `cp -p`)
 * gets a new status-change time, which the stamp holds too.
 */
export const RACY_MILLIS = 2000

/** Whether a stamp may be recorded by a run that started at `startedAt` (ms since the epoch): see `RACY_MILLIS`. */
export const settled = (stamp: FileStamp, startedAt: number): boolean => stamp.mtimeMs < startedAt - RACY_MILLIS

/**
 * The stored form as one value (PostgreSQL keeps it in `meta`):
 * `{"version": 1, "files": [[file, shown, size, mtimeMs, ctimeMs, ino, docs], …]}`.
 */
export const encodeStamps = (stamps: ReadonlyMap<string, RecordedStamp>): string =>
  JSON.stringify({
    version: 1,
    files: [...stamps].map(([file, s]) => [file, storedShown(s), s.size, s.mtimeMs, s.ctimeMs, s.ino, s.docs])
  })

/**
 * One stored row, `[file, shown, size, mtimeMs, ctimeMs, ino, docs]` (an element of the stored value, or a row of
 * SQLite's table read as an array), checked field by field: a schema decode of 38k rows cost a tenth of a run that
 * reads nothing.
 */
export const stampRowOf = (row: unknown): readonly [string, RecordedStamp] | undefined => {
  if (!Array.isArray(row) || row.length !== 7) return undefined
  const [file, shown, size, mtimeMs, ctimeMs, ino, docs] = row as ReadonlyArray<unknown>
  if (typeof file !== "string" || typeof shown !== "string") return undefined
  if (typeof size !== "number" || typeof mtimeMs !== "number" || typeof ctimeMs !== "number") return undefined
  if (typeof ino !== "number" || typeof docs !== "number") return undefined
  return [file, { ...shownOf(shown), size, mtimeMs, ctimeMs, ino, docs }]
}

/**
 * The recorded stamps; a value that does not decode (damage, or a later version's format) gives none, which costs
 * the next run a full read and nothing else.
 */
export const decodeStamps = (json: string | undefined): ReadonlyMap<string, RecordedStamp> => {
  const none = new Map<string, RecordedStamp>()
  if (json === undefined) return none
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    return none
  }
  const { files, version } = (typeof parsed === "object" && parsed !== null ? parsed : {}) as Record<string, unknown>
  if (version !== 1 || !Array.isArray(files)) return none
  const stamps = new Map<string, RecordedStamp>()
  for (const row of files) {
    const entry = stampRowOf(row)
    if (entry === undefined) return none
    stamps.set(entry[0], entry[1])
  }
  return stamps
}
