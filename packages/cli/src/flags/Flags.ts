/** Flags shared by several commands: the chunking settings, the model and the output switches. */

import {
  Alpha,
  AnalyzerConfig,
  type AnalyzerVersion,
  B,
  Bm25Params,
  ChunkerConfig,
  ChunkSize,
  ChunkStrategy,
  FusionConfig,
  FusionMethod,
  K1,
  Overlap,
  ResultGroup,
  RetrievalMode,
  Stemmer,
  StopWords,
  TailPolicy
} from "@funcpipe/domain/Config"
import { decodeAs } from "@funcpipe/domain/Decode"
import type { Rule } from "@funcpipe/domain/Rule"
import { RuleFromText } from "@funcpipe/domain/RuleParser"
import { MODEL_NAMES } from "@funcpipe/pipeline/models/ModelErrors"
import { DEFAULT_MODEL, layerModel } from "@funcpipe/pipeline/models/Models"
import { DEFAULT_BASE_URL, ENV, ServiceFlags } from "@funcpipe/pipeline/models/openai/OpenAiEmbeddings"
import { defaultExpansion, type ExpansionMethod } from "@funcpipe/pipeline/search/Expansion"
import { DEFAULT_EF_SEARCH } from "@funcpipe/pipeline/search/Hnsw"
import { Config, Effect, Layer, Option, Schema } from "effect"
import { Flag } from "effect/cli"

/** `--chunk-size`, `--overlap`, `--tail`: how bodies are cut into chunks. */
export const chunkingFlags = {
  chunkSize: Flag.Int("chunk-size").pipe(
    Flag.withSchema(ChunkSize),
    Flag.withMetavar("N"),
    Flag.withDescription(
      `Length of each chunk in Unicode code points (at least 1; default ${ChunkerConfig.default.chunkSize})`
    ),
    Flag.withDefault(ChunkerConfig.default.chunkSize)
  ),
  overlap: Flag.Int("overlap").pipe(
    Flag.withSchema(Overlap),
    Flag.withMetavar("N"),
    Flag.withDescription(
      `Code points each chunk shares with the next (0 or more, below --chunk-size; default ${ChunkerConfig.default.overlap})`
    ),
    Flag.withDefault(ChunkerConfig.default.overlap)
  ),
  tail: Flag.Literals("tail", TailPolicy.literals).pipe(
    Flag.withMetavar("POLICY"),
    Flag.withDescription(
      "The last, shorter chunk: emit_short (default) keeps it, drop discards it, pad fills it with U+0000"
    ),
    Flag.withDefault(ChunkerConfig.default.tailPolicy)
  ),
  chunker: Flag.Literals("chunker", ChunkStrategy.literals).pipe(
    Flag.withMetavar("KIND"),
    Flag.withDescription(
      "Where chunks end: fixed (every --chunk-size characters, the default), words (at a space), sentences (at a " +
        "sentence's end, else a space) or markdown (as sentences, and never across a heading)"
    ),
    Flag.withDefault("fixed" as const)
  )
}

/** Where an index lives unless `--index` or `FUNCPIPE_INDEX` says otherwise: under the working directory. */
export const DEFAULT_INDEX = ".funcpipe/index.db"

/** The environment variable naming the index when `--index` is not given (keeps a database password out of argv). */
export const INDEX_ENV = "FUNCPIPE_INDEX"

const decodeChunker = decodeAs(ChunkerConfig, "chunking flags")

/** Checks the flags together (the overlap must be below the chunk size). */
export const chunkerFrom = (flags: {
  readonly chunkSize: number
  readonly overlap: number
  readonly tail: TailPolicy
  readonly chunker: ChunkStrategy
}) =>
  Effect.fromResult(
    decodeChunker({
      chunkSize: flags.chunkSize,
      overlap: flags.overlap,
      tailPolicy: flags.tail,
      // The reference's fixed windows are recorded as before, without a strategy.
      ...(flags.chunker === "fixed" ? {} : { strategy: flags.chunker })
    })
  )

