/** Whitespace as the Python reference sees it (`str.isspace`), which differs from JavaScript's `\s`. */

/** The body of a regular-expression character class for Python's whitespace other than U+0020 SPACE. */
export const NON_SPACE_WHITESPACE_CLASS =
  "\\t\\n\\u000b\\f\\r\\u001c-\\u001f\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"

/**
 * The characters Python's `str.isspace` accepts: bidi classes WS, B and S plus category Zs. Unlike JavaScript's
 * `\s` it includes U+001C–U+001F and U+0085 and excludes U+FEFF.
 */
export const WHITESPACE_CLASS = ` ${NON_SPACE_WHITESPACE_CLASS}`

/** Matches a run of one or more whitespace characters. */
export const whitespaceRun = new RegExp(`[${WHITESPACE_CLASS}]+`, "g")

/** Matches text that holds at least one non-whitespace character. */
export const hasNonWhitespace = new RegExp(`[^${WHITESPACE_CLASS}]`)

// Every whitespace character is in the BMP at or below U+3000, so one table over those UTF-16 units decides them all.
// It is filled from the class's ranges, written out (a test holds the two equal): testing the class's regular
// expression on each of the 12,289 units would take 1–2 ms of every start.
const LAST_WHITESPACE = 0x3000
const WHITESPACE_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x09, 0x0d],
  [0x1c, 0x20],
  [0x85, 0x85],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000]
]
const whitespaceUnits = new Uint8Array(LAST_WHITESPACE + 1)
for (const [from, to] of WHITESPACE_RANGES) whitespaceUnits.fill(1, from, to + 1)

/**
 * Whether a UTF-16 code unit (as from `charCodeAt`) is whitespace in the sense of `WHITESPACE_CLASS`. No whitespace
 * character is astral, so a surrogate half is never whitespace and scanning by code unit is exact.
 */
export const isWhitespaceUnit = (unit: number): boolean => unit <= LAST_WHITESPACE && whitespaceUnits[unit] === 1
