/**
 * Vector blocks as an index stores them: in the narrowest encoding that gives back every component bit for bit.
 *
 * - `u16`: 16-bit numerators `k`, each component being `k / 65535` (what `local-sha256` makes: 16-bit words over
 *   65535), a quarter of the bytes;
 * - `f32`: float32, where every component is exactly one (a model that returns its float32 output as it is), half
 *   the bytes;
 * - `f64`: float64 otherwise.
 *
 * Decoding computes the very numbers that were encoded (`k / 65535` is the same division the model made; a float32
 * widens exactly), so scores, and the ranking, are the same as from float64 blocks. A block's encoding is told by its
 * byte length: `count · dimensions` times 2, 4 or 8.
 */

export type VectorEncoding = "u16" | "f32" | "f64"

export const BYTES: Record<VectorEncoding, number> = { u16: 2, f32: 4, f64: 8 }

/** The narrowest exact encoding of `values` (every component finite). */
export const encodingOf = (values: Float64Array): VectorEncoding => {
  let u16 = true
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!
    // -0 stays out: it would come back as +0.
    if (!(x >= 0 && x <= 1 && Math.round(x * 65535) / 65535 === x && !Object.is(x, -0))) {
      u16 = false
      break
    }
  }
  if (u16) return "u16"
  for (let i = 0; i < values.length; i++) if (!Object.is(Math.fround(values[i]!), values[i]!)) return "f64"
  return "f32"
}

/** The largest finite float32. */
const FLOAT32_MAX = 3.4028234663852886e38

/**
 * Rounds in place, to the nearest float32, each `d`-component vector of `values` that no exact encoding narrower than
 * float64 holds (`--vector-storage float32`); the others (16-bit fractions, float32 already) are left as they are.
 * A vector with a component beyond float32's range is left too, rather than stored as infinite.
 */
export const roundToFloat32 = (values: Float64Array, d: number): void => {
  for (let at = 0; at + d <= values.length; at += d) {
    const vector = values.subarray(at, at + d)
    if (encodingOf(vector) !== "f64") continue
    let inRange = true
    for (let j = 0; j < d; j++) if (!(Math.abs(vector[j]!) <= FLOAT32_MAX)) inRange = false
    if (inRange) for (let j = 0; j < d; j++) vector[j] = Math.fround(vector[j]!)
  }
}

/** `values` in their narrowest exact encoding, as little-endian bytes of a buffer of their own. */
export const encodeVectors = (values: Float64Array): Uint8Array => {
  const encoding = encodingOf(values)
  if (encoding === "f64") return new Uint8Array(values.slice().buffer)
  if (encoding === "f32") return new Uint8Array(Float32Array.from(values).buffer)
  const codes = new Uint16Array(values.length)
  for (let i = 0; i < values.length; i++) codes[i] = Math.round(values[i]! * 65535)
  return new Uint8Array(codes.buffer)
}

/** The encoding of a block of `components` components stored in `byteLength` bytes, or `undefined` for none. */
export const encodingFor = (byteLength: number, components: number): VectorEncoding | undefined =>
  byteLength === 2 * components
    ? "u16"
    : byteLength === 4 * components
      ? "f32"
      : byteLength === 8 * components
        ? "f64"
        : undefined

/**
 * Decodes components `from … to` of a stored block (`bytes`, in `encoding`) into `out` from `at`. Returns false when a
 * component is not finite (a damaged block), true otherwise.
 */
export const decodeVectors = (
  bytes: Uint8Array,
  encoding: VectorEncoding,
  from: number,
  to: number,
  out: Float64Array,
  at = 0
): boolean => {
  const size = BYTES[encoding]
  const aligned = bytes.byteOffset % size === 0 ? bytes : bytes.slice()
  const n = aligned.byteLength / size
  if (encoding === "u16") {
    const codes = new Uint16Array(aligned.buffer, aligned.byteOffset, n)
    for (let i = from; i < to; i++) out[at + i - from] = codes[i]! / 65535
    return true
  }
  const values =
    encoding === "f32"
      ? new Float32Array(aligned.buffer, aligned.byteOffset, n)
      : new Float64Array(aligned.buffer, aligned.byteOffset, n)
  // x · 0 is 0 for every finite x and NaN for NaN and ±Infinity, so one sum checks them all.
  let check = 0
  for (let i = from; i < to; i++) {
    const x = values[i]!
    out[at + i - from] = x
    check += x * 0
  }
  return check === 0
}

/**
 * Decodes `rows` rows of `dimensions` 16-bit numerators (`k / 65535` each) into `out`, and each row's magnitude
 * (`sqrt(Σ x·x)`, summed left to right) into `magnitudes`.
 */
export const decodeCodes = (
  codes: Uint16Array,
  rows: number,
  dimensions: number,
  out: Float64Array,
  magnitudes: Float64Array
): void => {
  for (let r = 0, j = 0; r < rows; r++) {
    let sum = 0
    for (const end = j + dimensions; j < end; j++) {
      const x = codes[j]! / 65535
      out[j] = x
      sum += x * x
    }
    magnitudes[r] = Math.sqrt(sum)
  }
}

/**
 * Decodes the `rows` rows of `dimensions` components of a stored block into `out`, and each row's magnitude
 * (`sqrt(Σ x·x)`, summed left to right, as the reference's cosine does) into `magnitudes`, in one pass over the block.
 * Returns `"not finite"` for a component that is not finite, `"too long"` for finite components whose squares overflow
 * (no model makes either, so the block is damaged), `"ok"` otherwise.
 */
export const decodeRows = (
  bytes: Uint8Array,
  encoding: VectorEncoding,
  rows: number,
  dimensions: number,
  out: Float64Array,
  magnitudes: Float64Array
): "ok" | "not finite" | "too long" => {
  const size = BYTES[encoding]
  const aligned = bytes.byteOffset % size === 0 ? bytes : bytes.slice()
  const n = rows * dimensions
  if (encoding === "u16") {
    // Every component is in [0, 1]: finite, and no square can overflow.
    decodeCodes(new Uint16Array(aligned.buffer, aligned.byteOffset, n), rows, dimensions, out, magnitudes)
    return "ok"
  }
  const values =
    encoding === "f32"
      ? new Float32Array(aligned.buffer, aligned.byteOffset, n)
      : new Float64Array(aligned.buffer, aligned.byteOffset, n)
  // x · 0 is 0 for every finite x and NaN for NaN and ±Infinity, so one sum checks them all.
  let check = 0
  let long = false
  for (let r = 0, j = 0; r < rows; r++) {
    let sum = 0
    for (const end = j + dimensions; j < end; j++) {
      const x = values[j]!
      out[j] = x
      check += x * 0
      sum += x * x
    }
    magnitudes[r] = Math.sqrt(sum)
    if (magnitudes[r] === Infinity) long = true
  }
  return check !== 0 ? "not finite" : long ? "too long" : "ok"
}
