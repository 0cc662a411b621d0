/** The lexical analyzer: text to search terms (words of any script, lowercased, stop words out, stemmed). */

import { AnalyzerConfig } from "@funcpipe/domain/Config"
import { stemmer } from "stemmer"
import { FNV_OFFSET, FNV_PRIME, WordTable } from "./WordTable.ts"

/** Lucene's English stop words (the set its English analyzer and Anserini's BM25 runs drop). */
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set([
  "a",
  "an",
  "and",
  "are",
  "as",
  "at",
  "be",
  "but",
  "by",
  "for",
  "if",
  "in",
  "into",
  "is",
  "it",
  "no",
  "not",
  "of",
  "on",
  "or",
  "such",
  "that",
  "the",
  "their",
  "then",
  "there",
  "these",
  "they",
  "this",
  "to",
  "was",
  "will",
  "with"
])

/**
 * A word: a run of letters, marks and digits of any script, which may hold an apostrophe or a dot between two such
 * runs ("don't", "e.g", "3.5"); or a single ideograph, since CJK text has no spaces between words.
 */
const WORD = /\p{Ideographic}|[[\p{L}\p{M}\p{N}]--\p{Ideographic}]+(?:['’.][[\p{L}\p{M}\p{N}]--\p{Ideographic}]+)*/gv
const ASCII_WORD = /^[a-z]+$/

/**
 * What analyzer version 2 joins into the word around it: a bracketed letter or three followed by a letter (tldr's
 * `E[x]tract`, `[c]reate`; not `a[i]` or `v[0]`), and the invisible marks that sit inside words (soft hyphen, word
 * joiner, zero-width non-joiner and joiner).
 */
const INSIDE_MARKS = /(?<!\])\[(\p{L}{1,3})\](?=\p{L})|\u00ad|\u200c|\u200d|\u2060/gu
const HAS_MARK = /\[|\u00ad|\u200c|\u200d|\u2060/

/** Whether `text` holds a character version 2 may join into a word. */
export const hasMarks = (text: string): boolean => HAS_MARK.test(text)

/** `text` with what version 2 joins into words taken out; as is for version 1 or text without such marks. */
export const joinMarks = (text: string, version: AnalyzerConfig["version"]): string =>
  version !== 2 || !hasMarks(text) ? text : text.replace(INSIDE_MARKS, "$1")

/**
 * `joinMarks` with where each unit of the result came from (`from`, UTF-16 units of `text`), for highlighting words
 * in the text as written.
 */
export const joinMarksAligned = (
  text: string,
  version: AnalyzerConfig["version"]
): { readonly text: string; readonly from: Int32Array } => {
  const from = new Int32Array(text.length + 1)
  let out = ""
  let at = 0
  let size = 0
  const copy = (to: number) => {
    for (let i = at; i < to; i++) from[size++] = i
    out += text.slice(at, to)
  }
  if (version === 2 && hasMarks(text)) {
    for (const m of text.matchAll(INSIDE_MARKS)) {
      copy(m.index)
      const letters = m[1]
      if (letters !== undefined) {
        for (let i = 0; i < letters.length; i++) from[size++] = m.index + 1 + i
        out += letters
      }
      at = m.index + m[0].length
    }
  }
  copy(text.length)
  from[size] = text.length
  return { text: out, from: from.subarray(0, size + 1) }
}

/**
 * Stems seen recently, kept by the caller that analyzes many texts (a preparing thread): word frequencies are skewed,
 * so most words repeat and the Porter rules run once per word.
 */
export type StemMemo = Map<string, string>

const stemOf = (word: string, stems: StemMemo): string => {
  let stem = stems.get(word)
  if (stem === undefined) {
    if (stems.size >= 100_000) stems.clear()
    stems.set(word, (stem = stemmer(word)))
  }
  return stem
}

/** How a code point takes part in words: 0 other, 1 a word character, 2 an ideograph, 3 a joiner (`'`, `’`, `.`). */
const OTHER = 0
const WORD_CHAR = 1
const IDEOGRAPH = 2
const JOINER = 3
const IS_WORD_CHAR = /^[[\p{L}\p{M}\p{N}]--\p{Ideographic}]$/v
const IS_IDEOGRAPH = /^\p{Ideographic}$/v
const ASCII_CLASS = new Uint8Array(128)
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c)
  ASCII_CLASS[c] = ch === "'" || ch === "." ? JOINER : IS_WORD_CHAR.test(ch) ? WORD_CHAR : OTHER
}
/** A code point's class, from `ASCII_CLASS` or else the caller's memo of the code points met so far. */
const classOf = (cp: number, classes: Map<number, number>): number => {
  if (cp < 128) return ASCII_CLASS[cp]!
  if (cp === 0x2019) return JOINER
  let c = classes.get(cp)
  if (c === undefined) {
    const ch = String.fromCodePoint(cp)
    classes.set(cp, (c = IS_IDEOGRAPH.test(ch) ? IDEOGRAPH : IS_WORD_CHAR.test(ch) ? WORD_CHAR : OTHER))
  }
  return c
}

/**
 * Word ranges as `scanWords` finds them: per word, its start, its end and its `WordTable.hash`, three numbers in
 * `data`, `size` numbers in all. A caller reuses one from text to text, so scanning allocates nothing per word.
 */
export class WordRanges {
  data = new Int32Array(3 * 256)
  size = 0
  /** The classes of the code points above ASCII met so far (testing a code point takes two regular expressions). */
  readonly classes = new Map<number, number>()

