/** `funcpipe index`: build or update the persistent index from files. */

import { DEFAULT_ANN } from "@funcpipe/domain/Manifest"
import { PRUNE_FREE_DOCUMENTS, PRUNE_FREE_SHARE } from "@funcpipe/pipeline/index/Sync"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { EmbeddingCache } from "@funcpipe/pipeline/models/EmbeddingCache"
import { writeFileAtomic } from "@funcpipe/pipeline/platform/AtomicFile"
import { embeddingCacheFor, layerIndexStore, showIndex } from "@funcpipe/pipeline/programs/IndexLocation"
import { indexPaths } from "@funcpipe/pipeline/programs/IndexRun"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { MAX_CONVERT_SECONDS, MAX_CONVERTED_FILE_BYTES } from "@funcpipe/pipeline/read/Formats"
import { isPostgresUrl } from "@funcpipe/pipeline/store/postgres/PgUrl"
import { Console, Effect, Layer, Option, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import {
  analyzerFlags,
  analyzerFrom,
  chunkerFrom,
  chunkingFlags,
  indexPath,
  json,
  keep,
  modelFlags,
  modelLayer,
  ruleOption
} from "../flags/Flags.ts"
import { keepHeapNearLiveData } from "../Heap.ts"
import { embedUsageLine, indexReportJson, indexReportLines, skipLines } from "../output/Format.ts"
import { Progress, silentProgress } from "../output/Progress.ts"
import { WatchDryRun, watchPaths } from "./IndexWatch.ts"
import { paths } from "./Search.ts"

/** Prints on stderr what embedding `chunks` cost, for a model that calls a service. */
const printUsage = (chunks: number) =>
  Embedder.use((embedder) =>
    Effect.flatMap(embedder.usage, (usage) => {
      const line = embedUsageLine(chunks, { model: embedder.model, ...usage })
      return line === undefined ? Effect.void : Console.error(line)
    })
  )

/** `--vector-codes float32` on an index in PostgreSQL, whose graphs are always walked over their i8 codes. */
export class CodesFixedInPostgres extends Schema.TaggedError<CodesFixedInPostgres>()("CodesFixedInPostgres", {
  index: Schema.String
}) {
  override get message(): string {
    return (
      "--vector-codes float32 is for SQLite indexes: an index in PostgreSQL walks its graphs over the i8 codes " +
      "stored with them (leave out --vector-codes)"
    )
  }
}

/**
 * Writes the process's metrics (the run's counts and time, its embedding requests and cache) to `file` in Prometheus'
 * text format, atomically: a collector reading it meanwhile sees the last run's or this one's, never half.
 */
const writeMetrics = (file: string) =>
  Effect.gen(function* () {
    const { PrometheusMetrics } = yield* Effect.promise(() => import("effect/observability"))
    yield* writeFileAtomic(file, yield* PrometheusMetrics.format())
  })

export const index = Command.make(
  "index",
  {
    paths,
    index: indexPath,
    ...modelFlags,
    ...chunkingFlags,
    ...analyzerFlags,
    keep,
    dryRun: Flag.Boolean("dry-run").pipe(
      Flag.withDescription("Show what would be added, updated and deleted, and write nothing"),
      Flag.withDefault(false)
    ),
    rebuild: Flag.Boolean("rebuild").pipe(
      Flag.withDescription("Rebuild the whole index, for example after changing the chunking settings"),
      Flag.withDefault(false)
    ),
    ann: Flag.Literals("ann", ["hnsw", "exact"] as const).pipe(
      Flag.withMetavar("KIND"),
      Flag.withDescription(
        "hnsw: also build an approximate vector index (graphs over groups of segments) that vector and hybrid queries use, " +
          "scoring its candidates exactly; exact: none, every vector scanned. Default: the index's own (exact for a " +
          "new one); changing it needs --rebuild (see docs/vectors.md)"
      ),
      Flag.optional
    ),
    vectorCodes: Flag.Literals("vector-codes", ["i8", "float32"] as const).pipe(
      Flag.withMetavar("FORM"),
      Flag.withDescription(
        "For an index with --ann hnsw: the form of the rows a query walks the graphs over. i8: a byte a component (a " +
          "quarter of float32's memory in a server); float32: as the graphs were built. Either way the candidates " +
          "found are scored exactly. Default: the index's own (float32 for new graphs); changing it needs no " +
          "--rebuild, and graphs built from then on store their codes (see docs/vectors.md)"
      ),
      Flag.optional
    ),
    vectorStorage: Flag.Literals("vector-storage", ["float32", "exact"] as const).pipe(
      Flag.withMetavar("HOW"),
      Flag.withDescription(
        "float32: store each vector component the model gives more finely than float32 rounded to it (4 bytes, where " +
          "exact takes 8; a cosine moves by about 1e-7); exact: keep every bit. Vectors that are float32 already, or " +
          "16-bit fractions (local-sha256), are stored as they are either way. Default: the index's own (float32 " +
          "for a new one); changing it needs --rebuild"
      ),
      Flag.optional
    ),
    maxFileMb: Flag.Int("max-file-mb").pipe(
      Flag.withMetavar("MIB"),
      Flag.withSchema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(4096))),
      Flag.withDescription(
        `Skip a PDF, HTML, Word or EPUB file larger than this many MiB (default ${MAX_CONVERTED_FILE_BYTES / 2 ** 20})`
      ),
      Flag.withDefault(MAX_CONVERTED_FILE_BYTES / 2 ** 20)
    ),
    fileSeconds: Flag.Int("file-seconds").pipe(
      Flag.withMetavar("S"),
      Flag.withSchema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(3600))),
      Flag.withDescription(
        `Skip a PDF file that takes longer than this many seconds to read (default ${MAX_CONVERT_SECONDS}; HTML, Word ` +
          "and EPUB files are read in one pass bounded by their size)"
      ),
      Flag.withDefault(MAX_CONVERT_SECONDS)
    ),
    prune: Flag.Boolean("prune").pipe(
      Flag.withDescription(
        `Delete the documents no longer under the paths even when they are many (more than ${PRUNE_FREE_DOCUMENTS} ` +
          `and more than ${PRUNE_FREE_SHARE * 100}% of the index) or the paths differ from those the index was built ` +
          "from; without it such a run changes nothing"
      ),
      Flag.withDefault(false)
    ),
    watch: Flag.Boolean("watch").pipe(
      Flag.withDescription(
        "After the run, watch the paths and index each change (debounced: once they have been quiet for 0.3 s, at " +
          "most 5 s after the first), one line per run, until Ctrl-C"
      ),
      Flag.withDefault(false)
    ),
    metricsFile: Flag.String("metrics-file").pipe(
      Flag.withMetavar("FILE"),
      Flag.withDescription(
        "After each run, write the run's metrics to FILE in Prometheus' text format (for node_exporter's textfile " +
          "collector: a .prom file in its folder), replaced whole each time"
      ),
      Flag.optional
    ),
    json
  },
  Effect.fn("index")(function* (input) {
    // Indexing allocates per batch for the whole run: with V8's default growth the main thread's heap swells to
    // three times its live data. Letting it grow to twice its live data keeps most of what 1.5 times saves (about a
    // fifth less resident memory at peak on a 1 GB corpus) with half its full collections, whose marking threads
    // compete for the two cores.
    keepHeapNearLiveData(100)
    if (Option.isSome(input.vectorCodes) && input.vectorCodes.value === "float32" && isPostgresUrl(input.index)) {
      return yield* new CodesFixedInPostgres({ index: input.index })
    }
    if (input.watch && input.dryRun) return yield* new WatchDryRun()
    const chunker = yield* chunkerFrom(input)
    const progress = input.json ? silentProgress : yield* Progress
    const options = {
      chunker,
      ...analyzerFrom(input),
      ...ruleOption("keep", input.keep),
      rebuild: input.rebuild,
      ...(Option.isSome(input.ann) ? { ann: input.ann.value === "hnsw" ? DEFAULT_ANN : ("exact" as const) } : {}),
      ...(Option.isSome(input.vectorCodes) ? { vectorCodes: input.vectorCodes.value } : {}),
      ...(Option.isSome(input.vectorStorage) ? { vectorStorage: input.vectorStorage.value } : {}),
      prune: input.prune,
      progress: (done: number, total: number, stage: "embedding" | "indexing" | "graphs") =>
        progress.update(
          stage === "embedding"
            ? "embedding documents"
            : stage === "graphs"
              ? "building vector graphs"
              : "indexing documents",
          done,
          total
        )
    }
    const layer = Layer.mergeAll(
      layerIndexStore(input.index),
      modelLayer(input),
      EmbeddingCache.layerSqlite(embeddingCacheFor(input.index)),
      DocumentSource.layerWith({
        maxConvertedFileBytes: input.maxFileMb * 2 ** 20,
        convertSeconds: input.fileSeconds
      })
    )
    const afterRun = Option.match(input.metricsFile, { onNone: () => Effect.void, onSome: writeMetrics })
    if (input.watch) {
      return yield* watchPaths(input.paths, options, showIndex(input.index), input.json, progress, afterRun).pipe(
        Effect.provide(layer)
      )
    }
    const report = yield* indexPaths(input.paths, { ...options, dryRun: input.dryRun }).pipe(
      Effect.ensuring(progress.finish),
      Effect.tap((report) => (report.dryRun ? Effect.void : printUsage(report.chunksWritten))),
      Effect.provide(layer),
      // Ctrl-C: the run's transaction was rolled back and the file closed by now, so the index is as it was.
      Effect.onInterrupt(() => Console.error("funcpipe: interrupted; the index is unchanged"))
    )
    if (!report.dryRun) yield* afterRun
    for (const line of skipLines(report.skipped)) yield* Console.error(line)
    if (input.json) yield* Console.log(indexReportJson(report, showIndex(input.index)))
    else for (const line of indexReportLines(report, showIndex(input.index))) yield* Console.log(line)
  })
).pipe(
  Command.withDescription(
    "Build or update the index: new and changed documents are chunked and embedded, unchanged ones kept, " +
      "and documents no longer under the paths removed"
  ),
  Command.withExamples([
    { command: "funcpipe index sample", description: "Index the sample corpus into .funcpipe/index.db" },
    { command: "funcpipe index notes/ --dry-run", description: "Show what a run would change" },
    { command: "funcpipe index notes/ --watch", description: "Keep the index current as notes/ changes" },
    { command: "funcpipe index notes/ --prune", description: "Mirror notes/ even if that deletes much of the index" },
    { command: "funcpipe index notes/ --chunk-size 256 --rebuild", description: "Rebuild with new chunking settings" },
    {
      command: "funcpipe index papers.csv --keep 'categories ^= astro-ph'",
      description: "Index only astrophysics papers"
    }
  ])
)