/** `--model NAME`: the embedding model an index is built with (queries then use the index's own). */
export const model = Flag.String("model").pipe(
  Flag.withDescription(`The embedding model: ${MODEL_NAMES} (default ${DEFAULT_MODEL}; see docs/models.md)`),
  Flag.withMetavar("NAME"),
  Flag.withDefault(DEFAULT_MODEL as string)
)

/** `--embed-url URL`, `--dimensions N`: an `openai:` model's service (its key and limits come from the environment). */
export const serviceFlags = {
  embedUrl: Flag.String("embed-url").pipe(
    Flag.withMetavar("URL"),
    Flag.withDescription(
      `For openai: models, the address of the OpenAI-compatible service, up to /embeddings (default $${ENV.url} or ` +
        `${DEFAULT_BASE_URL}; Ollama: http://localhost:11434/v1). The key comes from $${ENV.key} (or, for OpenAI only, $${ENV.openAiKey})`
    ),
    Flag.withMetavar("URL"),
    Flag.optional
  ),
  dimensions: Flag.Int("dimensions").pipe(
    Flag.withMetavar("N"),
    Flag.withSchema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(65536))),
    Flag.withDescription(
      "For openai: models, ask for vectors of this length (OpenAI's text-embedding-3 models can shorten theirs; " +
        `default $${ENV.dimensions} or the model's own length)`
    ),
    Flag.optional
  )
}

/** `--model` and the service flags: the flags of a command that picks its model. */
export const modelFlags = { model, ...serviceFlags }

/** `layer` (a model's embedder) built with the service flags in force; flags left out fall back to the environment. */
export const withServiceFlags =
  (flags: { readonly embedUrl: Option.Option<string>; readonly dimensions: Option.Option<number> }) =>
  <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
    Layer.provide(
      layer,
      Layer.succeed(ServiceFlags, {
        embedUrl: Option.getOrUndefined(flags.embedUrl),
        dimensions: Option.getOrUndefined(flags.dimensions)
      })
    )

/** The embedder of the model the flags name. */
export const modelLayer = (flags: Parameters<typeof withServiceFlags>[0] & { readonly model: string }) =>
  withServiceFlags(flags)(layerModel(flags.model))

/** `--json`: machine-readable output on stdout. */
export const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Print the results as JSON (the format is stable; see docs/cli.md)"),
  Flag.withDefault(false)
)

/** `--out FILE`, optional. */
export const out = Flag.String("out").pipe(
  Flag.withMetavar("FILE"),
  Flag.withDescription(
    "Write to this file (atomically: it holds the old content or the new, never a mix) instead of stdout"
  ),
  Flag.optional
)

/** `--stop-words`, `--stemmer`: how text becomes search terms; stored with the index. */
export const analyzerFlags = {
  stopWords: Flag.Literals("stop-words", StopWords.literals).pipe(
    Flag.withMetavar("WORDS"),
    Flag.withDescription("Words left out of lexical search: english (default; 33 common words) or none"),
    Flag.withDefault(AnalyzerConfig.default.stopWords)
  ),
  stemmer: Flag.Literals("stemmer", Stemmer.literals).pipe(
    Flag.withMetavar("STEMMER"),
    Flag.withDescription(
      "Reduce English words to stems (porter, the default: 'indexing' and 'indexed' both become 'index') or not (none)"
    ),
    Flag.withDefault(AnalyzerConfig.default.stemmer)
  ),
  analyzerVersion: Flag.Literals("analyzer-version", ["1", "2"] as const).pipe(
    Flag.withMetavar("N"),
    Flag.withDescription(
      `1 splits words at brackets and invisible marks; 2 joins what people write inside words, so E[x]tract is ` +
        `found as extract (default: an existing index's own, ${AnalyzerConfig.default.version ?? 1} for a new one)`
    ),
    Flag.optional
  )
}

/**
 * The analyzer the flags name (version 1 recorded as before, without a version), and whether they left its version to
 * the index: an existing index then keeps its own, and a new one gets the default.
 */
