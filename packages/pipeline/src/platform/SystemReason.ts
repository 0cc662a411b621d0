/** Why the operating system refused a file operation, in words for someone who has never seen the code. */

import { accessSync, constants, type Stats, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { PlatformError } from "effect"

/** The operating system's error codes that users meet, in plain words. */
const CODE_WORDS: Readonly<Record<string, string>> = {
  EACCES: "permission denied",
  EPERM: "permission denied",
  EEXIST: "it already exists",
  EISDIR: "it is a directory",
  ENOTDIR: "part of the path is a file, not a folder",
  ENOENT: "it does not exist",
  ENOSPC: "no space left on device",
  EDQUOT: "the disk quota is used up",
  EROFS: "the file system is read-only",
  EIO: "the disk reported an input/output error",
  ELOOP: "it is a loop of symbolic links",
  EMFILE: "too many files are open",
  ENFILE: "too many files are open",
  ENAMETOOLONG: "the name is too long",
  EBUSY: "it is in use by another program",
  ETXTBSY: "it is in use by another program",
  EFBIG: "the file would be too large",
  ENXIO: "there is no such device",
  ENODEV: "there is no such device",
  EXDEV: "it is on another disk"
}

/** Effect's names for failures whose code was not kept, in plain words. */
const TAG_WORDS: Readonly<Record<PlatformError.SystemErrorTag, string>> = {
  AlreadyExists: "it already exists",
  BadResource: "it cannot be used for this (a directory, or a path through a file)",
  Busy: "it is in use by another program",
  InvalidData: "the data is not valid",
  NotFound: "it does not exist",
  PermissionDenied: "permission denied",
  TimedOut: "the operation timed out",
  UnexpectedEof: "the file ended too early",
  Unknown: "the operating system reported an error",
  WouldBlock: "it is not ready",
  WriteZero: "nothing could be written"
}

/** The error code (`ENOSPC`, …) of a Node system error, or `undefined` for anything else. */
export const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

/** Node's own description in a system error's message (`ENOSPC: no space left on device, write`), if it has one. */
const systemDescription = (error: unknown): string | undefined => {
  const message = error instanceof Error ? error.message : undefined
  const match = message === undefined ? null : /^E[A-Z]+: ([^,]+)/.exec(message)
  return match === null ? undefined : match[1]
}

/**
 * Plain words for a failed file operation: a Node system error (by its code), or Effect's `PlatformError` (by the
 * code of the Node error it wraps, else by its kind). The words describe the path the operation was given ("it is a
 * directory"), so callers put them after that path.
 */
export const systemReason = (error: unknown): string => {
  const cause = PlatformError.isPlatformError(error) ? error.reason.cause : error
  const code = errorCode(cause)
  const known = code === undefined ? undefined : CODE_WORDS[code]
  if (known !== undefined) return known
  const described = systemDescription(cause)
  if (described !== undefined) return described
  if (PlatformError.isPlatformError(error)) {
    const reason = error.reason
    if (reason.description !== undefined) return reason.description
    return reason._tag === "BadArgument" ? "the operation was given a bad argument" : TAG_WORDS[reason._tag]
  }
  return error instanceof Error ? error.message : String(error)
}

const statOf = (path: string): Stats | undefined => {
  try {
    return statSync(path)
  } catch {
    return undefined
  }
}

/**
 * What is wrong with `file` as the place for a file, found by looking at the path: it is a directory, its folder does
 * not exist, or a file stands where a folder should be. `undefined` when the path looks usable, so the cause is
 * elsewhere (permissions, the disk). For libraries that report only "cannot open" (SQLite).
 */
export const pathProblem = (file: string): string | undefined => {
  const info = statOf(file)
  if (info !== undefined) {
    return info.isDirectory()
      ? `it is a directory; give the path of a file, such as ${join(file, "index.db")}`
      : undefined
  }
  const folder = dirname(file)
  for (let above = folder; ; above = dirname(above)) {
    const found = statOf(above)
    if (found !== undefined) {
      if (!found.isDirectory()) return `${above} is a file, not a folder`
      return above === folder ? undefined : `the folder ${folder} does not exist`
    }
    if (dirname(above) === above) return undefined
  }
}

/** The codes of a refusal by permissions or a read-only disk, which the path alone does not show. */
const REFUSED = new Set(["EACCES", "EPERM", "EROFS"])

/** The nearest folder above `path` (or `path` itself) that exists. */
const existingAbove = (path: string): string => {
  for (let above = path; ; above = dirname(above)) {
    if (statOf(above) !== undefined || dirname(above) === above) return above
  }
}

/**
 * Why the folder of `file` could not be made, from what `mkdir` threw: the system's own reason when it is a
 * refusal (permissions, a read-only disk: the folder it could not write to is named), else what the path shows.
 */
export const folderReason = (error: unknown, file: string): string => {
  const code = errorCode(PlatformError.isPlatformError(error) ? error.reason.cause : error)
  if (code !== undefined && REFUSED.has(code)) {
    return `${CODE_WORDS[code]}: ${existingAbove(dirname(file))} cannot be written to`
  }
  return pathProblem(file) ?? systemReason(error)
}

/**
 * Why a file could not be opened when the library does not say (SQLite's "cannot open"): what the path shows, else
 * whether the file, or its folder for a file yet to be made, may not be read and written (`access`, the system's
 * check, by default), else `undefined`.
 */
export const openReason = (
  file: string,
  access: (path: string, mode: number) => void = accessSync
): string | undefined => {
  const shown = pathProblem(file)
  if (shown !== undefined) return shown
  const exists = statOf(file) !== undefined
  const target = exists ? file : dirname(file)
  try {
    access(target, exists ? constants.R_OK | constants.W_OK : constants.W_OK)
    return undefined
  } catch (error) {
    const code = errorCode(error)
    if (code === undefined || !REFUSED.has(code)) return undefined
    return exists
      ? `${CODE_WORDS[code]}: the file cannot be read and written`
      : `${CODE_WORDS[code]}: the folder ${target} cannot be written to`
  }
}
