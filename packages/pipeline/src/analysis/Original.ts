/**
 * The way back from cleaned text to the text a user wrote: cleaning a document while keeping, for every UTF-16 unit of
 * the cleaned text, the units of the original it came from. A chunk's span (code points of the cleaned body) then
 * names a span of the original, which is what results show.
 */
import type { CleanRule } from "@funcpipe/domain/Config"
import { CleanerConfig } from "@funcpipe/domain/Config"
import { isWhitespaceUnit } from "@funcpipe/domain/Whitespace"

/** A text made from an original: for each of its UTF-16 units `i`, the original's units `[from[i], to[i])`. */
export interface Aligned {
  readonly text: string
  readonly from: Int32Array
  readonly to: Int32Array
}

/** The original itself: each unit comes from itself. */
const identity = (text: string): Aligned => {
  const from = new Int32Array(text.length)
  const to = new Int32Array(text.length)
  for (let i = 0; i < text.length; i++) {
    from[i] = i
    to[i] = i + 1
  }
  return { text, from, to }
}

/** Units `[start, end)` of an aligned text. */
const slice = (a: Aligned, start: number, end: number): Aligned =>
  start === 0 && end === a.text.length
    ? a
    : { text: a.text.slice(start, end), from: a.from.subarray(start, end), to: a.to.subarray(start, end) }

/** `strip`: whitespace off both ends. */
const strip = (a: Aligned): Aligned => {
  let start = 0
  let end = a.text.length
  while (start < end && isWhitespaceUnit(a.text.charCodeAt(start))) start++
  while (end > start && isWhitespaceUnit(a.text.charCodeAt(end - 1))) end--
  return slice(a, start, end)
}

const NON_ASCII = /[\u0080-\uffff]/

/**
 * `lower` or `upper`. The text is the whole text's mapping (so context such as a word-final `Σ` is as `cleanText`
 * makes it); the alignment comes from mapping each code point alone, which can change its length (`İ` lowercases to
 * two units, `ß` uppercases to `SS`) but never differently in context. ASCII text keeps its alignment as it is. Should
 * the two ever disagree in length, every unit is aligned to the whole original: coarser, never wrong.
 */
const caseMapped = (a: Aligned, map: (text: string) => string): Aligned => {
  const whole = map(a.text)
  const { text } = a
  if (!NON_ASCII.test(text)) return { text: whole, from: a.from, to: a.to }
  const from = new Int32Array(whole.length)
  const to = new Int32Array(whole.length)
  let size = 0
  for (let i = 0; i < text.length && size <= whole.length; ) {
    const unit = text.charCodeAt(i)
    const width = unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1
    const length = unit < 0x80 ? 1 : map(text.slice(i, i + width)).length
    const f = a.from[i]!
    const t = a.to[i + width - 1]!
    for (let k = 0; k < length && size < whole.length; k++) {
      from[size] = f
      to[size++] = t
    }
    i += width
  }
  if (size === whole.length) return { text: whole, from, to }
  from.fill(text.length > 0 ? a.from[0]! : 0)
  to.fill(text.length > 0 ? a.to[text.length - 1]! : 0)
  return { text: whole, from, to }
}

/** `collapse_ws`: stripped, then each run of whitespace other than a single space becomes one space. */
const collapse = (a: Aligned): Aligned => {
  const s = strip(a)
  const { text } = s
  const n = text.length
  const from = new Int32Array(n)
  const to = new Int32Array(n)
  const parts: Array<string> = []
  let size = 0
  let copied = 0
  for (let i = 0; i < n; ) {
    if (!isWhitespaceUnit(text.charCodeAt(i))) {
      from[size] = s.from[i]!
      to[size++] = s.to[i]!
      i++
      continue
    }
    let j = i + 1
    while (j < n && isWhitespaceUnit(text.charCodeAt(j))) j++
    from[size] = s.from[i]!
    to[size++] = s.to[j - 1]!
    if (j > i + 1 || text.charCodeAt(i) !== 0x20) {
      parts.push(text.slice(copied, i), " ")
      copied = j
    }
    i = j
  }
  parts.push(text.slice(copied))
  return { text: parts.join(""), from: from.subarray(0, size), to: to.subarray(0, size) }
}

/** `replace_newlines`: each `\r\n`, `\r` or `\n` becomes one space. */
const replaceNewlines = (a: Aligned): Aligned => {
  const { text } = a
  const n = text.length
  const from = new Int32Array(n)
  const to = new Int32Array(n)
  let size = 0
  for (let i = 0; i < n; i++) {
    from[size] = a.from[i]!
    if (text.charCodeAt(i) === 0x0d && text.charCodeAt(i + 1) === 0x0a) i++
    to[size++] = a.to[i]!
  }
  return { text: text.replace(/\r\n|\r|\n/g, " "), from: from.subarray(0, size), to: to.subarray(0, size) }
}

const applyRule = (a: Aligned, rule: CleanRule): Aligned => {
  switch (rule) {
    case "strip":
      return strip(a)
    case "lower":
      return caseMapped(a, (t) => t.toLowerCase())
    case "upper":
      return caseMapped(a, (t) => t.toUpperCase())
    case "collapse_ws":
      return collapse(a)
    case "replace_newlines":
      return replaceNewlines(a)
  }
}

/** The cleaned text of `original` (exactly `cleanText`'s), aligned to `original`. */
export const cleanAligned = (
  original: string,
  cleaner: Pick<CleanerConfig, "rules"> = CleanerConfig.default
): Aligned => cleaner.rules.reduce(applyRule, identity(original))

/**
 * The UTF-16 index of each code point of `text` (its length past its end): the identity for text without surrogates,
 * else a table made once.
 */
export const unitsOf = (text: string): ((point: number) => number) => {
  if (!/[\uD800-\uDFFF]/.test(text)) return (point) => Math.min(point, text.length)
  const units: Array<number> = []
  for (let unit = 0; unit < text.length; unit += text.codePointAt(unit)! > 0xffff ? 2 : 1) units.push(unit)
  return (point) => (point < units.length ? units[point]! : text.length)
}

/**
 * The span of the original, `[start, end)` in UTF-16 units, that the cleaned text's code points `[start, end)` came
 * from: what a chunk's span is in the text as written. Past the cleaned text (a padded tail) is the original's end.
 * `unitAt` converts the cleaned text's code points to units (`unitsOf`, made once per text).
 */
export const originalSpan = (
  aligned: Aligned,
  start: number,
  end: number,
  unitAt: (point: number) => number = unitsOf(aligned.text)
): readonly [number, number] => {
  const { from, text, to } = aligned
  if (text.length === 0) return [0, 0]
  const first = unitAt(start)
  const last = unitAt(end)
  if (first >= text.length) return [to[text.length - 1]!, to[text.length - 1]!]
  return [from[first]!, last > first ? to[last - 1]! : from[first]!]
}
