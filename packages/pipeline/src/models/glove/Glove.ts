/**
 * The `glove-100d` embedding: a text's vector is the SIF-weighted mean of its words' GloVe vectors, with the
 * vectors' common directions removed ("all-but-the-top"), normalised to length 1.
 */
import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { analyzeWords, WordRanges } from "../../analysis/Analyzer.ts"
import type { GloveCacheContent } from "./GloveCache.ts"
import type { WordVectors } from "./WinkVectors.ts"
import { makeWordList, rowOfWord, tableRows, type WordList, wordHash } from "./WordList.ts"

/** The model label stored with every `glove-100d` vector. */
export const GLOVE_100D = ModelLabel.make("glove-100d")

/**
 * How many common directions (principal components of the word vectors) are removed: Mu and Viswanath's rule of
 * thumb (dimensions / 100) gives 1 for 100 dimensions, and 1 measured better than 2 or 3 on Cranfield.
 */
export const COMMON_COMPONENTS = 1

/**
 * How many of the most frequent words the mean and the common directions are computed from. The rare words' vectors
 * are noisy and many: the top 100,000 gave better directions than all 341,479 (or the top 20,000 or 50,000).
 */
export const COMMON_ROWS = 100_000

/**
 * SIF's smoothing constant `a`: a word's weight is `a / (a + p(word))`. Arora et al. used 1e-3 to 1e-4 with
 * measured frequencies; with Zipf's estimate from the rank, 3e-5 measured best. Weights are then 0.0004 for "the",
 * 0.04 for the 100th word, 0.29 for the 1,000th, 0.8 for the 10,000th and 0.98 for the 100,000th.
 */
export const SIF_A = 3e-5

/** Word vectors ready to embed with: what the cache file holds, and the weights derived from the word ranks. */
export interface GloveModel {
  readonly dimensions: number
  /** The words; rows are in frequency order, 0 the most frequent word. */
  readonly words: WordList
  /** `rows × dimensions` components, row by row: the vector file's vectors scaled to length 1, half precision. */
  readonly vectors: Float16Array
  /** The mean of the `COMMON_ROWS` most frequent words' vectors. */
  readonly mean: Float64Array
  /** The common directions, unit length and orthogonal, each `dimensions` long. */
  readonly components: ReadonlyArray<Float64Array>
  /** The SIF weight of each row. */
  readonly weights: Float32Array
  /** The SIF weight of a word the vectors lack: that of a word rarer than the rarest they hold. */
  readonly unknownWeight: number
  /** The word scanner's memory and its memo of code points, reused from text to text. */
  readonly ranges: WordRanges
}

/** The model the cache content makes, with SIF weights for `a`. */
export const gloveModel = (content: GloveCacheContent, a: number = SIF_A): GloveModel => {
  const rows = tableRows(content.words)
  const weights = sifWeights(rows + 1, a)
  return {
    dimensions: content.dimensions,
    words: content.words,
    vectors: content.vectors,
    mean: content.mean,
    components: content.components,
    weights: weights.subarray(0, rows),
    unknownWeight: weights[rows]!,
    ranges: new WordRanges()
  }
}

/**
 * The cache content for vectors read from the vector file: each row scaled to length 1, then the mean and
 * the common directions of the `COMMON_ROWS` most frequent rows, the vectors in half precision. Takes ownership of
 * `source.vectors`: the rows are scaled and converted in place (the array is unusable afterwards), since a copy
 * would double the memory of a conversion.
 */
export const convertVectors = (source: WordVectors, recipe: string): GloveCacheContent => {
  const { dimensions, vectors } = source
  for (let base = 0; base < vectors.length; base += dimensions) {
    let sum = 0
    for (let i = 0; i < dimensions; i++) sum += vectors[base + i]! * vectors[base + i]!
    const scale = sum === 0 ? 0 : 1 / Math.sqrt(sum)
    for (let i = 0; i < dimensions; i++) vectors[base + i]! *= scale
  }
  const common = vectors.subarray(0, Math.min(COMMON_ROWS, source.words.length) * dimensions)
  const { components, mean } = commonDirections(common, dimensions, COMMON_COMPONENTS)
  // Half precision (an error below 0.05 % per component) halves the file and its loading; retrieval measured the
  // same. Written over the float32 array's own memory: half component i takes bytes 2i and 2i + 1, inside float
  // component i / 2, which was read before, so no second matrix is needed.
  const half = new Float16Array(vectors.buffer, vectors.byteOffset, vectors.length)
  for (let i = 0; i < vectors.length; i++) half[i] = vectors[i]!
  return { recipe, dimensions, words: makeWordList(source.words), vectors: half, mean, components }
}

