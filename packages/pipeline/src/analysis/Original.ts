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

/** Grows the arrays of a text being built unit by unit. */
class Builder {
  text = ""
  from: Int32Array
  to: Int32Array
  size = 0
  constructor(capacity: number) {
    this.from = new Int32Array(Math.max(16, capacity))
    this.to = new Int32Array(Math.max(16, capacity))
  }
  push(count: number, from: number, to: number): void {
    if (this.size + count > this.from.length) {
      const grown = Math.max(this.from.length * 2, this.size + count)
      const f = new Int32Array(grown)
      const t = new Int32Array(grown)
      f.set(this.from)
      t.set(this.to)
      this.from = f
      this.to = t
    }
    this.from.fill(from, this.size, this.size + count)
    this.to.fill(to, this.size, this.size + count)
    this.size += count
  }
  done(text: string): Aligned {
    return { text, from: this.from.subarray(0, this.size), to: this.to.subarray(0, this.size) }
  }
}

/** `strip`: whitespace off both ends. */
const strip = (a: Aligned): Aligned => {
  let start = 0
  let end = a.text.length
  while (start < end && isWhitespaceUnit(a.text.charCodeAt(start))) start++
  while (end > start && isWhitespaceUnit(a.text.charCodeAt(end - 1))) end--
  return slice(a, start, end)
}

/**
 * `lower` or `upper`. The text is the whole text's mapping (so context such as a word-final `Σ` is as `cleanText`
 * makes it); the alignment comes from mapping each code point alone, which can change its length (`İ` lowercases to
 * two units, `ß` uppercases to `SS`) but never differently in context. Should the two ever disagree in length, every
 * unit is aligned to the whole original: coarser, never wrong.
 */
const caseMapped = (a: Aligned, map: (text: string) => string): Aligned => {
  const whole = map(a.text)
  const out = new Builder(whole.length)
  const { text } = a
  for (let i = 0; i < text.length; ) {
    // ASCII maps to one unit, the common case, without a call.
    if (text.charCodeAt(i) < 0x80) {
      out.push(1, a.from[i]!, a.to[i]!)
      i++
      continue
    }
    const width = text.codePointAt(i)! > 0xffff ? 2 : 1
    out.push(map(text.slice(i, i + width)).length, a.from[i]!, a.to[i + width - 1]!)
    i += width
  }
  if (out.size === whole.length) return out.done(whole)
  const coarse = new Builder(whole.length)
  if (text.length > 0) coarse.push(whole.length, a.from[0]!, a.to[text.length - 1]!)
  return coarse.done(whole)
}

/** `collapse_ws`: stripped, then each run of whitespace other than a single space becomes one space. */
const collapse = (a: Aligned): Aligned => {
  const s = strip(a)
  const { text } = s
  const out = new Builder(text.length)
  let built = ""
  let copied = 0
  for (let i = 0; i < text.length; ) {
    if (!isWhitespaceUnit(text.charCodeAt(i))) {
      i++
      continue
    }
    let j = i + 1
    while (j < text.length && isWhitespaceUnit(text.charCodeAt(j))) j++
    if (j === i + 1 && text.charCodeAt(i) === 0x20) {
      i = j
      continue
    }
    for (let k = copied; k < i; k++) out.push(1, s.from[k]!, s.to[k]!)
    out.push(1, s.from[i]!, s.to[j - 1]!)
    built += `${text.slice(copied, i)} `
    copied = i = j
  }
  for (let k = copied; k < text.length; k++) out.push(1, s.from[k]!, s.to[k]!)
  return out.done(built + text.slice(copied))
}

/** `replace_newlines`: each `\r\n`, `\r` or `\n` becomes one space. */
const replaceNewlines = (a: Aligned): Aligned => {
  const { text } = a
  const out = new Builder(text.length)
  let built = ""
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit === 0x0d && text.charCodeAt(i + 1) === 0x0a) {
      out.push(1, a.from[i]!, a.to[i + 1]!)
      built += " "
      i++
    } else if (unit === 0x0a || unit === 0x0d) {
      out.push(1, a.from[i]!, a.to[i]!)
      built += " "
    } else {
      out.push(1, a.from[i]!, a.to[i]!)
      built += text[i]
    }
  }
  return out.done(built)
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

/** The UTF-16 index in `text` of its code point `point` (the text's length past its end). */
const unitOf = (text: string, point: number): number => {
  let unit = 0
  for (let p = 0; p < point && unit < text.length; p++) unit += text.codePointAt(unit)! > 0xffff ? 2 : 1
  return unit
}

/**
 * The span of the original, `[start, end)` in UTF-16 units, that the cleaned text's code points `[start, end)` came
 * from: what a chunk's span is in the text as written. Past the cleaned text (a padded tail) is the original's end.
 */
export const originalSpan = (aligned: Aligned, start: number, end: number): readonly [number, number] => {
  const { from, text, to } = aligned
  if (text.length === 0) return [0, 0]
  const first = unitOf(text, start)
  const last = unitOf(text, end)
  if (first >= text.length) return [to[text.length - 1]!, to[text.length - 1]!]
  return [from[first]!, last > first ? to[last - 1]! : from[first]!]
}
