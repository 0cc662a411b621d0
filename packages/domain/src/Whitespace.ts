/** Whitespace as the Python reference sees it (`str.isspace`), which differs from JavaScript's `\s`. */

/**
 * The characters Python's `str.isspace` accepts: bidi classes WS, B and S plus category Zs. Unlike JavaScript's
 * `\s` it includes U+001C–U+001F and U+0085 and excludes U+FEFF.
 */
export const WHITESPACE_CLASS =
  "\\t\\n\\u000b\\f\\r\\u001c-\\u001f \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"

/** Matches a run of one or more whitespace characters. */
export const whitespaceRun = new RegExp(`[${WHITESPACE_CLASS}]+`, "g")

/** Matches text that holds at least one non-whitespace character. */
export const hasNonWhitespace = new RegExp(`[^${WHITESPACE_CLASS}]`)
