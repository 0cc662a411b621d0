/**
 * The files of a ZIP container (DOCX and EPUB are ZIP files), unpacked within limits. The container's directory is
 * read first: a file that says it would unpack to more than `MAX_UNPACKED_BYTES`, or to more than `MAX_RATIO` times
 * its own size, or that holds more than `MAX_ENTRIES` entries, is refused before any entry is inflated (a zip bomb).
 * Each wanted entry is then inflated by Node's zlib with its declared size as the most it may give: an entry that
 * would give more is damage, and costs no more work than its declared size.
 */

import { inflateRawSync } from "node:zlib"
import { Result } from "effect"

/** The most a container may unpack to, all entries together. */
export const MAX_UNPACKED_BYTES = 512 * 1024 * 1024
/** The most a container may unpack to, against its own size (counted as at least 1 MiB; text packs about 5–10×). */
export const MAX_RATIO = 200
/** The most entries a container may hold. */
export const MAX_ENTRIES = 20_000

/** Why a container was not unpacked, in words for the file's one skip line. */
export type ZipProblem = string

const megabytes = (bytes: number) => `${Math.round(bytes / (1024 * 1024))} MB`

interface Entry {
  readonly name: string
  readonly method: number
  readonly compressedSize: number
  readonly size: number
  readonly localHeader: number
}

const NOT_ZIP = "it is not a readable ZIP container (no ZIP directory): truncated, damaged or password-protected"

/** The entries of a ZIP file's central directory, or why there is none to read. */
const directoryOf = (bytes: Uint8Array): Result.Result<Array<Entry>, ZipProblem> => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  // The end of the central directory: its signature, in the last 22 bytes plus a comment of up to 64 KiB.
  let end = -1
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 65_535); at--) {
    if (view.getUint32(at, true) === 0x06054b50) {
      end = at
      break
    }
  }
  if (end < 0) return Result.fail(NOT_ZIP)
  const count = view.getUint16(end + 10, true)
  const size = view.getUint32(end + 12, true)
  const offset = view.getUint32(end + 16, true)
  if (count > MAX_ENTRIES) return Result.fail(`it holds more than ${MAX_ENTRIES.toLocaleString("en-US")} files`)
  if (offset + size > end) return Result.fail(NOT_ZIP)
  const decoder = new TextDecoder("utf-8")
  const entries: Array<Entry> = []
  let at = offset
  for (let i = 0; i < count; i++) {
    if (at + 46 > end || view.getUint32(at, true) !== 0x02014b50) return Result.fail(NOT_ZIP)
    const nameLength = view.getUint16(at + 28, true)
    const extraLength = view.getUint16(at + 30, true)
    const commentLength = view.getUint16(at + 32, true)
    entries.push({
      name: decoder.decode(bytes.subarray(at + 46, at + 46 + nameLength)),
      method: view.getUint16(at + 10, true),
      compressedSize: view.getUint32(at + 20, true),
      size: view.getUint32(at + 24, true),
      localHeader: view.getUint32(at + 42, true)
    })
    at += 46 + nameLength + extraLength + commentLength
  }
  return Result.succeed(entries)
}

/** An entry's bytes, inflated to at most its declared size; or why not. */
const inflate = (bytes: Uint8Array, entry: Entry): Result.Result<Uint8Array, ZipProblem> => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const at = entry.localHeader
  if (at + 30 > bytes.length || view.getUint32(at, true) !== 0x04034b50) {
    return Result.fail(`it is damaged: ${entry.name} is not where its directory says`)
  }
  const start = at + 30 + view.getUint16(at + 26, true) + view.getUint16(at + 28, true)
  const data = bytes.subarray(start, start + entry.compressedSize)
  if (data.length !== entry.compressedSize) return Result.fail(`it is damaged: ${entry.name} is cut short`)
  if (entry.method === 0) {
    return data.length === entry.size ? Result.succeed(data) : Result.fail(`it is damaged: ${entry.name} is cut short`)
  }
  if (entry.method !== 8)
    return Result.fail(`it packs ${entry.name} in a way FuncPipe cannot unpack (method ${entry.method})`)
  try {
    // One byte more than declared may come out, to tell an entry that gives more than it says.
    const out = inflateRawSync(data, { maxOutputLength: Math.max(1, entry.size + 1) })
    if (out.length !== entry.size) return Result.fail(`it is damaged: ${entry.name} does not unpack to its size`)
    return Result.succeed(out)
  } catch {
    return Result.fail(`it is damaged: ${entry.name} does not unpack (or unpacks to more than it says)`)
  }
}

/**
 * The entries of the ZIP file `bytes` for which `wanted(name)` holds, by name; every entry counts against the limits,
 * wanted or not. Fails with the reason when the bytes are not a ZIP file, are damaged, or exceed a limit.
 */
export const unzipWithin = (
  bytes: Uint8Array,
  wanted: (name: string) => boolean
): Result.Result<Record<string, Uint8Array>, ZipProblem> => {
  const directory = directoryOf(bytes)
  if (Result.isFailure(directory)) return Result.fail(directory.failure)
  const declared = directory.success.reduce((sum, entry) => sum + entry.size, 0)
  const limit = Math.min(MAX_UNPACKED_BYTES, MAX_RATIO * Math.max(bytes.length, 1024 * 1024))
  if (declared > limit) {
    return Result.fail(
      `it would unpack to ${megabytes(declared)} from ${megabytes(bytes.length)} (more than ${megabytes(limit)}: ` +
        "a zip bomb, or a file far larger than a document)"
    )
  }
  const files: Record<string, Uint8Array> = {}
  for (const entry of directory.success) {
    if (!wanted(entry.name)) continue
    const data = inflate(bytes, entry)
    if (Result.isFailure(data)) return Result.fail(data.failure)
    files[entry.name] = data.success
  }
  return Result.succeed(files)
}