/**
 * The mean of the rows of `vectors` and the top `k` principal components of the rows around it (unit length,
 * orthogonal, the most variance first; each signed so that its largest component is positive). Found by power
 * iteration with deflation on the covariance matrix, from a fixed start, so equal input gives equal output.
 */
export const commonDirections = (
  vectors: Float32Array,
  dimensions: number,
  k: number
): { readonly mean: Float64Array; readonly components: ReadonlyArray<Float64Array> } => {
  const rows = vectors.length / dimensions
  const mean = new Float64Array(dimensions)
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < dimensions; i++) mean[i]! += vectors[r * dimensions + i]!
  }
  for (let i = 0; i < dimensions; i++) mean[i]! /= rows
  // The upper triangle of Σ (x - mean)(x - mean)ᵀ, mirrored after.
  const covariance = new Float64Array(dimensions * dimensions)
  const x = new Float64Array(dimensions)
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < dimensions; i++) x[i] = vectors[r * dimensions + i]! - mean[i]!
    for (let i = 0; i < dimensions; i++) {
      const xi = x[i]!
      const row = i * dimensions
      for (let j = i; j < dimensions; j++) covariance[row + j]! += xi * x[j]!
    }
  }
  for (let i = 0; i < dimensions; i++) {
    for (let j = 0; j < i; j++) covariance[i * dimensions + j] = covariance[j * dimensions + i]!
  }
  const components: Array<Float64Array> = []
  for (let c = 0; c < Math.min(k, dimensions); c++) {
    let v = new Float64Array(dimensions).map((_, i) => 1 + i / dimensions)
    for (let iteration = 0; iteration < 1000; iteration++) {
      const next = new Float64Array(dimensions)
      for (let i = 0; i < dimensions; i++) {
        let sum = 0
        for (let j = 0; j < dimensions; j++) sum += covariance[i * dimensions + j]! * v[j]!
        next[i] = sum
      }
      for (const found of components) removeDirection(next, found)
      normalise(next)
      let change = 0
      for (let i = 0; i < dimensions; i++) change = Math.max(change, Math.abs(next[i]! - v[i]!))
      v = next
      if (change < 1e-12) break
    }
    let largest = 0
    for (let i = 1; i < dimensions; i++) if (Math.abs(v[i]!) > Math.abs(v[largest]!)) largest = i
    if (v[largest]! < 0) for (let i = 0; i < dimensions; i++) v[i] = -v[i]!
    components.push(v)
  }
  return { mean, components }
}

/** Removes from `v` its projection on the unit vector `direction`, in place. */
export const removeDirection = (v: Float64Array, direction: Float64Array): void => {
  let dot = 0
  for (let i = 0; i < v.length; i++) dot += v[i]! * direction[i]!
  for (let i = 0; i < v.length; i++) v[i]! -= dot * direction[i]!
}

/** Scales `v` to length 1 in place; returns false (and leaves it) when it is all zeros. */
const normalise = (v: Float64Array): boolean => {
  let sum = 0
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!
  if (sum === 0) return false
  const scale = 1 / Math.sqrt(sum)
  for (let i = 0; i < v.length; i++) v[i]! *= scale
  return true
}

/**
 * SIF weights by frequency rank: the word of rank `r` (0 the most frequent) has the Zipf probability
 * `p = 1 / ((r + 1) · H)`, `H` the harmonic number of `rows`, and weight `a / (a + p)`. Frequent words weigh little,
 * rare ones close to 1; the weights fall strictly from the rarest to the most frequent.
 */
export const sifWeights = (rows: number, a: number = SIF_A): Float32Array => {
  let harmonic = 0
  for (let r = 1; r <= rows; r++) harmonic += 1 / r
  const weights = new Float32Array(rows)
  for (let r = 0; r < rows; r++) weights[r] = a / (a + 1 / ((r + 1) * harmonic))
  return weights
}

