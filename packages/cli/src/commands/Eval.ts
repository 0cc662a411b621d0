/** `funcpipe eval`: measure retrieval quality on a test collection. */

import { RetrievalMode } from "@funcpipe/domain/Config"
import { DEFAULT_ANN } from "@funcpipe/domain/Manifest"
import { Baseline, baselineDrops, METRICS, type MetricName } from "@funcpipe/pipeline/eval/Metrics"
import { EmbeddingCache } from "@funcpipe/pipeline/models/EmbeddingCache"
import { DEFAULT_MODEL } from "@funcpipe/pipeline/models/Models"
import { checkOutputFolder, writeFileAtomic } from "@funcpipe/pipeline/platform/AtomicFile"
import { systemReason } from "@funcpipe/pipeline/platform/SystemReason"
import { type Evaluation, evaluateCollection } from "@funcpipe/pipeline/programs/Evaluate"
import { embeddingCacheFor, layerIndexStore } from "@funcpipe/pipeline/programs/IndexLocation"
import { Console, Effect, FileSystem, Layer, Option, Path, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import {
  analyzerFlags,
  analyzerFrom,
  chunkerFrom,
  chunkingFlags,
  json,
  keep,
  modelFlags,
  modelLayer,
  queryOptionsFrom,
  rankingFlags,
  ruleOption
} from "../flags/Flags.ts"
import { skipLines } from "../output/Format.ts"
import { Progress, silentProgress } from "../output/Progress.ts"

/** A metric fell below the baseline by more than the tolerance. */
export class QualityRegression extends Schema.TaggedError<QualityRegression>()("QualityRegression", {
  drops: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `retrieval quality dropped below the baseline: ${this.drops.join("; ")}`
  }
}

/** The baseline file cannot be used. */
export class BaselineInvalid extends Schema.TaggedError<BaselineInvalid>()("BaselineInvalid", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot use the baseline ${this.path}: ${this.reason}; give a file written by funcpipe eval --json`
  }
}

const metricNames = Object.keys(METRICS) as Array<MetricName>

/** How far a metric may fall below the baseline: 0 or more. */
const Tolerance = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0, { message: "the tolerance must be 0 or more" }))

/** The metrics a `--json` result holds, read and checked before the evaluation runs. */
const readBaseline = Effect.fn("readBaseline")(function* (file: string) {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(file).pipe(
    Effect.mapError(
      (error) =>
        new BaselineInvalid({
          path: file,
          reason: error.reason._tag === "NotFound" ? "there is no such file" : systemReason(error)
        })
    )
  )
  const baseline = yield* Schema.decodeUnknownEffect(Baseline)(text).pipe(
    Effect.mapError(() => new BaselineInvalid({ path: file, reason: "it is not a funcpipe eval --json result" }))
  )
  if (metricNames.every((name) => baseline[name] === undefined)) {
    return yield* new BaselineInvalid({ path: file, reason: "it holds none of the metrics" })
  }
  return baseline
})

/** The `--json` form: one object with the metrics by key (`ndcg@10`, …) and what was measured. */
export const evaluationJson = (e: Evaluation, model: string): string =>
  JSON.stringify({
    ...e.metrics,
    collection: e.collection,
    mode: e.mode,
    model,
    queries: e.queries,
    documents: e.index.documents,
    chunks: e.index.chunks,
    ann_recall: e.annRecall,
    seconds: e.elapsedMillis / 1000
  })

/** The modes `--mode all` compares. */
const ALL_MODES: ReadonlyArray<RetrievalMode> = ["lexical", "vector", "hybrid"]

/** `--mode all`: one row per mode, the metrics as columns. */
export const comparisonLines = (model: string, evaluations: ReadonlyArray<Evaluation>): ReadonlyArray<string> => {
  const first = evaluations[0]!
  const widths = metricNames.map((name) => Math.max(name.length, 6))
  return [
    `${first.collection}, model ${model}: ${first.queries} judged queries, ${first.index.documents} documents in ` +
      `${first.index.chunks} chunks`,
    ["mode   ", ...metricNames.map((name, i) => name.padStart(widths[i]!))].join("  "),
    ...evaluations.map((e) =>
      [e.mode.padEnd(7), ...metricNames.map((name, i) => e.metrics[name].toFixed(4).padStart(widths[i]!))].join("  ")
    )
  ]
}

/** A flag that `--mode all` cannot honour. */
export class ModeAllConflict extends Schema.TaggedError<ModeAllConflict>()("ModeAllConflict", {
  flag: Schema.String
}) {
  override get message(): string {
    return `${this.flag} compares or saves one mode: give --mode lexical, vector or hybrid with it, not --mode all`
  }
}

/** The metrics table for people. */
export const evaluationLines = (e: Evaluation): ReadonlyArray<string> => [
  `${e.collection}: ${e.queries} judged queries, ${e.index.documents} documents in ${e.index.chunks} chunks, mode ${e.mode}`,
  `metric        value`,
  ...metricNames.map((name) => `${name.padEnd(12)}  ${e.metrics[name].toFixed(4)}`),
  ...(e.annRecall === null
    ? []
    : [`the approximate vector index finds ${e.annRecall.toFixed(4)} of each query's exact top 10 (recall@10)`])
]

export const evaluate = Command.make(
  "eval",
  {
    collection: Argument.String("collection").pipe(
      Argument.withDescription("A folder with corpus.jsonl, queries.jsonl and qrels.tsv (the BEIR layout)")
    ),
    index: Flag.String("index").pipe(
      Flag.withMetavar("PATH"),
      Flag.withDescription("The index file to build or reuse (default: .funcpipe/eval/<collection folder name>.db)"),
      Flag.optional
    ),
    ...modelFlags,
    ...rankingFlags,
    mode: Flag.Literals("mode", [...RetrievalMode.literals, "all"] as const).pipe(
      Flag.withMetavar("MODE"),
      Flag.withDescription(
        "vector, lexical or hybrid (default: lexical for local-sha256 indexes, hybrid otherwise), or all: run each " +
          "and print one table to compare them"
      ),
      Flag.optional
    ),
    ...chunkingFlags,
    ...analyzerFlags,
    keep,
    rebuild: Flag.Boolean("rebuild").pipe(
      Flag.withDescription("Rebuild the index with the given settings"),
      Flag.withDefault(false)
    ),
    ann: Flag.Literals("ann", ["hnsw", "exact"] as const).pipe(
      Flag.withMetavar("KIND"),
      Flag.withDescription(
        "Build the collection's index with an approximate vector index (hnsw) or without (exact; changing it needs " +
          "--rebuild); with one, the report adds its recall@10 against the exact scan"
      ),
      Flag.optional
    ),
    out: Flag.String("out").pipe(
      Flag.withMetavar("FILE"),
      Flag.withDescription(
        "Also write each query's results and metrics to this file, one JSON object per line (the metrics still go to " +
          "stdout; the file holds its old content or the new, never a mix)"
      ),
      Flag.optional
    ),
    baseline: Flag.String("baseline").pipe(
      Flag.withMetavar("FILE"),
      Flag.withDescription("A --json result to compare with: exit non-zero if a metric drops by more than --tolerance"),
      Flag.optional
    ),
    tolerance: Flag.Finite("tolerance").pipe(
      Flag.withMetavar("NUMBER"),
      Flag.withSchema(Tolerance),
      Flag.withDescription("How far a metric may fall below the baseline (0 or more; default 0.005)"),
      Flag.withDefault(0.005)
    ),
    json
  },
  Effect.fn("eval")(function* (input) {
    const path = yield* Path.Path
    const chunker = yield* chunkerFrom(input)
    // Everything the user names is checked before the evaluation, which can take minutes.
    const baseline = Option.isSome(input.baseline) ? yield* readBaseline(input.baseline.value) : undefined
    if (Option.isSome(input.out)) yield* checkOutputFolder(input.out.value)
    // One index per collection and model, so comparing models does not rebuild one file back and forth.
    const modelPart = input.model === DEFAULT_MODEL ? "" : `.${input.model.replace(/[^A-Za-z0-9._-]/g, "_")}`
    const indexFile = Option.getOrElse(input.index, () =>
      path.join(".funcpipe", "eval", `${path.basename(path.resolve(input.collection))}${modelPart}.db`)
    )
    const progress = input.json ? silentProgress : yield* Progress
    const run = (mode: Option.Option<RetrievalMode>, rebuild: boolean) =>
      evaluateCollection(input.collection, {
        chunker,
        ...analyzerFrom(input),
        ...ruleOption("keep", input.keep),
        rebuild,
        ...(Option.isSome(input.ann) ? { ann: input.ann.value === "hnsw" ? DEFAULT_ANN : ("exact" as const) } : {}),
        ...queryOptionsFrom({ ...input, mode }),
        progress: (stage, done, total) =>
          progress.update(stage === "indexing" ? "indexing documents" : "running queries", done, total)
      }).pipe(
        Effect.ensuring(progress.finish),
        Effect.provide(
          Layer.mergeAll(
            layerIndexStore(indexFile),
            modelLayer(input),
            EmbeddingCache.layerSqlite(embeddingCacheFor(indexFile))
          )
        )
      )
    if (Option.isSome(input.mode) && input.mode.value === "all") {
      if (baseline !== undefined) return yield* new ModeAllConflict({ flag: "--baseline" })
      if (Option.isSome(input.out)) return yield* new ModeAllConflict({ flag: "--out" })
      // The index is built (or rebuilt) once; the other modes reuse it.
      const evaluations: Array<Evaluation> = []
      for (const mode of ALL_MODES)
        evaluations.push(yield* run(Option.some(mode), input.rebuild && evaluations.length === 0))
      for (const line of skipLines(evaluations[0]!.index.skipped)) yield* Console.error(line)
      yield* Console.log(
        input.json
          ? `[${evaluations.map((e) => evaluationJson(e, input.model)).join(",")}]`
          : comparisonLines(input.model, evaluations).join("\n")
      )
      return
    }
    const evaluation = yield* run(input.mode as Option.Option<RetrievalMode>, input.rebuild)
    for (const line of skipLines(evaluation.index.skipped)) yield* Console.error(line)
    if (Option.isSome(input.out)) {
      yield* writeFileAtomic(
        input.out.value,
        evaluation.perQuery
          .map(
            (q) =>
              `${JSON.stringify({
                query_id: q.queryId,
                metrics: q.metrics,
                results: q.results.map((r) => ({ doc_id: r.docId, score: r.score }))
              })}\n`
          )
          .join("")
      )
    }
    yield* Console.log(input.json ? evaluationJson(evaluation, input.model) : evaluationLines(evaluation).join("\n"))
    if (baseline !== undefined) {
      const drops = baselineDrops(evaluation.metrics, baseline, input.tolerance)
      if (drops.length > 0) return yield* new QualityRegression({ drops })
    }
  })
).pipe(
  Command.withDescription(
    "Measure retrieval quality on a test collection (nDCG@10, MRR@10, P@10, recall@100/1000, MAP)"
  ),
  Command.withExamples([
    { command: "funcpipe eval path/to/scifact", description: "Index SciFact and print its metrics" },
    { command: "funcpipe eval path/to/scifact --json > base.json", description: "Save a baseline" },
    { command: "funcpipe eval path/to/scifact --baseline base.json", description: "Fail if quality dropped" }
  ])
)