export const analyzerFrom = (flags: {
  readonly stopWords: StopWords
  readonly stemmer: Stemmer
  readonly analyzerVersion: Option.Option<"1" | "2">
}) => {
  const version = Option.match(flags.analyzerVersion, {
    onNone: () => AnalyzerConfig.default.version,
    onSome: (v) => Number(v) as AnalyzerVersion
  })
  return {
    analyzer: new AnalyzerConfig({
      stopWords: flags.stopWords,
      stemmer: flags.stemmer,
      ...(version === undefined || version === 1 ? {} : { version })
    }),
    analyzerVersionFromIndex: Option.isNone(flags.analyzerVersion)
  }
}

/** `--mode`, `--k1`, `--b`: how documents are ranked for a query. */
export const rankingFlags = {
  mode: Flag.Literals("mode", RetrievalMode.literals).pipe(
    Flag.withMetavar("MODE"),
    Flag.withDescription(
      "vector (embedding similarity), lexical (BM25 over words) or hybrid (both rankings fused); default: lexical for " +
        "local-sha256 indexes, hybrid otherwise"
    ),
    Flag.optional
  ),
  k1: Flag.Finite("k1").pipe(
    Flag.withSchema(K1),
    Flag.withMetavar("NUMBER"),
    Flag.withDescription(`BM25 term-frequency saturation (0 or more; default ${Bm25Params.default.k1})`),
    Flag.withDefault(Bm25Params.default.k1)
  ),
  b: Flag.Finite("b").pipe(
    Flag.withSchema(B),
    Flag.withMetavar("NUMBER"),
    Flag.withDescription(`BM25 length normalisation (0 to 1; default ${Bm25Params.default.b})`),
    Flag.withDefault(Bm25Params.default.b)
  ),
  fusion: Flag.Literals("fusion", FusionMethod.literals).pipe(
    Flag.withMetavar("METHOD"),
    Flag.withDescription(
      `How hybrid mode fuses the lexical and vector rankings: linear (normalised scores, weighted; the default) or rrf ` +
        `(reciprocal rank fusion, weighted)`
    ),
    Flag.withDefault(FusionConfig.default.method)
  ),
  expand: Flag.Literals("expand", ["bo1", "rm3"] as const).pipe(
    Flag.withMetavar("MODEL"),
    Flag.withDescription(
      "Expand the query with the terms of its 3 best first-pass chunks (pseudo-relevance feedback): bo1 (Bose-Einstein " +
        "divergence from randomness) or rm3 (relevance model); off by default. Helps recall on some collections"
    ),
    Flag.optional
  ),
  alpha: Flag.Finite("alpha").pipe(
    Flag.withSchema(Alpha),
    Flag.withMetavar("NUMBER"),
    Flag.withDescription(
      `The lexical ranking's weight in hybrid mode, 0 to 1 (the vector ranking gets the rest; default ` +
        `${FusionConfig.defaultAlpha("linear")} for linear, ${FusionConfig.defaultAlpha("rrf")} for rrf)`
    ),
    Flag.optional
  )
}

/** `--exact`, `--ann-candidates`: how a query uses an index's approximate vector index (`index --ann hnsw`). */
export const annFlags = {
  exact: Flag.Boolean("exact").pipe(
    Flag.withDescription("Score every vector, even where the index has an approximate vector index (index --ann hnsw)"),
    Flag.withDefault(false)
  ),
  annCandidates: Flag.Int("ann-candidates").pipe(
    Flag.withSchema(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000 }))),
    Flag.withMetavar("N"),
    Flag.withDescription(
      `With an approximate vector index: walk its graphs for N candidates per graph, all scored exactly (efSearch; ` +
        `default ${DEFAULT_EF_SEARCH}). Without it, one query walks the graphs of an index whose graphs were built ` +
        "with --vector-codes i8 (it reads only what the walk reaches) and scans every vector of any other (the " +
        "quicker there for a process that asks once)"
    ),
    Flag.optional
  )
}

