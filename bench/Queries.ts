/** Deterministic benchmark queries drawn from indexed chunks: rare words, common pairs, phrases, exact chunk texts. */
import { analyze, cleanText, ENGLISH_STOP_WORDS } from "@funcpipe/pipeline"
import { prng } from "./Corpus.ts"

/** How a query was drawn. */
export type QueryKind = "rare word" | "common pair" | "phrase" | "chunk text"

/** The kinds of word queries, in the order they are drawn. */
export const WORD_KINDS: ReadonlyArray<QueryKind> = ["rare word", "common pair", "phrase"]

/** A stored chunk's key. */
export interface ChunkKey {
  readonly docId: string
  readonly start: number
  readonly end: number
  readonly text: string
}

/** One benchmark query; a `chunk text` query is the exact text of the chunk `expected`. */
export interface BenchQuery {
  readonly kind: QueryKind
  readonly text: string
  readonly expected?: ChunkKey
}

/** How many chunk texts the vocabulary is counted on: enough for a 4,000-word vocabulary, bounded in time. */
const SAMPLE = 20_000
/** Rare words come from this least frequent share of the vocabulary, common ones from its most frequent words. */
const RARE_SHARE = 0.1
const COMMON_WORDS = 60
/** Exact-text queries use chunks at least this long, so no two documents share one. */
const MIN_CHUNK_TEXT = 200

const WORD = /\p{L}+/gu

/**
 * `words` word queries (a third rare single words, a third pairs of common words, the rest phrases of 3–5 consecutive
 * words from a chunk) and `exact` exact chunk texts, drawn from the chunks with the PRNG of `seed`. Every word query
 * has at least one search term; every chunk text is already clean, so the query's vector is the chunk's.
 */
export const pickQueries = (
  chunks: ReadonlyArray<ChunkKey>,
  words: number,
  exact: number,
  seed: number
): Array<BenchQuery> => {
  const random = prng(seed)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)]!
  const sample = Array.from({ length: Math.min(SAMPLE, chunks.length) }, () => pick(chunks).text)
  const frequency = new Map<string, number>()
  for (const text of sample) {
    for (const match of text.matchAll(WORD)) frequency.set(match[0], (frequency.get(match[0]) ?? 0) + 1)
  }
  const vocabulary = [...frequency]
    .filter(([word]) => word.length >= 3 && !ENGLISH_STOP_WORDS.has(word) && analyze(word).length > 0)
    .sort(([a, x], [b, y]) => (x !== y ? y - x : a < b ? -1 : a > b ? 1 : 0))
    .map(([word]) => word)
  const rare = vocabulary.slice(Math.floor(vocabulary.length * (1 - RARE_SHARE)))
  const common = vocabulary.slice(0, COMMON_WORDS)

  const out: Array<BenchQuery> = []
  const seen = new Set<string>()
  const add = (kind: QueryKind, text: string, expected?: ChunkKey): boolean => {
    if (seen.has(text)) return false
    seen.add(text)
    out.push(expected === undefined ? { kind, text } : { kind, text, expected })
    return true
  }
  const draw = (n: number, kind: QueryKind, next: () => string | undefined) => {
    for (let made = 0, tries = 0; made < n && tries < 100 * n + 100; tries++) {
      const text = next()
      if (text !== undefined && analyze(cleanText(text)).length > 0 && add(kind, text)) made++
    }
  }
  const rareCount = Math.round(words / 3)
  const pairCount = Math.round(words / 3)
  draw(rareCount, "rare word", () => (rare.length === 0 ? undefined : pick(rare)))
  draw(pairCount, "common pair", () => {
    const a = pick(common)
    const b = pick(common)
    return a === b ? undefined : `${a} ${b}`
  })
  draw(words - rareCount - pairCount, "phrase", () => {
    const tokens = pick(sample).split(" ")
    const length = 3 + Math.floor(random() * 3)
    if (tokens.length < length) return undefined
    const from = Math.floor(random() * (tokens.length - length + 1))
    return tokens.slice(from, from + length).join(" ")
  })
  for (let made = 0, tries = 0; made < exact && tries < 1000 * exact; tries++) {
    const chunk = pick(chunks)
    const usable = chunk.text.length >= MIN_CHUNK_TEXT && cleanText(chunk.text) === chunk.text
    if (usable && add("chunk text", chunk.text, chunk)) made++
  }
  return out
}
