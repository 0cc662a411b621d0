/** A deterministic synthetic corpus of English-like documents, generated in memory or written as JSON Lines. */

import { once } from "node:events"
import { createWriteStream } from "node:fs"
import { finished } from "node:stream/promises"

/** One generated document; `body` is the text to clean, chunk and embed. */
export interface SyntheticDoc {
  readonly id: string
  readonly title: string
  readonly body: string
}

/** Mulberry32: a small, fast 32-bit PRNG giving floats in [0, 1); the same seed always gives the same sequence. */
export const prng = (seed: number): (() => number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// The most frequent English words take the top ranks, as in real text.
const FUNCTION_WORDS = (
  "the of and to a in is that for it as was with be by on not he this are or his from at which but have an had " +
  "they you were their one all we can her has there been if more when will would who so no"
).split(" ")

// A few Latin-1 loanwords, so some documents hold non-ASCII letters (still one byte per character in V8).
const LOANWORDS = ["café", "naïve", "résumé", "façade", "déjà", "rôle", "élite", "señor"]

const ONSETS = [
  "b",
  "c",
  "d",
  "f",
  "g",
  "h",
  "j",
  "k",
  "l",
  "m",
  "n",
  "p",
  "r",
  "s",
  "t",
  "v",
  "w",
  "z",
  "bl",
  "br",
  "ch",
  "cl",
  "cr",
  "dr",
  "fl",
  "fr",
  "gr",
  "pl",
  "pr",
  "sh",
  "sl",
  "sp",
  "st",
  "str",
  "th",
  "tr",
  "wh",
  ""
]
const VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "io", "oo", "ou", "y"]
const CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "nt", "rt", "st", "ck", "x"]

/** `size` distinct lower-case words, most frequent first: function words, then generated ones and a few loanwords. */
const vocabulary = (random: () => number, size: number): ReadonlyArray<string> => {
  const words = [...FUNCTION_WORDS]
  const seen = new Set(words)
  const pick = (xs: ReadonlyArray<string>) => xs[Math.floor(random() * xs.length)]!
  while (words.length < size) {
    if (random() < 0.002) {
      const loan = pick(LOANWORDS)
      if (!seen.has(loan)) {
        seen.add(loan)
        words.push(loan)
      }
      continue
    }
    const syllables = 1 + Math.floor(random() * random() * 4)
    let word = ""
    for (let s = 0; s < syllables; s++) word += pick(ONSETS) + pick(VOWELS) + (s === syllables - 1 ? pick(CODAS) : "")
    if (word.length > 1 && !seen.has(word)) {
      seen.add(word)
      words.push(word)
    }
  }
  return words
}

/** A sampler of ranks 0 … n - 1 with Zipf–Mandelbrot weights 1 / (rank + 2.7)^1.07, by binary search on the CDF. */
const zipf = (random: () => number, n: number): (() => number) => {
  const cdf = new Float64Array(n)
  let total = 0
  for (let r = 0; r < n; r++) cdf[r] = total += 1 / (r + 2.7) ** 1.07
  return () => {
    const u = random() * total
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (cdf[mid]! < u) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

const capitalize = (word: string): string => word.charAt(0).toUpperCase() + word.slice(1)

/**
 * Yields documents until their bodies hold at least `targetBytes` bytes of UTF-8 (pass `Infinity` for an endless
 * stream). Bodies are 1–3 KB of paragraphs separated by blank lines; sentences start with a capital, hold some commas,
 * capitalised names and numbers, and end in `.`, `?` or `!`; about half the bodies end with a newline. Words follow a
 * Zipf-like law over a vocabulary of 4,000. The same seed always yields the same documents.
 */
export const syntheticDocs = function* (seed: number, targetBytes: number): Generator<SyntheticDoc> {
  const random = prng(seed)
  const words = vocabulary(random, 4000)
  const rank = zipf(random, words.length)
  const word = () => words[rank()]!
  const sentence = (): string => {
    const length = 6 + Math.floor(random() * 19)
    let out = capitalize(word())
    for (let i = 1; i < length; i++) {
      const roll = random()
      const next = roll < 0.03 ? capitalize(word()) : roll < 0.04 ? String(Math.floor(random() * 2100)) : word()
      out += (random() < 0.07 ? ", " : " ") + next
    }
    const end = random()
    return out + (end < 0.88 ? "." : end < 0.96 ? "?" : "!")
  }
  let bytes = 0
  for (let i = 0; bytes < targetBytes; i++) {
    const target = 1000 + Math.floor(random() * 2000)
    let body = ""
    while (body.length < target) {
      let paragraph = sentence()
      const sentences = 2 + Math.floor(random() * 5)
      for (let s = 1; s < sentences && paragraph.length + body.length < target; s++) paragraph += ` ${sentence()}`
      body += (body === "" ? "" : "\n\n") + paragraph
    }
    if (random() < 0.5) body += "\n"
    const titleWords = 3 + Math.floor(random() * 6)
    const title = Array.from({ length: titleWords }, () => capitalize(word())).join(" ")
    bytes += Buffer.byteLength(body, "utf8")
    yield { id: `doc-${seed}-${i}`, title, body }
  }
}

/**
 * Writes a JSON Lines corpus of about `bytes` bytes to `path`: one `{"id","title","text"}` object per line, from
 * `syntheticDocs(seed, …)`, stopping at the first line that reaches the size. Memory stays bounded: lines go out in
 * batches of about 1 MB through a write stream that is allowed to drain. Resolves to the document and byte counts.
 * `extra`, when given, adds fields to each line from the document's number (0, 1, …); `textOf` makes each line's text
 * from its document (by default the whole body).
 */
export const writeJsonlCorpus = async (
  path: string,
  bytes: number,
  seed: number,
  extra: (index: number) => Readonly<Record<string, unknown>> = () => ({}),
  textOf: (doc: SyntheticDoc, index: number) => string = (doc) => doc.body
): Promise<{ readonly docs: number; readonly bytes: number }> => {
  const stream = createWriteStream(path, { encoding: "utf8" })
  let written = 0
  let docs = 0
  let batch = ""
  for (const doc of syntheticDocs(seed, Infinity)) {
    if (written >= bytes) break
    const line = `${JSON.stringify({ id: doc.id, title: doc.title, text: textOf(doc, docs), ...extra(docs) })}\n`
    written += Buffer.byteLength(line, "utf8")
    docs++
    batch += line
    if (batch.length >= 1 << 20) {
      if (!stream.write(batch)) await once(stream, "drain")
      batch = ""
    }
  }
  stream.end(batch)
  await finished(stream)
  return { docs, bytes: written }
}

/**
 * A short document's text: the body's start, cut after the last whole word within 280–700 characters (about the
 * 530 bytes of an abstract-sized record, like the 140k short documents).
 */
export const shortText = (doc: SyntheticDoc, index: number): string =>
  doc.body.slice(0, 280 + ((index * 37) % 420)).replace(/\s+\S*$/, "")

/**
 * `count` word queries from the bodies of the corpus of `seed`: three to five consecutive words of spread-out
 * documents, so each query has answers.
 */
export const phraseQueries = (seed: number, count: number): Array<string> => {
  const out: Array<string> = []
  let n = 0
  for (const doc of syntheticDocs(seed, Infinity)) {
    if (out.length >= count) break
    if (n++ % 7 !== 0) continue
    const words = doc.body.split(/\s+/).filter((w) => /^[a-z]{4,}$/.test(w))
    if (words.length >= 6) out.push(words.slice(2, 3 + (out.length % 3) + 1).join(" "))
  }
  return out
}
