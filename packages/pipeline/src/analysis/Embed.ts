/** The `local-sha256` embedding: a deterministic 16-dimensional vector from the SHA-256 of the text. */

import { hash } from "node:crypto"
import { Chunk, type ChunkDraft } from "@funcpipe/domain/Chunk"
import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"

/** The model label stored with every `local-sha256` vector. */
export const LOCAL_SHA256 = ModelLabel.make("local-sha256")

/** Dimensions of a `local-sha256` vector. */
export const LOCAL_SHA256_DIMENSIONS = 16

/**
 * Writes the `local-sha256` vector of `text` (the components `embedText` gives, in order) to
 * `out[offset] … out[offset + 15]`, allocating no array and no schema value: the hot-path form of `embedText`.
 * An offset that is not an integer, or a range that does not fit in `out`, is a bug in the caller: it throws a
 * `RangeError`.
 */
export const embedTextInto = (text: string, out: Float64Array, offset: number): void => {
  if (!(Number.isInteger(offset) && offset >= 0 && offset + LOCAL_SHA256_DIMENSIONS <= out.length)) {
    throw new RangeError(`no room for ${LOCAL_SHA256_DIMENSIONS} components at offset ${offset} of ${out.length}`)
  }
  // The one-shot hash of a string hashes its UTF-8 bytes; as a "binary" (latin1) string the digest costs no Buffer.
  const digest = hash("sha256", text, "binary")
  for (let i = 0; i < LOCAL_SHA256_DIMENSIONS; i++) {
    out[offset + i] = ((digest.charCodeAt(2 * i) << 8) | digest.charCodeAt(2 * i + 1)) / 65535
  }
}

/**
 * SHA-256 of the UTF-8 bytes, read as 16 big-endian 16-bit words, each divided by 65535. Equal texts get equal
 * vectors and anything else an unrelated one: this model finds exact text matches only.
 */
export const embedText = (text: string): Embedding => {
  const vector = new Float64Array(LOCAL_SHA256_DIMENSIONS)
  embedTextInto(text, vector, 0)
  // Every component is a 16-bit word over 65535, finite by construction, and the label is a constant: the schema's
  // checks cannot fail, and skipping them makes this three times cheaper on the indexing path.
  return new Embedding(
    { vector: Array.from(vector) as [number, ...Array<number>], model: LOCAL_SHA256 },
    { disableChecks: true }
  )
}

/** Attaches an embedding to a draft; with no embedding given, the chunk's text is embedded by `embedText`. */
export const embedChunk = (draft: ChunkDraft, embedding: Embedding = embedText(draft.text)): Chunk =>
  new Chunk({ docId: draft.docId, start: draft.start, end: draft.end, text: draft.text, embedding })
