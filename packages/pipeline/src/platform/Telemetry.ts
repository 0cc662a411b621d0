/**
 * The pipeline's own metrics and spans: the time of a query's stages, the embedding model's calls, tokens, retries and
 * failures, and the decoded-chunk cache. They are Effect metrics, so a server's `GET /metrics` shows them and an OTLP
 * exporter (`layerOtlp`) sends them, from the CLI's commands too.
 *
 * A query's stages run as plain synchronous code inside the engine, so they are timed with the `Clock` as they run
 * (`StageTimes`) and turned into the histogram and child spans of the query's span afterwards: wrapping each in an
 * effect and a span of its own would cost a server more than the stages of a short query.
 */

import { Clock, Context, Effect, Exit, Metric, Option, Tracer } from "effect"

/** A query's stages, in the order they run. */
export type QueryStage = "analyze" | "filter" | "embed" | "expand" | "postings" | "scan" | "fuse" | "fetch" | "display"

const queryStageSeconds = Metric.histogram("funcpipe_query_stage_seconds", {
  description:
    "Time of a query's stages: analyze (clean and analyze the text), filter (resolve --where), embed (the query's " +
    "vector), expand (--expand's first pass and new terms), postings (lexical scoring), scan (vector scoring), fuse " +
    "(hybrid fusion), fetch (the results' chunks), display (their passages)",
  boundaries: Metric.exponentialBoundaries({ start: 0.00005, factor: 2, count: 18 }) // 50 µs … 6.6 s
})

const STAGES: ReadonlyArray<QueryStage> = [
  "analyze",
  "filter",
  "embed",
  "expand",
  "postings",
  "scan",
  "fuse",
  "fetch",
  "display"
]
/** Each stage's histogram, its attribute set once rather than on every query. */
const stageHistograms = new Map(
  STAGES.map((stage) => [stage, Metric.withAttributes(queryStageSeconds, { stage })] as const)
)

/** Each stage's attribute on a query's span. */
const STAGE_KEYS = new Map(STAGES.map((stage) => [stage, `funcpipe.stage.${stage}_ms`] as const))

/** One timed stage: its start and end in the clock's nanoseconds, and whether it gets a span of its own. */
interface Timed {
  readonly stage: QueryStage
  readonly start: bigint
  readonly end: bigint
  readonly span: boolean
}

/** The stage times of one query, read from the `Clock` as the stages run. */
export class StageTimes {
  readonly timed: Array<Timed> = []
  private readonly clock: Clock.Clock
  constructor(clock: Clock.Clock) {
    this.clock = clock
  }

  /** Runs `f` as `stage`, noting its time. */
  readonly time = <A>(stage: QueryStage, f: () => A): A => {
    const start = this.clock.currentTimeNanosUnsafe()
    try {
      return f()
    } finally {
      this.timed.push({ stage, start, end: this.clock.currentTimeNanosUnsafe(), span: true })
    }
  }

  /** Runs the effect `self` as `stage`, noting its time; `span: false` for an effect with spans of its own. */
  readonly timeEffect = <A, E, R>(
    stage: QueryStage,
    self: Effect.Effect<A, E, R>,
    span = true
  ): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      const start = this.clock.currentTimeNanosUnsafe()
      return Effect.ensuring(
        self,
        Effect.sync(() => this.timed.push({ stage, start, end: this.clock.currentTimeNanosUnsafe(), span }))
      )
    })
}

/** A new `StageTimes` on the current `Clock`. */
export const stageTimes: Effect.Effect<StageTimes> = Effect.clockWith((clock) => Effect.succeed(new StageTimes(clock)))

/**
 * From how long a query stage gets a span of its own (where traces are exported), in milliseconds. A span costs a
 * server a few microseconds; a stage of a few microseconds is better told by the query span's attributes, which
 * carry every stage's time. 0: every stage a span (`FUNCPIPE_TRACE_STAGE_MS`).
 */
export const StageSpanMillis = Context.Reference<number>("@funcpipe/pipeline/StageSpanMillis", {
  defaultValue: () => 1
})

/**
 * Records a query's stage times: each in the stage histogram, and, where a tracer that exports is installed and the
 * query's span is sampled, as attributes of that span (`funcpipe.stage.<stage>_ms`, summed over a stage's parts) and,
 * for each synchronous stage that took `StageSpanMillis` or more, a child span with the times it ran.
 */
export const recordStages = (times: StageTimes): Effect.Effect<void> =>
  // One step, read from the fiber: this runs on every query of a server.
  Effect.withFiber((fiber) => {
    for (const { end, stage, start } of times.timed) {
      stageHistograms.get(stage)!.updateUnsafe(Number(end - start) / 1e9, fiber.context)
    }
    const tracer = fiber.getRef(Tracer.Tracer)
    if (tracer === Tracer.nativeTracer) return Effect.void
    const parent = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
    if (parent === undefined || parent._tag !== "Span" || !parent.sampled) return Effect.void
    const millis = new Map<QueryStage, number>()
    for (const { end, stage, start } of times.timed) {
      millis.set(stage, (millis.get(stage) ?? 0) + Number(end - start) / 1e6)
    }
    for (const [stage, ms] of millis) parent.attribute(STAGE_KEYS.get(stage)!, Math.round(ms * 1e3) / 1e3)
    const least = BigInt(Math.round(fiber.getRef(StageSpanMillis) * 1e6))
    for (const { end, span: spanned, stage, start } of times.timed) {
      if (!spanned || end - start < least) continue
      const span = tracer.span({
        name: `query.${stage}`,
        parent: Option.some(parent),
        annotations: Context.empty(),
        links: [],
        startTime: start,
        kind: "internal",
        root: false,
        sampled: true
      })
      span.end(end, Exit.void)
    }
    return Effect.void
  })

