/** Typed access to the Python reference's outputs in `fixtures/golden.json`. */
import { readFileSync } from "node:fs"

export interface GoldenDocFields {
  readonly doc_id: string
  readonly title: string
  readonly abstract: string
  readonly categories: string | null
}
export interface GoldenEnv {
  readonly chunk_size: number
  readonly overlap: number
  readonly tail_policy: "emit_short" | "drop" | "pad"
}
export interface GoldenChunk {
  readonly doc_id: string
  readonly start: number
  readonly end: number
  readonly text: string
  readonly embedding?: ReadonlyArray<number>
  readonly embedding_u16?: ReadonlyArray<number>
}
export interface GoldenDoc {
  readonly raw: GoldenDocFields
  readonly clean: GoldenDocFields
  readonly clean_abstract_codepoints: number
  readonly chunkings: ReadonlyArray<{
    readonly env: GoldenEnv
    readonly spans: ReadonlyArray<readonly [number, number]>
    readonly chunks: ReadonlyArray<GoldenChunk>
  }>
}
export interface GoldenEmbed {
  readonly text: string
  readonly sha256: string
  readonly u16: ReadonlyArray<number>
  readonly vector: ReadonlyArray<number>
  readonly vector_hex: ReadonlyArray<string>
}
export interface GoldenDedup {
  readonly name: string
  readonly env: GoldenEnv
  readonly docs: ReadonlyArray<{ readonly doc_id: string; readonly abstract: string }>
  readonly pre_dedup: ReadonlyArray<GoldenChunk>
  readonly deduped: ReadonlyArray<GoldenChunk>
}
export interface GoldenCsv {
  readonly name: string
  readonly csv: string
  readonly result_filestorage: ReadonlyArray<
    { readonly ok: GoldenDocFields } | { readonly err: { readonly code: string; readonly row: number } }
  >
}
export interface GoldenRanked {
  readonly doc_id: string
  readonly start: number
  readonly end: number
  readonly text: string
  readonly score: number
  readonly score_hex: string
  readonly score_raw_unclamped: number
}
export interface GoldenQuery {
  readonly query_text: string
  readonly query_text_cleaned: string
  readonly query_vector: ReadonlyArray<number>
  readonly query_vector_cleaned: ReadonlyArray<number>
  readonly ranking_all: ReadonlyArray<GoldenRanked>
  readonly top_k: Record<string, ReadonlyArray<readonly [string, number, number, string]>>
}
export interface GoldenSelf {
  readonly text: string
  readonly raw: { readonly value: number }
  readonly clamped: { readonly value: number }
}
export interface Golden {
  readonly docs: ReadonlyArray<GoldenDoc>
  readonly embed_text: ReadonlyArray<GoldenEmbed>
  readonly dedup: ReadonlyArray<GoldenDedup>
  readonly csv: ReadonlyArray<GoldenCsv>
  readonly retrieval: {
    readonly env: GoldenEnv
    readonly corpus_docs: ReadonlyArray<{ readonly doc_id: string; readonly abstract: string }>
    readonly corpus_chunks: ReadonlyArray<GoldenChunk>
    readonly queries: ReadonlyArray<GoldenQuery>
    readonly self_similarity: ReadonlyArray<GoldenSelf>
  }
}

export const golden: Golden = JSON.parse(readFileSync(new URL("./fixtures/golden.json", import.meta.url), "utf8"))

/** Parses a C99 hex float such as `0x1.b3428eca34e79p-1` into the exact float64 it names. */
export const parseHexFloat = (hex: string): number => {
  const match = /^(-?)0x([01])\.([0-9a-f]+)p([+-]\d+)$/.exec(hex)
  if (match === null) throw new Error(`not a hex float: ${hex}`)
  const [, sign, lead, fraction, exponent] = match
  const mantissa = BigInt(`0x${lead}${fraction}`)
  const value = Number(mantissa) * 2 ** (Number(exponent) - 4 * fraction!.length)
  return sign === "-" ? -value : value
}
