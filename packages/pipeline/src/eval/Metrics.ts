/** Retrieval quality metrics, as trec_eval computes them, over document rankings and graded judgements. */
import { Schema } from "effect"

/** The judged documents of one query: doc id → grade (1 or more means relevant). */
export type Judgements = ReadonlyMap<string, number>

/**
 * nDCG@k with linear gains (trec_eval's `ndcg_cut`): `Σ grade / log2(rank + 1)` over the first k results, divided by
 * the same sum for the ideal order of the judged documents. 0 when nothing is relevant.
 */
export const ndcgAt = (k: number, ranking: ReadonlyArray<string>, judged: Judgements): number => {
  let dcg = 0
  for (let i = 0; i < Math.min(k, ranking.length); i++) dcg += (judged.get(ranking[i]!) ?? 0) / Math.log2(i + 2)
  const ideal = [...judged.values()].filter((g) => g > 0).sort((a, b) => b - a)
  let idcg = 0
  for (let i = 0; i < Math.min(k, ideal.length); i++) idcg += ideal[i]! / Math.log2(i + 2)
  return idcg === 0 ? 0 : dcg / idcg
}

const isRelevant = (judged: Judgements, docId: string) => (judged.get(docId) ?? 0) > 0
const relevantCount = (judged: Judgements) => [...judged.values()].filter((g) => g > 0).length

/** MRR@k: 1 / the rank of the first relevant result within the first k, or 0. */
export const mrrAt = (k: number, ranking: ReadonlyArray<string>, judged: Judgements): number => {
  for (let i = 0; i < Math.min(k, ranking.length); i++) if (isRelevant(judged, ranking[i]!)) return 1 / (i + 1)
  return 0
}

/** Recall@k: the share of the relevant documents found in the first k results. */
export const recallAt = (k: number, ranking: ReadonlyArray<string>, judged: Judgements): number => {
  const total = relevantCount(judged)
  if (total === 0) return 0
  return ranking.slice(0, k).filter((d) => isRelevant(judged, d)).length / total
}

/** Precision@k: relevant results in the first k, divided by k (even when fewer than k were returned). */
export const precisionAt = (k: number, ranking: ReadonlyArray<string>, judged: Judgements): number =>
  ranking.slice(0, k).filter((d) => isRelevant(judged, d)).length / k

/** Average precision over the whole ranking: the mean of precision at each relevant result, over all relevant ones. */
export const averagePrecision = (ranking: ReadonlyArray<string>, judged: Judgements): number => {
  const total = relevantCount(judged)
  if (total === 0) return 0
  let found = 0
  let sum = 0
  ranking.forEach((docId, i) => {
    if (isRelevant(judged, docId)) sum += ++found / (i + 1)
  })
  return sum / total
}

/** The metrics FuncPipe reports, by their keys in `--json` output. */
export const METRICS = {
  "ndcg@10": (r: ReadonlyArray<string>, j: Judgements) => ndcgAt(10, r, j),
  "mrr@10": (r: ReadonlyArray<string>, j: Judgements) => mrrAt(10, r, j),
  "p@10": (r: ReadonlyArray<string>, j: Judgements) => precisionAt(10, r, j),
  "recall@100": (r: ReadonlyArray<string>, j: Judgements) => recallAt(100, r, j),
  "recall@1000": (r: ReadonlyArray<string>, j: Judgements) => recallAt(1000, r, j),
  map: (r: ReadonlyArray<string>, j: Judgements) => averagePrecision(r, j)
} as const
export type MetricName = keyof typeof METRICS
export type MetricValues = Readonly<Record<MetricName, number>>

/** Every metric for one query. */
export const queryMetrics = (ranking: ReadonlyArray<string>, judged: Judgements): MetricValues =>
  Object.fromEntries(Object.entries(METRICS).map(([name, f]) => [name, f(ranking, judged)])) as unknown as MetricValues

/**
 * The mean of every metric over the judged queries, as `trec_eval -c`: a query with at least one relevant judgement
 * counts (scoring 0 if it has no results), a query without judgements is left out.
 */
export const meanMetrics = (
  rankings: ReadonlyMap<string, ReadonlyArray<string>>,
  qrels: ReadonlyMap<string, Judgements>
): { readonly queries: number; readonly metrics: MetricValues } => {
  const judged = [...qrels.entries()].filter(([, j]) => relevantCount(j) > 0)
  const sums = Object.fromEntries(Object.keys(METRICS).map((name) => [name, 0])) as Record<MetricName, number>
  for (const [queryId, judgements] of judged) {
    const values = queryMetrics(rankings.get(queryId) ?? [], judgements)
    for (const name of Object.keys(METRICS) as Array<MetricName>) sums[name] += values[name]
  }
  const metrics = Object.fromEntries(
    Object.entries(sums).map(([name, sum]) => [name, judged.length === 0 ? 0 : sum / judged.length])
  ) as unknown as MetricValues
  return { queries: judged.length, metrics }
}

/**
 * A saved `funcpipe eval --json` result as a baseline: its metrics by name (each optional, so a result that holds only
 * some still compares on those; other keys are ignored). Decoded from the JSON text.
 */
export const Baseline = Schema.fromJsonString(
  Schema.Struct(
    Object.fromEntries(Object.keys(METRICS).map((name) => [name, Schema.optionalKey(Schema.Finite)])) as {
      readonly [K in MetricName]: Schema.optionalKey<Schema.Finite>
    }
  )
)
export type Baseline = typeof Baseline.Type

/**
 * The metrics of `now` that fell below `baseline` by more than `tolerance`, each as `name now < before` (4 decimals),
 * in metric order; empty when none did. Pure.
 */
export const baselineDrops = (now: MetricValues, baseline: Baseline, tolerance: number): ReadonlyArray<string> =>
  (Object.keys(METRICS) as Array<MetricName>).flatMap((name) => {
    const before = baseline[name]
    return before !== undefined && now[name] < before - tolerance
      ? [`${name} ${now[name].toFixed(4)} < ${before.toFixed(4)}`]
      : []
  })
