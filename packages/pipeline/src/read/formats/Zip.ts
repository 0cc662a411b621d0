/**
 * The files of a ZIP container (DOCX and EPUB are ZIP files), unpacked within limits: a file whose entries would
 * unpack to more than `MAX_UNPACKED_BYTES`, or to more than `MAX_RATIO` times its own size, is refused before anything
 * is inflated (a zip bomb). An entry is inflated into a buffer of its declared size and no further, so one that lies
 * about its size cannot take more memory than it declares; one that gives less is damage.
 */

import { Result } from "effect"
import { unzipSync } from "fflate"

/** The most a container may unpack to, all entries together. */
export const MAX_UNPACKED_BYTES = 512 * 1024 * 1024
/** The most a container may unpack to, against its own size (text compresses about 5–10×). */
export const MAX_RATIO = 200
/** The most entries a container may hold. */
export const MAX_ENTRIES = 20_000

/** Why a container was not unpacked, in words for the file's one skip line. */
export type ZipProblem = string

const megabytes = (bytes: number) => `${Math.round(bytes / (1024 * 1024))} MB`

/**
 * The entries of the ZIP file `bytes` for which `wanted(name)` holds, by name; every entry counts against the limits,
 * wanted or not. Fails with the reason when the bytes are not a ZIP file, are damaged, or exceed a limit.
 */
export const unzipWithin = (
  bytes: Uint8Array,
  wanted: (name: string) => boolean
): Result.Result<Record<string, Uint8Array>, ZipProblem> => {
  let entries = 0
  let declared = 0
  let refused: ZipProblem | undefined
  const sizes = new Map<string, number>()
  try {
    const files = unzipSync(bytes, {
      filter: (file) => {
        entries++
        declared += file.originalSize
        if (refused !== undefined) return false
        if (entries > MAX_ENTRIES) refused = `it holds more than ${MAX_ENTRIES.toLocaleString("en-US")} files`
        else if (declared > MAX_UNPACKED_BYTES || declared > MAX_RATIO * Math.max(bytes.length, 1024 * 1024)) {
          refused =
            `it would unpack to ${megabytes(declared)} or more from ${megabytes(bytes.length)} ` +
            `(more than ${megabytes(Math.min(MAX_UNPACKED_BYTES, MAX_RATIO * Math.max(bytes.length, 1024 * 1024)))}: ` +
            `a zip bomb, or a file far larger than a document)`
        }
        if (refused !== undefined || !wanted(file.name)) return false
        sizes.set(file.name, file.originalSize)
        return true
      }
    })
    if (refused !== undefined) return Result.fail(refused)
    for (const [name, data] of Object.entries(files)) {
      if (data.length !== sizes.get(name)) return Result.fail(`it is damaged: ${name} does not unpack to its size`)
    }
    return Result.succeed(files)
  } catch (error) {
    if (refused !== undefined) return Result.fail(refused)
    const detail = error instanceof Error ? error.message : String(error)
    return Result.fail(`it is not a readable ZIP container (${detail}): truncated, damaged or password-protected`)
  }
}
