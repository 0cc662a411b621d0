/** The self-description of a stored index: what it was built with, when, and how much it holds. */
import { Result, Schema } from "effect"
import { AnalyzerConfig, ChunkerConfig, CleanerConfig } from "./Config.ts"
import { jsonDeeperThan, oneLine } from "./Decode.ts"
import { ModelLabel } from "./Embedding.ts"
import { Rule } from "./Rule.ts"

/**
 * The format version of the indexes this build makes (what `status` shows as "format"). Version 3 keeps each document's text as written (the cleaned
 * text is made from it with the clean rules); version 2 kept only the cleaned text. Both are read and written: an
 * index keeps its version until it is rebuilt.
 */
export const FORMAT_VERSION = 3

/** The oldest format version this build still reads and writes. */
export const OLDEST_FORMAT_VERSION = 2

/** Whether an index of this format version keeps the documents' text as written. */
export const keepsOriginals = (formatVersion: number): boolean => formatVersion >= 3

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
/** Milliseconds since the Unix epoch, as read from the Clock. */
const Millis = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * An approximate vector index (`funcpipe index --ann hnsw`): graphs, each over a group of segments, that propose
 * candidates for vector queries, which are then scored exactly. `m` links a row on the upper layers (twice as many on layer 0),
 * `efConstruction` candidates looked at per insertion. `codes` is the form of the rows a query walks the graphs over
 * (`--vector-codes i8`: a byte a component; absent: float32): how the graphs are read, not how they are built.
 */
export const AnnConfig = Schema.Struct({
  kind: Schema.Literal("hnsw"),
  m: Schema.Int.check(Schema.isBetween({ minimum: 2, maximum: 64 })),
  efConstruction: Schema.Int.check(Schema.isBetween({ minimum: 8, maximum: 2000 })),
  codes: Schema.optional(Schema.Literals(["i8"]))
})
export type AnnConfig = typeof AnnConfig.Type

/** The graph's settings unless asked otherwise. */
export const DEFAULT_ANN: AnnConfig = { kind: "hnsw", m: 16, efConstruction: 100 }

/**
 * How an index stores vectors that its model gives more finely than float32 (`funcpipe index --vector-storage`):
 * `float32` rounds each such component to the nearest float32 (4 bytes; a vector's cosines move by about 1e-7), `exact`
 * keeps every bit (8 bytes). Either way a vector that is exactly float32, or exactly 16-bit fractions (`local-sha256`),
 * is stored as it is, and the exact scan and the graphs score the very values stored.
 */
export const VectorStorage = Schema.Literals(["float32", "exact"])
export type VectorStorage = typeof VectorStorage.Type

/** How a new index stores vectors unless asked otherwise. */
export const DEFAULT_VECTOR_STORAGE: VectorStorage = "float32"

/**
 * Everything needed to decide whether a stored index can answer a query or must be rebuilt: its format version, the
 * embedding model and vector length, the clean rules (queries are cleaned with them too), the chunker settings, and
 * the lexical analyzer (queries are analyzed with it too), and the keep rule that chose its documents.
 */
export class IndexManifest extends Schema.Class<IndexManifest>("domain/IndexManifest")({
  formatVersion: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  model: ModelLabel,
  dimensions: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  /** The fingerprint of the model's settings (absent in indexes built before it was recorded). */
  modelFingerprint: Schema.optional(Schema.String),
  cleaner: CleanerConfig,
  chunker: ChunkerConfig,
  analyzer: AnalyzerConfig,
  /**
   * The keep rule the last run applied, its `Under` paths absolute (absent: every document is kept). It decides
   * which documents the index holds, not how they are chunked or embedded, so a change adds or deletes documents only.
   */
  keep: Schema.optional(Rule),
  /**
   * The label each indexed path's files were read with, by absolute path (`""`: none; absent in indexes made before
   * it was recorded), kept so that adding or removing a path renames no document.
   */
  rootLabels: Schema.optional(Schema.Record(Schema.String, Schema.String)),
  /** The approximate vector index, if the index has one (absent: every vector query scans every vector). */
  ann: Schema.optional(AnnConfig),
  /** How vectors finer than float32 are stored (absent in indexes made before it was a setting: `exact`). */
  vectorStorage: Schema.optional(VectorStorage),
  createdAt: Millis,
  updatedAt: Millis,
  documents: Count,
  chunks: Count
}) {}

/**
 * How deep a manifest's JSON may nest: its keep rule is at most 200 levels (the rule parser's limit), each two JSON
 * levels at most, so a deeper one was not written by FuncPipe.
 */
const MAX_MANIFEST_DEPTH = 512

const decodeManifestJsonText = Schema.decodeUnknownResult(Schema.fromJsonString(IndexManifest))

/** A stored manifest's JSON decoded, or why it cannot be (one line). */
export const decodeManifestJson = (json: string): Result.Result<IndexManifest, string> =>
  jsonDeeperThan(json, MAX_MANIFEST_DEPTH)
    ? Result.fail(`it is nested more than ${MAX_MANIFEST_DEPTH} levels deep`)
    : Result.mapError(decodeManifestJsonText(json), (error) => oneLine(error.message))

/** What a command asks an index to be built with. */
export interface IndexSettings {
  readonly formatVersion: number
  readonly model: ModelLabel
  readonly dimensions: number
  readonly modelFingerprint: string
  readonly cleaner: CleanerConfig
  readonly chunker: ChunkerConfig
  readonly analyzer: AnalyzerConfig
  /** The approximate vector index asked for: a graph's settings, "exact" for none, `undefined` to keep the index's. */
  readonly ann?: AnnConfig | "exact" | undefined
  /** How vectors finer than float32 are stored; `undefined` to keep the index's (`float32` for a new one). */
  readonly vectorStorage?: VectorStorage | undefined
}

/** How an index stores vectors finer than float32: its manifest's setting, `exact` for one made before it existed. */
export const vectorStorageOf = (manifest: { readonly vectorStorage?: VectorStorage | undefined }): VectorStorage =>
  manifest.vectorStorage ?? "exact"
