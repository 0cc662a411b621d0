/** Okapi BM25 over chunks, with Lucene's idf. */
import type { Bm25Params } from "@funcpipe/domain/Config"

/** The chunks that contain one term: positions (into the index's chunk list) and term frequencies, in step. */
export interface Postings {
  readonly positions: Uint32Array
  readonly tfs: Uint32Array
}

/**
 * What BM25 needs: the number of chunks, each chunk's length in terms, and the postings of (at least) the terms to
 * score. A store may load only the query's postings; the counts and lengths always cover every chunk.
 */
export interface LexicalIndex {
  readonly lengths: Uint32Array
  readonly averageLength: number
  readonly postings: ReadonlyMap<string, Postings>
}

/** Builds the lexical index of chunks from each chunk's term counts, in chunk order. */
export const lexicalIndex = (
  chunks: ReadonlyArray<{ readonly length: number; readonly terms: ReadonlyMap<string, number> }>
): LexicalIndex => {
  const lengths = new Uint32Array(chunks.length)
  const lists = new Map<string, { positions: Array<number>; tfs: Array<number> }>()
  let total = 0
  chunks.forEach((chunk, position) => {
    lengths[position] = chunk.length
    total += chunk.length
    for (const [term, tf] of chunk.terms) {
      let list = lists.get(term)
      if (list === undefined) lists.set(term, (list = { positions: [], tfs: [] }))
      list.positions.push(position)
      list.tfs.push(tf)
    }
  })
  const postings = new Map<string, Postings>()
  for (const [term, list] of lists) {
    postings.set(term, { positions: Uint32Array.from(list.positions), tfs: Uint32Array.from(list.tfs) })
  }
  return { lengths, averageLength: averageOf(lengths, total), postings }
}

/** The mean chunk length (0 for no chunks). */
export const averageOf = (lengths: Uint32Array, total: number): number =>
  lengths.length === 0 ? 0 : total / lengths.length

/** Lucene's BM25 idf: `ln(1 + (N - df + 0.5) / (df + 0.5))`, always above 0. */
export const idf = (chunks: number, df: number): number => Math.log(1 + (chunks - df + 0.5) / (df + 0.5))

/** One term's share of a chunk's BM25 score: `idf · tf · (k1 + 1) / (tf + k1 · (1 − b + b · length / avgLength))`. */
export const termScore = (
  idfValue: number,
  tf: number,
  length: number,
  averageLength: number,
  params: Bm25Params
): number => {
  const norm = averageLength === 0 ? 1 : 1 - params.b + params.b * (length / averageLength)
  return (idfValue * (tf * (params.k1 + 1))) / (tf + params.k1 * norm)
}

/**
 * The BM25 score of every chunk for the query terms (a repeated term counts each time, as in Lucene), summed in
 * query-term order so every store gets the same bits. A chunk without any query term scores 0.
 */
export const bm25Scores = (terms: ReadonlyArray<string>, index: LexicalIndex, params: Bm25Params): Float64Array => {
  const scores = new Float64Array(index.lengths.length)
  for (const term of terms) {
    const postings = index.postings.get(term)
    if (postings === undefined) continue
    const weight = idf(index.lengths.length, postings.positions.length)
    for (let i = 0; i < postings.positions.length; i++) {
      const position = postings.positions[i]!
      scores[position] =
        scores[position]! + termScore(weight, postings.tfs[i]!, index.lengths[position]!, index.averageLength, params)
    }
  }
  return scores
}

/** One query term's contribution to one chunk's score. */
export interface TermExplanation {
  readonly term: string
  readonly tf: number
  readonly df: number
  readonly idf: number
  readonly score: number
}

/** Why a chunk got its BM25 score: each query term (in query order) with its frequencies, idf and share. */
export const explainBm25 = (
  terms: ReadonlyArray<string>,
  position: number,
  index: LexicalIndex,
  params: Bm25Params
): ReadonlyArray<TermExplanation> =>
  terms.map((term) => {
    const postings = index.postings.get(term)
    const df = postings?.positions.length ?? 0
    const at = postings === undefined ? -1 : postings.positions.indexOf(position)
    const tf = at < 0 ? 0 : postings!.tfs[at]!
    const weight = df === 0 ? 0 : idf(index.lengths.length, df)
    return {
      term,
      tf,
      df,
      idf: weight,
      score: tf === 0 ? 0 : termScore(weight, tf, index.lengths[position]!, index.averageLength, params)
    }
  })
