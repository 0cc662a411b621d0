/** The `local-sha256` embedding: a deterministic 16-dimensional vector from the SHA-256 of the text. */
import { Chunk, type ChunkDraft } from "@funcpipe/domain/Chunk"
import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { createHash } from "node:crypto"

/** The model label stored with every `local-sha256` vector. */
export const LOCAL_SHA256 = ModelLabel.make("local-sha256")

/** Dimensions of a `local-sha256` vector. */
export const LOCAL_SHA256_DIMENSIONS = 16

/**
 * SHA-256 of the UTF-8 bytes, read as 16 big-endian 16-bit words, each divided by 65535. Equal texts get equal
 * vectors and anything else an unrelated one: this model finds exact text matches only.
 */
export const embedText = (text: string): Embedding => {
  const digest = createHash("sha256").update(text, "utf8").digest()
  const vector: Array<number> = []
  for (let i = 0; i < LOCAL_SHA256_DIMENSIONS; i++) vector.push(digest.readUInt16BE(2 * i) / 65535)
  return new Embedding({ vector: vector as [number, ...Array<number>], model: LOCAL_SHA256 })
}

/** Attaches an embedding to a draft; with no embedding given, the chunk's text is embedded by `embedText`. */
export const embedChunk = (draft: ChunkDraft, embedding: Embedding = embedText(draft.text)): Chunk =>
  new Chunk({ docId: draft.docId, start: draft.start, end: draft.end, text: draft.text, embedding })
