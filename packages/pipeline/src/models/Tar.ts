/** A streaming reader of tar archives (POSIX ustar, as npm packs them): hands on one file's bytes as they arrive. */
import { Result, Schema } from "effect"

/** The bytes are not a tar archive this reader understands, or it ends in the middle of a file. */
export class ArchiveInvalid extends Schema.TaggedError<ArchiveInvalid>()("ArchiveInvalid", {
  reason: Schema.String
}) {
  override get message(): string {
    return `the archive cannot be read: ${this.reason}`
  }
}

const BLOCK = 512

/** What a tar reader does with the archive: `push` pieces in order, then `end`. */
export interface TarReader {
  /** Reads the next piece of the archive. A failure is final: the reader takes nothing more. */
  readonly push: (piece: Uint8Array) => Result.Result<void, ArchiveInvalid>
  /** The archive is over: fails if it stopped inside an entry or never held the wanted file. */
  readonly end: () => Result.Result<void, ArchiveInvalid>
}

/** A NUL-terminated header field as text (tar names are ASCII in practice; UTF-8 is decoded as such). */
const field = (header: Uint8Array, from: number, length: number): string => {
  let to = from
  while (to < from + length && header[to] !== 0) to++
  return new TextDecoder().decode(header.subarray(from, to))
}

/** An octal number field (digits, then spaces or NULs), or `undefined` when it is not one. */
const octal = (header: Uint8Array, from: number, length: number): number | undefined => {
  const text = field(header, from, length).trim()
  return /^[0-7]+$/.test(text) ? Number.parseInt(text, 8) : undefined
}

/** The header's checksum holds: the byte sum with the checksum field counted as spaces. */
const checksumHolds = (header: Uint8Array): boolean => {
  const stored = octal(header, 148, 8)
  let sum = 0
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : header[i]!
  return stored === sum
}

/**
 * A reader that finds the regular file called `wanted` (its full path in the archive, e.g.
 * `package/vectors.json`) and calls `onData` with its bytes in order, in pieces of any size; every other entry is
 * skipped. The pieces given to `onData` are views of the pushed ones, valid only during the call. Checks each
 * header's checksum; archives of more than one volume, and sizes in base-256 (files over 8 GiB), are refused.
 */
export const tarReader = (wanted: string, onData: (bytes: Uint8Array) => void): TarReader => {
  const header = new Uint8Array(BLOCK)
  let headerFill = 0
  // Bytes of the current entry still to come, then its padding to a whole block.
  let dataLeft = 0
  let padLeft = 0
  let delivering = false
  let found = false
  let finished = false
  let failed: ArchiveInvalid | undefined

  const fail = (reason: string): Result.Result<void, ArchiveInvalid> => {
    failed = new ArchiveInvalid({ reason })
    return Result.fail(failed)
  }

  /** Reads a complete header: starts the entry it announces, or the end of the archive. */
  const readHeader = (): Result.Result<void, ArchiveInvalid> => {
    if (header.every((b) => b === 0)) {
      finished = true
      return Result.void
    }
    if (!checksumHolds(header)) return fail("a header's checksum is wrong (not a tar archive, or a damaged one)")
    const size = octal(header, 124, 12)
    if (size === undefined) return fail("a header's size is not an octal number")
    const type = String.fromCharCode(header[156]!)
    const prefix = field(header, 257, 6).startsWith("ustar") ? field(header, 345, 155) : ""
    const name = prefix === "" ? field(header, 0, 100) : `${prefix}/${field(header, 0, 100)}`
    delivering = (type === "0" || type === "\0") && name === wanted
    if (delivering) found = true
    dataLeft = size
    padLeft = (BLOCK - (size % BLOCK)) % BLOCK
    return Result.void
  }

  const push = (piece: Uint8Array): Result.Result<void, ArchiveInvalid> => {
    if (failed !== undefined) return Result.fail(failed)
    let at = 0
    while (at < piece.length && !finished) {
      if (dataLeft > 0) {
        const take = Math.min(dataLeft, piece.length - at)
        if (delivering) onData(piece.subarray(at, at + take))
        dataLeft -= take
        at += take
      } else if (padLeft > 0) {
        const take = Math.min(padLeft, piece.length - at)
        padLeft -= take
        at += take
      } else {
        const take = Math.min(BLOCK - headerFill, piece.length - at)
        header.set(piece.subarray(at, at + take), headerFill)
        headerFill += take
        at += take
        if (headerFill === BLOCK) {
          headerFill = 0
          const read = readHeader()
          if (Result.isFailure(read)) return read
        }
      }
    }
    return Result.void
  }

  const end = (): Result.Result<void, ArchiveInvalid> => {
    if (failed !== undefined) return Result.fail(failed)
    if (dataLeft > 0 || headerFill > 0) return fail("it ends in the middle of an entry (a truncated download?)")
    if (!found) return fail(`it holds no file called ${wanted}`)
    return Result.void
  }

  return { push, end }
}