  /** Adds a word; as a method of its own, so the scanning loop stays small. */
  push(from: number, to: number, hash: number): void {
    if (this.size + 3 > this.data.length) {
      const grown = new Int32Array(2 * this.data.length)
      grown.set(this.data)
      this.data = grown
    }
    const at = this.size
    this.data[at] = from
    this.data[at + 1] = to
    this.data[at + 2] = hash
    this.size = at + 3
  }
}

/** The units that join two runs of word characters into one word: `'`, `.` and `’`. */
const isJoiner = (unit: number): boolean => unit === 0x27 || unit === 0x2e || unit === 0x2019

/**
 * The words of lowercased `text` with the `WORD` pattern's leftmost-longest semantics, as a scanner over code points
 * (several times faster than the regular expression, which stays as the reference `wordsReference`), into `ranges`
 * (emptied first). Ranges rather than a call per word: a call per word cost a third of the scan.
 */
export const scanWords = (text: string, ranges: WordRanges): void => {
  ranges.size = 0
  const n = text.length
  let i = 0
  while (i < n) {
    // ASCII, almost all of most text, is classified by table without reading a code point.
    const unit = text.charCodeAt(i)
    let c: number
    let size = 1
    if (unit < 128) c = ASCII_CLASS[unit]!
    else {
      const cp = text.codePointAt(i)!
      if (cp > 0xffff) size = 2
      c = classOf(cp, ranges.classes)
    }
    if (c === IDEOGRAPH) {
      ranges.push(i, i + size, WordTable.hash(text, i, i + size))
      i += size
      continue
    }
    if (c !== WORD_CHAR) {
      i += size
      continue
    }
    const from = i
    // The word's WordTable hash, folded in unit by unit as the word is scanned rather than in a second pass.
    let hash = FNV_OFFSET
    // A run of word characters, then any number of (joiner, run) pairs.
    for (;;) {
      while (i < n) {
        const u = text.charCodeAt(i)
        if (u < 128) {
          if (ASCII_CLASS[u] !== WORD_CHAR) break
          hash = Math.imul(hash ^ u, FNV_PRIME)
          i++
          continue
        }
        const p = text.codePointAt(i)!
        if (classOf(p, ranges.classes) !== WORD_CHAR) break
        hash = Math.imul(hash ^ u, FNV_PRIME)
        if (p > 0xffff) {
          hash = Math.imul(hash ^ text.charCodeAt(i + 1), FNV_PRIME)
          i += 2
        } else i++
      }
      // Every joiner is one UTF-16 unit, and no other unit is one (a surrogate starts a code point above U+FFFF).
      if (i >= n || !isJoiner(text.charCodeAt(i))) break
      const after = i + 1
      if (after >= n) break
      const next = text.charCodeAt(after)
      if ((next < 128 ? ASCII_CLASS[next] : classOf(text.codePointAt(after)!, ranges.classes)) !== WORD_CHAR) break
      hash = Math.imul(hash ^ text.charCodeAt(i), FNV_PRIME)
      i = after
    }
    ranges.push(from, i, hash)
  }
}

/** The words of lowercased text by the `WORD` regular expression: the executable definition `scanWords` follows. */
export const wordsReference = (lowered: string): Array<string> => [...lowered.matchAll(WORD)].map((m) => m[0])

/** The words of lowercased text, by the fast scanner. */
export const words = (lowered: string): Array<string> => {
  const ranges = new WordRanges()
  scanWords(lowered, ranges)
  const out: Array<string> = []
  for (let at = 0; at < ranges.size; at += 3) out.push(lowered.slice(ranges.data[at]!, ranges.data[at + 1]!))
  return out
}

/**
 * The terms of `text`, in order: words (for version 2, with the marks inside them joined) lowercased, a possessive
 * `'s` removed, stop words dropped and the rest Porter-stemmed (English words only) as `config` says. The same function analyzes chunks and queries.
 */
export const analyze = (text: string, config: AnalyzerConfig = AnalyzerConfig.default): Array<string> => {
  const terms: Array<string> = []
  const stems: StemMemo = new Map()
  analyzeWords(joinMarks(text, config.version), (word) => {
    const term = termOf(word, config, stems)
    if (term !== undefined) terms.push(term)
  })
  return terms
}

/** The words of `text` as `analyze` finds them (lowercased, before the term rules), one call of `emit` each. */
export const analyzeWords = (text: string, emit: (word: string) => void, ranges = new WordRanges()): void =>
  analyzeRanges(text, (lowered, from, to) => emit(lowered.slice(from, to)), ranges)

/**
 * The words of `text` as `analyzeWords` finds them, as ranges of its lowercased form (given to `emit` with each, and
 * the range's `WordTable.hash`), so a caller can look words up without making a string of each.
 */
export const analyzeRanges = (
  text: string,
  emit: (lowered: string, from: number, to: number, hash: number) => void,
  ranges = new WordRanges()
): void => {
  const lowered = text.toLowerCase()
  scanWords(lowered, ranges)
  const { data, size } = ranges
  for (let at = 0; at < size; at += 3) emit(lowered, data[at]!, data[at + 1]!, data[at + 2]!)
}

/**
 * The term a lowercased word becomes: without a possessive `'s`, `undefined` for a stop word, Porter-stemmed if it is
 * an English word; as `config` says. A caller may cache it per word; `stems` is the caller's memo of stems.
 */
export const termOf = (word: string, config: AnalyzerConfig, stems: StemMemo = new Map()): string | undefined => {
  let term = word
  if (term.endsWith("'s") || term.endsWith("’s")) term = term.slice(0, -2)
  if (config.stopWords === "english" && ENGLISH_STOP_WORDS.has(term)) return undefined
  return config.stemmer === "porter" && ASCII_WORD.test(term) ? stemOf(term, stems) : term
}

/** How often each term occurs. */
export const termCounts = (terms: ReadonlyArray<string>): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1)
  return counts
}
