/** The lexical analyzer: text to search terms (words of any script, lowercased, stop words out, stemmed). */
import { stemmer } from "stemmer"
import { AnalyzerConfig } from "@funcpipe/domain/Config"

/** Lucene's English stop words (the set its English analyzer and Anserini's BM25 runs drop). */
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set([
  "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
  "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"
])

/**
 * A word: a run of letters, marks and digits of any script, which may hold an apostrophe or a dot between two such
 * runs ("don't", "e.g", "3.5"); or a single ideograph, since CJK text has no spaces between words.
 */
const WORD = /\p{Ideographic}|[[\p{L}\p{M}\p{N}]--\p{Ideographic}]+(?:['’.][[\p{L}\p{M}\p{N}]--\p{Ideographic}]+)*/gv
const ASCII_WORD = /^[a-z]+$/

/** Stems seen recently: word frequencies are skewed, so most words repeat and the Porter rules run once per word. */
const stems = new Map<string, string>()
const stemOf = (word: string): string => {
  let stem = stems.get(word)
  if (stem === undefined) {
    if (stems.size >= 200_000) stems.clear()
    stems.set(word, stem = stemmer(word))
  }
  return stem
}

/**
 * The terms of `text`, in order: words lowercased, a possessive `'s` removed, stop words dropped and the rest
 * Porter-stemmed (English words only) as `config` says. The same function analyzes chunks and queries.
 */
export const analyze = (text: string, config: AnalyzerConfig = AnalyzerConfig.default): Array<string> => {
  const stop = config.stopWords === "english"
  const stem = config.stemmer === "porter"
  const terms: Array<string> = []
  for (const match of text.toLowerCase().matchAll(WORD)) {
    let term = match[0]
    if (term.endsWith("'s") || term.endsWith("’s")) term = term.slice(0, -2)
    if (stop && ENGLISH_STOP_WORDS.has(term)) continue
    if (stem && ASCII_WORD.test(term)) term = stemOf(term)
    terms.push(term)
  }
  return terms
}

/** How often each term occurs. */
export const termCounts = (terms: ReadonlyArray<string>): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1)
  return counts
}