export const embeddingRequests = Metric.counter("funcpipe_embedding_requests_total", {
  description: "Requests sent to an embedding service, by model and outcome (ok, retried, failed)"
})
export const embeddingTokens = Metric.counter("funcpipe_embedding_input_tokens_total", {
  description: "Input tokens an embedding service reported using, by model"
})

/** Counts a request to an embedding service: answered, to be tried again, or given up on. */
export const countEmbeddingRequest = (model: string, outcome: "ok" | "retried" | "failed") =>
  Metric.update(Metric.withAttributes(embeddingRequests, { model, outcome }), 1)

/** Counts the input tokens an embedding service reported for a request. */
export const countEmbeddingTokens = (model: string, tokens: number) =>
  Metric.update(Metric.withAttributes(embeddingTokens, { model }), tokens)

const embeddingCacheTexts = Metric.counter("funcpipe_embedding_cache_texts_total", {
  description: "Texts looked up in the embedding cache of an index run, by result (hit, miss)"
})
const chunkCacheLookups = Metric.counter("funcpipe_chunk_cache_lookups_total", {
  description: "Results' chunks looked up among those already decoded, by result (hit, miss)"
})
const embeddingCacheHit = Metric.withAttributes(embeddingCacheTexts, { result: "hit" })
const embeddingCacheMiss = Metric.withAttributes(embeddingCacheTexts, { result: "miss" })
const chunkCacheHit = Metric.withAttributes(chunkCacheLookups, { result: "hit" })
const chunkCacheMiss = Metric.withAttributes(chunkCacheLookups, { result: "miss" })

/** Counts an embedding-cache lookup of `texts` texts, `hits` of them found. */
export const countEmbeddingCache = (texts: number, hits: number) =>
  Effect.andThen(Metric.update(embeddingCacheHit, hits), Metric.update(embeddingCacheMiss, texts - hits))

/** Counts a query's lookups of its results' chunks among the decoded ones. */
export const countChunkCache = (hits: number, misses: number) =>
  Effect.andThen(Metric.update(chunkCacheHit, hits), Metric.update(chunkCacheMiss, misses))

const indexRuns = Metric.counter("funcpipe_index_runs_total", {
  description: "Index runs committed, by kind (update, rebuild, dry_run)"
})
const indexDocuments = Metric.counter("funcpipe_index_run_documents_total", {
  description: "Documents index runs found, by change (added, updated, deleted, unchanged, skipped)"
})
const indexChunksWritten = Metric.counter("funcpipe_index_run_chunks_written_total", {
  description: "Chunks index runs wrote"
})
const indexRunSeconds = Metric.histogram("funcpipe_index_run_duration_seconds", {
  description: "Time of an index run, from its start until its commit",
  boundaries: Metric.exponentialBoundaries({ start: 0.01, factor: 2, count: 16 }) // 10 ms … 5.5 min
})
const indexSize = Metric.gauge("funcpipe_index_run_index_chunks", {
  description: "Chunks in the index after the last index run"
})
const lastRun = Metric.gauge("funcpipe_index_run_last_completed_timestamp_seconds", {
  description: "When the last index run was committed (Unix time), for alerts on an index left stale"
})

/** What an index run did, as its metrics count it. */
export interface RunFigures {
  readonly kind: "update" | "rebuild" | "dry_run"
  readonly added: number
  readonly updated: number
  readonly deleted: number
  readonly unchanged: number
  readonly skipped: number
  readonly chunksWritten: number
  readonly chunks: number
  readonly seconds: number
}

/** Counts an index run, and annotates the current span (the run's) with its figures. */
export const recordRun = (run: RunFigures): Effect.Effect<void> =>
  Effect.gen(function* () {
    yield* Metric.update(Metric.withAttributes(indexRuns, { kind: run.kind }), 1)
    for (const change of ["added", "updated", "deleted", "unchanged", "skipped"] as const) {
      yield* Metric.update(Metric.withAttributes(indexDocuments, { change }), run[change])
    }
    yield* Metric.update(indexChunksWritten, run.chunksWritten)
    yield* Metric.update(indexRunSeconds, run.seconds)
    yield* Metric.update(indexSize, run.chunks)
    if (run.kind !== "dry_run") yield* Metric.update(lastRun, (yield* Clock.currentTimeMillis) / 1000)
    yield* Effect.annotateCurrentSpan({
      "funcpipe.run.kind": run.kind,
      "funcpipe.run.added": run.added,
      "funcpipe.run.updated": run.updated,
      "funcpipe.run.deleted": run.deleted,
      "funcpipe.run.chunks_written": run.chunksWritten
    })
  })

/** The variables that name where to send telemetry: without one of them, nothing is exported (or loaded). */
export const OTLP_ENDPOINT_VARIABLES = [
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
] as const

/** Whether the environment asks for telemetry to be exported. */
export const otlpRequested = (env: Readonly<Record<string, string | undefined>>): boolean =>
  OTLP_ENDPOINT_VARIABLES.some((name) => (env[name] ?? "").trim() !== "") && env["OTEL_SDK_DISABLED"] !== "true"
