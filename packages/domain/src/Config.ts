/** The cleaner and chunker settings, with every cross-field rule checked at decode. */
import { Schema } from "effect"

/** One cleaning step; rules apply to the body in the order given. */
export const CleanRule = Schema.Literals(["strip", "lower", "upper", "collapse_ws", "replace_newlines"])
export type CleanRule = typeof CleanRule.Type

/** The ordered clean rules. The reference default is `strip, lower, collapse_ws`. */
export class CleanerConfig extends Schema.Class<CleanerConfig>("domain/CleanerConfig")({
  rules: Schema.Array(CleanRule)
}) {
  static readonly default = new CleanerConfig({ rules: ["strip", "lower", "collapse_ws"] })
}

/** Window length in code points. */
export const ChunkSize = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).pipe(Schema.brand("ChunkSize"))
export type ChunkSize = typeof ChunkSize.Type

/** Code points shared by consecutive windows; always below the chunk size. */
export const Overlap = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).pipe(Schema.brand("Overlap"))
export type Overlap = typeof Overlap.Type

/**
 * What to do with a last window shorter than the chunk size: `emit_short` keeps it, `drop` discards it,
 * `pad` fills it with U+0000 up to the chunk size.
 */
export const TailPolicy = Schema.Literals(["emit_short", "drop", "pad"])
export type TailPolicy = typeof TailPolicy.Type

/**
 * Where chunks end: `fixed` cuts every `chunkSize - overlap` code points, exactly as the reference does; `words` ends
 * each chunk at the last space of its window, `sentences` at the last sentence end (else space), and `markdown` also
 * never lets a chunk cross a heading of the document as written. A boundary is looked for in the window's second half;
 * a window without one is cut where it ends. Chunks of the boundary-aware chunkers start at a word.
 */
export const ChunkStrategy = Schema.Literals(["fixed", "words", "sentences", "markdown"])
export type ChunkStrategy = typeof ChunkStrategy.Type

/**
 * Windows of at most `chunkSize` code points advancing by `chunkSize - overlap` (`fixed`, the reference's) or ending at
 * a boundary (`strategy`; absent means `fixed`, as in indexes made before there was a choice). A tail policy other
 * than `emit_short` applies to fixed windows only.
 */
export class ChunkerConfig extends Schema.Class<ChunkerConfig>("domain/ChunkerConfig")(
  Schema.Struct({
    chunkSize: ChunkSize,
    overlap: Overlap,
    tailPolicy: TailPolicy,
    strategy: Schema.optionalKey(ChunkStrategy)
  }).check(
    Schema.makeFilter((c: { readonly chunkSize: number; readonly overlap: number }) =>
      c.overlap < c.chunkSize
        ? undefined
        : { path: ["overlap"], issue: `overlap (${c.overlap}) must be smaller than the chunk size (${c.chunkSize})` }
    ),
    Schema.makeFilter((c: { readonly tailPolicy: TailPolicy; readonly strategy?: ChunkStrategy }) =>
      c.tailPolicy === "emit_short" || (c.strategy ?? "fixed") === "fixed"
        ? undefined
        : {
            path: ["tailPolicy"],
            issue:
              `the tail policy ${c.tailPolicy} applies to fixed windows only (--chunker fixed), ` +
              `not to the ${c.strategy} chunker`
          }
    )
  )
) {
  static readonly default = new ChunkerConfig({
    chunkSize: ChunkSize.make(512),
    overlap: Overlap.make(0),
    tailPolicy: "emit_short"
  })
}

/** Which stop words the lexical analyzer drops: Lucene's 33 English ones, or none. */
export const StopWords = Schema.Literals(["english", "none"])
export type StopWords = typeof StopWords.Type

/** How the lexical analyzer reduces words to stems: the Porter stemmer, or not at all. */
export const Stemmer = Schema.Literals(["porter", "none"])
export type Stemmer = typeof Stemmer.Type

/** How text becomes search terms for lexical retrieval; stored with an index, since terms are stored. */
/**
 * The analyzer's version: 1 splits words at every mark that is not a letter, digit, apostrophe or dot; 2 first joins
 * what people write inside words: a bracketed letter or three before more letters (`E[x]tract`, `[c]reate`), soft
 * hyphens, word joiners and zero-width (non-)joiners. Absent: 1, as in indexes made before there was a choice.
 */
