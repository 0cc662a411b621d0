/**
 * The binary cache of the `glove-100d` vectors: the converted vector file in one flat file that loads by reading it,
 * with no parsing but the word list.
 */
import { Result, Schema } from "effect"
import { tableProblem, tableRows, type WordList } from "./WordList.ts"

/** The cache file is damaged, truncated or written by another version. */
export class CacheInvalid extends Schema.TaggedError<CacheInvalid>()("CacheInvalid", {
  reason: Schema.String
}) {
  override get message(): string {
    return `the vector cache is not usable: ${this.reason}`
  }
}

/** What the cache holds: unit word vectors in frequency order, their words, their mean and common directions. */
export interface GloveCacheContent {
  /** Names the vectors and how they were converted; a reader expecting another recipe refuses the file. */
  readonly recipe: string
  readonly dimensions: number
  /** The words, row `r` the word of frequency rank `r` (0 the most frequent). */
  readonly words: WordList
  /** `rows × dimensions` components, row by row, as half-precision floats. */
  readonly vectors: Float16Array
  readonly mean: Float64Array
  readonly components: ReadonlyArray<Float64Array>
}

const MAGIC = "FPGLOVE\0"
const FORMAT_VERSION = 1
/** Magic, then six 32-bit fields: version, rows, dimensions, components, recipe bytes, hash slots. */
const HEADER_BYTES = 32

const align8 = (n: number): number => Math.ceil(n / 8) * 8

const bytesOf = (array: ArrayBufferView): Uint8Array => new Uint8Array(array.buffer, array.byteOffset, array.byteLength)

/**
 * The file as pieces to write in order (so the vectors are written from their own memory, not copied).
 * Little-endian, as the platforms Node runs on are: the header; the recipe (UTF-8, padded to 8 bytes); the mean and
 * the components (float64); the vectors (float16, padded to 8 bytes); the word table's starts and slots (uint32) and units (uint16).
 * Every array starts at a multiple of its element size, so a reader can view it in place.
 */
export const encodeCache = (content: GloveCacheContent): ReadonlyArray<Uint8Array> => {
  const recipe = new TextEncoder().encode(content.recipe)
  const rows = tableRows(content.words)
  const header = new Uint8Array(HEADER_BYTES)
  const view = new DataView(header.buffer)
  header.set(new TextEncoder().encode(MAGIC))
  view.setUint32(8, FORMAT_VERSION, true)
  view.setUint32(12, rows, true)
  view.setUint32(16, content.dimensions, true)
  view.setUint32(20, content.components.length, true)
  view.setUint32(24, recipe.length, true)
  view.setUint32(28, content.words.slots.length, true)
  const recipePadded = new Uint8Array(align8(recipe.length))
  recipePadded.set(recipe)
  const directions = new Float64Array((1 + content.components.length) * content.dimensions)
  directions.set(content.mean)
  content.components.forEach((c, i) => {
    directions.set(c, (i + 1) * content.dimensions)
  })
  return [
    header,
    recipePadded,
    bytesOf(directions),
    bytesOf(content.vectors),
    new Uint8Array(align8(content.vectors.byteLength) - content.vectors.byteLength),
    bytesOf(content.words.starts),
    bytesOf(content.words.slots),
    bytesOf(content.words.units)
  ]
}

/**
 * Reads a cache file's bytes, viewing its arrays in place (no copy) when `bytes` is aligned (a file read whole is), so
 * `bytes` must not change afterwards. Checks the magic, the version, the `recipe` expected, that every size adds up
 * to the file's length, that the mean and directions are finite, and that the word table is sound (`tableProblem`).
 * The vectors are not scanned: a damaged component shows as a non-finite embedding where it is used.
 */
export const decodeCache = (bytes: Uint8Array, recipe: string): Result.Result<GloveCacheContent, CacheInvalid> => {
  const invalid = (reason: string) => Result.fail(new CacheInvalid({ reason }))
  if (bytes.length < HEADER_BYTES || new TextDecoder().decode(bytes.subarray(0, 8)) !== MAGIC) {
    return invalid("it is not a FuncPipe vector cache")
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const version = view.getUint32(8, true)
  if (version !== FORMAT_VERSION) return invalid(`it has format version ${version}, not ${FORMAT_VERSION}`)
  const rows = view.getUint32(12, true)
  const dimensions = view.getUint32(16, true)
  const k = view.getUint32(20, true)
  const recipeBytes = view.getUint32(24, true)
  const slotCount = view.getUint32(28, true)
  if (rows === 0 || dimensions === 0) return invalid("it holds no vectors")
  const directionsAt = HEADER_BYTES + align8(recipeBytes)
  const vectorsAt = directionsAt + (1 + k) * dimensions * 8
  const startsAt = vectorsAt + align8(rows * dimensions * 2)
  const slotsAt = startsAt + (rows + 1) * 4
  const unitsAt = slotsAt + slotCount * 4
  const units = unitsAt <= bytes.length ? view.getUint32(slotsAt - 4, true) : 0
  if (unitsAt > bytes.length || unitsAt + 2 * units !== bytes.length) {
    return invalid(`it is ${bytes.length} bytes long, not the ${unitsAt + 2 * units} its header gives (truncated?)`)
  }
  let stored: string
  try {
    stored = new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(HEADER_BYTES, HEADER_BYTES + recipeBytes))
  } catch {
    return invalid("its recipe is not UTF-8")
  }
  if (stored !== recipe) return invalid(`it holds "${stored}", not "${recipe}" (made by another FuncPipe version)`)
  // A typed array can view bytes only from a multiple of its element size; otherwise the part is copied out.
  // (`new Uint8Array(view)` copies; a Node Buffer's `slice` would not.)
  const typed = <A>(from: number, to: number, size: number, make: (buffer: ArrayBufferLike, offset: number) => A): A =>
    (bytes.byteOffset + from) % size === 0
      ? make(bytes.buffer, bytes.byteOffset + from)
      : make(new Uint8Array(bytes.subarray(from, to)).buffer, 0)
  const directions = typed(directionsAt, vectorsAt, 8, (b, o) => new Float64Array(b, o, (1 + k) * dimensions))
  for (let i = 0; i < directions.length; i++)
    if (!Number.isFinite(directions[i]!)) return invalid("a number is not finite")
  const words: WordList = {
    starts: typed(startsAt, slotsAt, 4, (b, o) => new Uint32Array(b, o, rows + 1)),
    slots: typed(slotsAt, unitsAt, 4, (b, o) => new Uint32Array(b, o, slotCount)),
    units: typed(unitsAt, bytes.length, 2, (b, o) => new Uint16Array(b, o, units))
  }
  const problem = tableProblem(words)
  if (problem !== undefined) return invalid(problem)
  return Result.succeed({
    recipe,
    dimensions,
    words,
    vectors: typed(vectorsAt, startsAt, 2, (b, o) => new Float16Array(b, o, rows * dimensions)),
    mean: directions.subarray(0, dimensions),
    components: Array.from({ length: k }, (_, i) => directions.subarray((i + 1) * dimensions, (i + 2) * dimensions))
  })
}