/** A word the vectors lack gets a made-up vector if it is at least this long and holds a letter. */
export const UNKNOWN_MIN_LENGTH = 3

const JOINERS = /['’.]/
const LETTER = /\p{L}/u

/**
 * Calls `known(row)` for each word of `text` that has a vector, and `unknown(word)` for each that has none but
 * gets a made-up one, in order. Words are found as the lexical analyzer finds them (lowercased, any script, a
 * hyphen between words); one the vectors lack is tried as its parts between apostrophes and dots ("don't" is "don"
 * and "t", "e.g" is "e" and "g"), since the vectors hold no such joined words. Nothing is stemmed. Numbers and
 * words shorter than `UNKNOWN_MIN_LENGTH` that the vectors lack are left out (the vectors hold no numbers and no
 * one-letter words, so these would be noise).
 */
export const gloveWords = (
  model: GloveModel,
  text: string,
  known: (row: number) => void,
  unknown: (word: string) => void
): void => {
  const visit = (word: string): void => {
    const row = rowOfWord(model.words, word)
    if (row >= 0) known(row)
    else if (word.length >= UNKNOWN_MIN_LENGTH && LETTER.test(word)) unknown(word)
  }
  analyzeWords(
    text,
    (word) => {
      const row = rowOfWord(model.words, word)
      if (row >= 0) known(row)
      else if (JOINERS.test(word)) for (const part of word.split(JOINERS)) visit(part)
      else visit(word)
    },
    model.ranges
  )
}

/**
 * Adds `weight ×` the made-up vector of `word` to `out`: components drawn uniformly with variance `1 / length`
 * (so the vector's expected length is 1, like a word vector's) from a generator seeded by the word's FNV-1a hash.
 * Equal words get equal vectors and different words nearly orthogonal ones, so a rare word the vectors lack (a gene,
 * a product name) still matches itself.
 */
export const addUnknownVector = (word: string, weight: number, out: Float64Array): void => {
  let state = wordHash(word) || 1
  // Uniform on [-√3/√n, √3/√n) has variance 1/n.
  const scale = 2 * Math.sqrt(3 / out.length) * weight
  for (let i = 0; i < out.length; i++) {
    // xorshift32
    state ^= state << 13
    state >>>= 0
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    out[i]! += scale * (state / 4294967296 - 0.5)
  }
}

/**
 * Writes the `glove-100d` vector of `text` into `out` (length `dimensions`): the SIF-weighted mean of its words'
 * unit vectors (made-up ones for words the vectors lack, see `gloveWords`), minus the mean word vector, without its
 * common directions, scaled to length 1. Removing the mean and the directions is linear, so doing it once to the
 * weighted mean equals doing it to every word first. Returns false, with `out` all zeros, when the text has no
 * word that counts (or they cancel out exactly).
 */
export const embedInto = (model: GloveModel, text: string, out: Float64Array): boolean => {
  const { dimensions, vectors, weights, unknownWeight } = model
  out.fill(0)
  let total = 0
  gloveWords(
    model,
    text,
    (row) => {
      const w = weights[row]!
      total += w
      const base = row * dimensions
      for (let i = 0; i < dimensions; i++) out[i]! += w * vectors[base + i]!
    },
    (word) => {
      total += unknownWeight
      addUnknownVector(word, unknownWeight, out)
    }
  )
  if (total === 0) return false
  for (let i = 0; i < dimensions; i++) out[i] = out[i]! / total - model.mean[i]!
  for (const direction of model.components) removeDirection(out, direction)
  if (normalise(out)) return true
  out.fill(0)
  return false
}

/**
 * The `glove-100d` embedding of `text`. A text with no word that counts (only numbers, one-letter words or
 * punctuation) gets the zero vector: it has no direction, so retrieval passes such chunks over, and such a query
 * fails with `ZeroVector` in the vector and hybrid modes (the lexical mode can answer it).
 */
export const embedGlove = (model: GloveModel, text: string): Embedding => {
  const out = new Float64Array(model.dimensions)
  embedInto(model, text, out)
  // Every component is a finite float (a sum of finite float32 products, scaled) and the label a constant.
  return new Embedding(
    { vector: Array.from(out) as [number, ...Array<number>], model: GLOVE_100D },
    { disableChecks: true }
  )
}