export const AnalyzerVersion = Schema.Literals([1, 2])
export type AnalyzerVersion = typeof AnalyzerVersion.Type

export class AnalyzerConfig extends Schema.Class<AnalyzerConfig>("domain/AnalyzerConfig")({
  stopWords: StopWords,
  stemmer: Stemmer,
  version: Schema.optionalKey(AnalyzerVersion)
}) {
  /** Version 2 for new indexes: it finds what version 1 splits, and scores the test collections the same. */
  static readonly default = new AnalyzerConfig({ stopWords: "english", stemmer: "porter", version: 2 })
}

/** BM25's term-frequency saturation: finite and at least 0. */
export const K1 = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0, { message: "k1 must be 0 or more" })).pipe(
  Schema.brand("K1")
)
export type K1 = typeof K1.Type

/** BM25's length normalisation: between 0 (none) and 1 (full). */
export const B = Schema.Finite.check(
  Schema.isBetween({ minimum: 0, maximum: 1 }, { message: "b must be between 0 and 1" })
).pipe(Schema.brand("B"))
export type B = typeof B.Type

/** Okapi BM25 parameters; query-time only, so changing them needs no re-indexing. Defaults as Anserini's. */
export class Bm25Params extends Schema.Class<Bm25Params>("domain/Bm25Params")({ k1: K1, b: B }) {
  static readonly default = new Bm25Params({ k1: K1.make(0.9), b: B.make(0.4) })
}

/** How a query is answered: by embedding similarity, by BM25 over words, or by fusing both rankings. */
export const RetrievalMode = Schema.Literals(["vector", "lexical", "hybrid"])
export type RetrievalMode = typeof RetrievalMode.Type

/**
 * What a result is: a chunk (the default, every chunk ranked on its own) or a document (`doc`: the best chunk of each
 * document, with how many more of its chunks matched; the top k then counts documents).
 */
export const ResultGroup = Schema.Literals(["chunk", "doc"])
export type ResultGroup = typeof ResultGroup.Type

/**
 * How hybrid mode fuses its two rankings: `linear` adds the min-max normalised scores, weighted; `rrf` (reciprocal
 * rank fusion) adds weighted `1 / (60 + rank)`, using ranks only.
 */
export const FusionMethod = Schema.Literals(["linear", "rrf"])
export type FusionMethod = typeof FusionMethod.Type

/** The weight of the lexical ranking in a fusion, from 0 (the vector ranking alone) to 1 (the lexical one alone). */
export const Alpha = Schema.Finite.check(
  Schema.isBetween({ minimum: 0, maximum: 1 }, { message: "alpha must be between 0 and 1" })
).pipe(Schema.brand("Alpha"))
export type Alpha = typeof Alpha.Type

/**
 * A hybrid fusion. The default, linear with 0.9 on the lexical ranking, was chosen by measured quality: it keeps
 * BM25's nDCG@10 on SciFact and Cranfield while vectors break its ties and add what words miss, where classic RRF
 * (equal weights) lets a weak vector ranking pull good BM25 rankings down. `rrf` with alpha 0.5 is classic RRF.
 */
export class FusionConfig extends Schema.Class<FusionConfig>("domain/FusionConfig")({
  method: FusionMethod,
  alpha: Alpha
}) {
  static readonly default = new FusionConfig({ method: "linear", alpha: Alpha.make(0.9) })
  /** The alpha a method uses unless told: 0.9 for linear, 0.5 (classic, equal weights) for rrf. */
  static readonly defaultAlpha = (method: FusionMethod): Alpha => Alpha.make(method === "linear" ? 0.9 : 0.5)
  /** The fusion a user asks for: the default method unless named, and that method's default alpha unless given. */
  static readonly of = (method: FusionMethod | undefined, alpha: Alpha | undefined): FusionConfig => {
    const chosen = method ?? FusionConfig.default.method
    return new FusionConfig({ method: chosen, alpha: alpha ?? FusionConfig.defaultAlpha(chosen) })
  }
}

/** The largest request body `funcpipe serve` reads unless told otherwise (`--max-body`): 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024
