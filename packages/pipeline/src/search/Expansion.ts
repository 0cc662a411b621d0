/**
 * Pseudo-relevance feedback: a query's terms, extended with the terms that characterise its best first-pass chunks.
 * Off by default; `--expand bo1` or `--expand rm3`.
 */
import { type Bm25Params, FusionConfig } from "@funcpipe/domain/Config"
import { FUSION_DEPTH, scoreQuery, topChunksOf } from "./Engine.ts"
import type { IndexView, PositionFilter } from "./IndexView.ts"

/** The expansion models: Bo1 (Amati's Bose-Einstein divergence from randomness) and RM3 (Lavrenko's relevance model). */
export type ExpansionMethod = "bo1" | "rm3"

/** How a query is expanded: `docs` first-pass chunks give at most `terms` new terms. */
export interface ExpansionConfig {
  readonly method: ExpansionMethod
  readonly docs: number
  readonly terms: number
}

/** The usual settings of both models: 3 feedback chunks, 10 expansion terms. */
export const defaultExpansion = (method: ExpansionMethod): ExpansionConfig => ({ method, docs: 3, terms: 10 })

/**
 * How finely term weights are kept: BM25 here counts a repeated query term once per occurrence, so a weight becomes
 * a number of occurrences, the largest weight `WEIGHT_STEPS` of them. Original terms keep their relative weights.
 */
export const WEIGHT_STEPS = 5

/** RM3's share of the original query in the new one. */
const RM3_ORIGINAL = 0.5

/** A term's occurrences in the live chunks (its collection frequency). */
const collectionFrequency = (view: IndexView, term: string): number => {
  let total = 0
  for (const block of view.postings(term)) {
    for (let i = 0; i < block.ordinals.length; i++) {
      if (view.deleted === undefined || view.deleted[block.offset + block.ordinals[i]!] !== 1) total += block.tfs[i]!
    }
  }
  return total
}

const counts = (terms: ReadonlyArray<string>): Map<string, number> => {
  const map = new Map<string, number>()
  for (const term of terms) map.set(term, (map.get(term) ?? 0) + 1)
  return map
}

/**
 * Each candidate term's weight under `method`, from the feedback chunks' terms (`feedback`, with their first-pass
 * scores) and the query's own terms. Bo1: `tf_R · log2((1 + P) / P) + log2(1 + P)` with `P` the term's collection
 * frequency over the number of chunks; the original terms add their normalised query frequency. RM3: the feedback
 * chunks' language models weighted by their scores, mixed half and half with the query's. Pure but for reading
 * postings through `view`.
 */
export const expansionWeights = (
  view: IndexView,
  query: ReadonlyArray<string>,
  feedback: ReadonlyArray<{ readonly terms: ReadonlyArray<string>; readonly score: number }>,
  config: ExpansionConfig
): Map<string, number> => {
  const original = counts(query)
  const maxQtf = Math.max(1, ...original.values())
  const weights = new Map<string, number>()
  if (config.method === "bo1") {
    const pooled = counts(feedback.flatMap((f) => f.terms))
    const chunks = Math.max(1, view.liveChunks)
    const candidates = [...pooled]
      .map(([term, tf]) => {
        const p = collectionFrequency(view, term) / chunks
        return [term, p === 0 ? 0 : tf * Math.log2((1 + p) / p) + Math.log2(1 + p)] as const
      })
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .slice(0, config.terms)
    const top = candidates[0]?.[1] ?? 0
    for (const [term, qtf] of original) weights.set(term, qtf / maxQtf)
    for (const [term, w] of candidates) if (top > 0 && w > 0) weights.set(term, (weights.get(term) ?? 0) + w / top)
    return weights
  }
  const total = feedback.reduce((sum, f) => sum + f.score, 0)
  const model = new Map<string, number>()
  for (const { score, terms } of feedback) {
    if (terms.length === 0 || total <= 0) continue
    for (const [term, tf] of counts(terms))
      model.set(term, (model.get(term) ?? 0) + (tf / terms.length) * (score / total))
  }
  const top = [...model].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).slice(0, config.terms)
  const mass = top.reduce((sum, [, p]) => sum + p, 0)
  const queryLength = [...original.values()].reduce((a, b) => a + b, 0)
  for (const [term, qtf] of original) weights.set(term, RM3_ORIGINAL * (qtf / queryLength))
  for (const [term, p] of top)
    if (mass > 0) weights.set(term, (weights.get(term) ?? 0) + (1 - RM3_ORIGINAL) * (p / mass))
  return weights
}

/**
 * The weights as a term list for the engine: each term repeated in proportion to its weight, the largest
 * `WEIGHT_STEPS` times, in query order then by weight; a term whose share rounds to nothing is left out, unless it
 * is one of the query's own.
 */
export const weightedTerms = (query: ReadonlyArray<string>, weights: ReadonlyMap<string, number>): Array<string> => {
  const max = Math.max(0, ...weights.values())
  if (max <= 0) return [...query]
  const order = [...new Set(query)]
  for (const [term] of [...weights].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))) {
    if (!order.includes(term)) order.push(term)
  }
  return order.flatMap((term) => {
    const steps = Math.round((WEIGHT_STEPS * (weights.get(term) ?? 0)) / max)
    return Array.from({ length: steps === 0 && query.includes(term) ? 1 : steps }, () => term)
  })
}

/**
 * The query's terms expanded from its best `config.docs` chunks by BM25 (scored as the query itself would be): the
 * chunks' texts are analyzed with `analyze` (the index's analyzer), weighed by `config.method`, and the result is a
 * term list the engine scores as it scores any query. A query with no lexical match is left as it is. With `filter`,
 * the chunks are the best of those it allows.
 */
export const expandQuery = (
  view: IndexView,
  terms: ReadonlyArray<string>,
  params: Bm25Params,
  config: ExpansionConfig,
  analyze: (text: string) => ReadonlyArray<string>,
  filter?: PositionFilter
): Array<string> => {
  if (terms.length === 0) return [...terms]
  const query = { terms, vector: undefined }
  // With a filter, the feedback is the best of the chunks it allows, as the answer will be.
  const first = topChunksOf(
    view,
    scoreQuery(view, query, "lexical", params, FUSION_DEPTH, FusionConfig.default, filter),
    config.docs,
    query
  )
  if (first.length === 0) return [...terms]
  const feedback = first.map((top) => ({ terms: analyze(view.keyOf(top.position).text), score: top.score }))
  return weightedTerms(terms, expansionWeights(view, terms, feedback, config))
}