/** The ranking flags, `--explain` and `--group`: how a query is answered and shown. */
export const queryFlags = {
  ...rankingFlags,
  explain: Flag.Boolean("explain").pipe(
    Flag.withDescription("Show each result's score breakdown: BM25 per term, vector score, fused ranks"),
    Flag.withDefault(false)
  ),
  group: Flag.Literals("group", ResultGroup.literals).pipe(
    Flag.withMetavar("GROUP"),
    Flag.withDescription(
      "chunk (each chunk ranked on its own; the default) or doc (one result per document: its best chunk, and how " +
        "many more of its chunks matched; --top-k then counts documents)"
    ),
    Flag.withDefault("chunk" as const)
  ),
  raw: Flag.Boolean("raw").pipe(
    Flag.withDescription(
      "Show each result's cleaned text, as it was indexed (lower-cased, spaces collapsed), instead of the passage " +
        "as the document has it"
    ),
    Flag.withDefault(false)
  )
}

/** The query options the flags name (`explain` is off when the command has no `--explain`). */
export const queryOptionsFrom = (flags: {
  readonly mode: Option.Option<RetrievalMode>
  readonly explain?: boolean
  readonly group?: ResultGroup
  readonly k1: K1
  readonly b: B
  readonly fusion: FusionMethod
  readonly alpha: Option.Option<Alpha>
  readonly expand: Option.Option<ExpansionMethod>
  readonly exact?: boolean
  readonly annCandidates?: Option.Option<number>
}) => ({
  ...(flags.exact === true ? { exact: true } : {}),
  ...(flags.annCandidates !== undefined && Option.isSome(flags.annCandidates)
    ? { annCandidates: flags.annCandidates.value }
    : {}),
  ...(Option.isSome(flags.expand) ? { expand: defaultExpansion(flags.expand.value) } : {}),
  ...(Option.isSome(flags.mode) ? { mode: flags.mode.value } : {}),
  explain: flags.explain === true,
  ...(flags.group === "doc" ? { group: flags.group } : {}),
  bm25: new Bm25Params({ k1: flags.k1, b: flags.b }),
  fusion: FusionConfig.of(flags.fusion, Option.getOrUndefined(flags.alpha))
})

/** `--keep RULE`: which documents enter the index (or the in-memory search, or the chunk export). */
export const keep = Flag.String("keep").pipe(
  Flag.withSchema(RuleFromText),
  Flag.withDescription(
    "Take only the documents this rule keeps, e.g. 'categories = astro-ph and not title ^= Erratum' or " +
      "'source under notes/2024'; the others are counted and left out (see docs/cli.md, Rules)"
  ),
  Flag.withMetavar("RULE"),
  Flag.optional
)

/** `--where RULE`: which documents a query searches. */
export const where = Flag.String("where").pipe(
  Flag.withSchema(RuleFromText),
  Flag.withDescription(
    "Search only the chunks of documents this rule keeps, e.g. 'categories = cs.AI' or 'source under notes'; the " +
      "top k is exact, ranked as without the rule (see docs/cli.md, Rules)"
  ),
  Flag.withMetavar("RULE"),
  Flag.optional
)

/** `{ [name]: rule }` when the flag was given, else nothing, to spread into a program's options. */
export const ruleOption = <const K extends "keep" | "where">(name: K, flag: Option.Option<Rule>) =>
  (Option.isSome(flag) ? { [name]: flag.value } : {}) as { readonly [P in K]?: Rule }

/** `--index PATH`: where the index file lives. */
export const indexPath = Flag.String("index").pipe(
  Flag.withMetavar("PATH|URL"),
  Flag.withDescription(
    "The index to use: a SQLite file, or a PostgreSQL database as postgres://user:password@host:port/db?schema=NAME " +
      `(default $${INDEX_ENV}, else ${DEFAULT_INDEX})`
  ),
  Flag.withFallbackConfig(Config.String(INDEX_ENV)),
  Flag.withDefault(DEFAULT_INDEX)
)

export type { Option }
