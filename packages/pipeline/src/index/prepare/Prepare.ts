/**
 * The per-document stage of indexing: clean → chunk → analyze, the bodies packed for storage (as written) and, for the
 * `local-sha256` model (a pure function), the chunk vectors.
 */
import type { AnalyzerConfig, ChunkerConfig, CleanerConfig } from "@funcpipe/domain/Config"
import { FORMAT_VERSION, keepsOriginals } from "@funcpipe/domain/Manifest"
import { hasMarks, joinMarks, type StemMemo, scanWords, termOf, WordRanges } from "../../analysis/Analyzer.ts"
import { chunkBody } from "../../analysis/Chunker.ts"
import { cleanText } from "../../analysis/Clean.ts"
import { embedTextInto, LOCAL_SHA256_DIMENSIONS } from "../../analysis/Embed.ts"
import { WordTable } from "../../analysis/WordTable.ts"
import { type BodyRef, PackWriter } from "../BodyPack.ts"
import { hashDoc } from "../Sync.ts"

/** A word that is a stop word: it makes no term. */
const STOP = -1

/** How documents are prepared: the index's clean rules, chunker and analyzer (plain values, so workers can take them). */
export interface PrepareSettings {
  readonly cleaner: Pick<CleanerConfig, "rules">
  readonly chunker: Pick<ChunkerConfig, "chunkSize" | "overlap" | "tailPolicy" | "strategy">
  readonly analyzer: Pick<AnalyzerConfig, "stopWords" | "stemmer" | "version">
  /**
   * The index's format version: from 3 on, each document's body is packed as written (the cleaned text is made from
   * it when read); before, the cleaned body is packed. Absent: this build's `FORMAT_VERSION`.
   */
  readonly formatVersion?: number
  /**
   * Embed the chunks with `local-sha256` here: the model is a pure function, so the preparing threads can run it and
   * send vectors instead of chunk texts. For any other model the texts are sent and the caller embeds them.
   */
  readonly localVectors?: boolean
  /**
   * Also make each document's content hash (`hashesOf`), so that the writer need not: a worker pool does it on the
   * preparing thread unless that thread is behind (see `layerWorkers`).
   */
  readonly hashDocs?: boolean
  /**
   * Leave the packs uncompressed (`FlatDocs.rawPacks`), for the caller to compress (`PackWriter.compress`): a worker pool asks
   * for this when the preparing thread is well behind the caller (see `layerWorkers`).
   */
  readonly rawPacks?: boolean
}

/**
 * What a document brings to the stage: its title (searchable in every chunk) and its raw body; for `hashDocs`, also
 * its id and categories.
 */
export interface DocText {
  readonly title: string
  readonly body: string
  readonly docId?: string
  readonly categories?: string | null
  /** Where it was read from: the `markdown` chunker keeps the sections of Markdown files (`.md`) only. */
  readonly source?: string
}

/** Each document's content hash (`hashDoc`); a document without its id or categories is a bug of the caller's. */
export const hashesOf = (docs: ReadonlyArray<DocText>): Array<string> =>
  docs.map(({ body, categories, docId, title }) => {
    if (docId === undefined || categories === undefined)
      throw new Error("a document to hash lacks its id or categories")
    return hashDoc({ docId, title, body, categories })
  })

/**
 * One prepared document: its chunks' spans (code points) and either their texts, to embed, or (with `localVectors`)
 * their `local-sha256` vectors, chunk after chunk; and where its body is in the batch's packs. The arrays are
 * views of the batch's `FlatDocs`.
 */
export interface PreparedDoc {
  readonly starts: Uint32Array
  readonly ends: Uint32Array
  readonly texts: ReadonlyArray<string>
  readonly vectors: Float64Array | undefined
  readonly body: BodyRef
}

/**
 * A batch's documents as a few flat arrays, which is how they cross between threads: structured cloning costs per
 * object, and an object and buffers per document cost about a third as much as preparing them.
 */
export interface FlatDocs {
  /** Per document, its number of chunks. */
  readonly chunkCounts: Uint32Array
  /** Per chunk, its span. */
  readonly starts: Uint32Array
  readonly ends: Uint32Array
  /** Every chunk's text, unless vectors were made here (then none). */
  readonly texts: ReadonlyArray<string>
  /** Every chunk's `local-sha256` vector, with `localVectors`. */
  readonly vectors: Float64Array | undefined
  readonly packs: ReadonlyArray<Uint8Array>
  /** Per document, its pack (an index into `packs`) and its byte range there. */
  readonly bodies: Uint32Array
  /** Per document, its content hash, with `hashDocs`. */
  readonly hashes?: ReadonlyArray<string> | undefined
  /** Whether `packs` are left uncompressed (`rawPacks`). */
  readonly rawPacks?: boolean | undefined
}

/** The documents of a flat batch, as views of its arrays. */
export const docsOf = (flat: FlatDocs): Array<PreparedDoc> => {
  const docs: Array<PreparedDoc> = []
  let chunk = 0
  for (let i = 0; i < flat.chunkCounts.length; i++) {
    const to = chunk + flat.chunkCounts[i]!
    docs.push({
      starts: flat.starts.subarray(chunk, to),
      ends: flat.ends.subarray(chunk, to),
      texts: flat.texts.length === 0 ? [] : flat.texts.slice(chunk, to),
      vectors: flat.vectors?.subarray(chunk * LOCAL_SHA256_DIMENSIONS, to * LOCAL_SHA256_DIMENSIONS),
      body: { pack: flat.packs[flat.bodies[3 * i]!]!, from: flat.bodies[3 * i + 1]!, to: flat.bodies[3 * i + 2]! }
    })
    chunk = to
  }
  return docs
}

/** The buffers of a flat batch, each once, to transfer it. */
export const buffersOf = (flat: FlatDocs): Array<ArrayBuffer> => {
  const buffers = new Set<ArrayBufferLike>([flat.chunkCounts.buffer, flat.starts.buffer, flat.ends.buffer])
  buffers.add(flat.bodies.buffer)
  if (flat.vectors !== undefined) buffers.add(flat.vectors.buffer)
  for (const pack of flat.packs) buffers.add(pack.buffer)
  return [...buffers] as Array<ArrayBuffer>
}

/**
 * A prepared batch. `vocabulary[id]` is the term numbered `id`, and every chunk's terms (title and text, in order) are
 * `termIds`, chunk after chunk, `termCounts[c]` of them for the batch's `c`-th chunk. Batches prepared with one
 * `TermNumbering` share one vocabulary, which grows from batch to batch.
 */
export interface PreparedBatch {
  readonly flat: FlatDocs
  readonly docs: ReadonlyArray<PreparedDoc>
  readonly vocabulary: ReadonlyArray<string>
  readonly termIds: Uint32Array
  readonly termCounts: Uint32Array
}

/**
 * Term numbers shared by the batches of one run on one thread: each distinct word goes through the term rules (stop
 * words, stemming) once, not once per batch, and the batches' vocabulary only grows, so a writer can learn just the
 * new terms of each batch. Past `limit` words it starts over with a new, empty vocabulary (and the next `generation`),
 * so its memory stays bounded on a corpus of any size.
 */
export class TermNumbering {
  generation = 0
  /** Every word seen, with its term number, or `STOP`. */
  words = new WordTable()
  numbers = new Map<string, number>()
  vocabulary: Array<string> = []
  /** The scanner's ranges and its memo of code points, reused from text to text. */
  readonly ranges = new WordRanges()
  /** Stems met so far, across generations (a stem never changes). */
  readonly stems: StemMemo = new Map()
  readonly limit: number
  constructor(limit = 1 << 18) {
    this.limit = limit
  }

  /** Starts a batch: when the vocabulary is full, begins a new one, so a batch's numbers are all of one generation. */
  startBatch(): void {
    if (this.words.size < this.limit) return
    this.generation++
    this.words = new WordTable()
    this.numbers = new Map()
    this.vocabulary = []
  }
}

/**
 * Prepares a batch of documents for the index: each body is cleaned with the index's rules and cut into chunks; each
 * chunk's searchable text (the title, a line break, the chunk) is analyzed into terms, numbered by `numbering` (a new
 * one by default: the batch alone); the bodies are packed by `writer`, which a thread keeps from batch to batch.
 * Deterministic: the same documents and numbering state give the same batch.
 */
export const prepareBatch = (
  docs: ReadonlyArray<DocText>,
  settings: PrepareSettings,
  numbering: TermNumbering = new TermNumbering(),
  writer: PackWriter = new PackWriter()
): PreparedBatch => {
  const analyzer = settings.analyzer as AnalyzerConfig
  numbering.startBatch()
  const { numbers, vocabulary, words } = numbering
  const { ranges, stems } = numbering
  let ids = new Uint32Array(1 << 14)
  let size = 0
  const counts: Array<number> = []
  const bodies: Array<string> = []
  const chunkCounts = new Uint32Array(docs.length)
  const starts: Array<number> = []
  const ends: Array<number> = []
  const texts: Array<string> = []
  /** Appends the term ids of the words `scanWords` found in `lowered` to `ids`. */
  const addTerms = (lowered: string): void => {
    const found = ranges.data
    for (let at = 0; at < ranges.size; at += 3) {
      const from = found[at]!
      const to = found[at + 1]!
      const hash = found[at + 2]!
      let id = words.get(lowered, from, to, hash)
      if (id === undefined) {
        const word = lowered.slice(from, to)
        const term = termOf(word, analyzer, stems)
        id = STOP
        if (term !== undefined) {
          id = numbers.get(term)
          if (id === undefined) {
            id = vocabulary.length
            numbers.set(term, id)
            vocabulary.push(term)
          }
        }
        words.set(word, hash, id)
      }
      if (id === STOP) continue
      if (size === ids.length) {
        const grown = new Uint32Array(ids.length * 2)
        grown.set(ids)
        ids = grown
      }
      ids[size++] = id
    }
  }
  const originals = keepsOriginals(settings.formatVersion ?? FORMAT_VERSION)
  docs.forEach((doc, d) => {
    const body = cleanText(doc.body, settings.cleaner as CleanerConfig)
    bodies.push(originals ? doc.body : body)
    const spans = chunkBody(doc.body, body, settings.chunker as ChunkerConfig, settings.cleaner, doc.source)
    chunkCounts[d] = spans.length
    if (spans.length === 0) return
    // A chunk's searchable text is the title, a line break and the chunk. The break ends any word and is no context
    // for lowercasing either, so the title's terms are found once per document and copied to each chunk.
    const titleFrom = size
    const title = joinMarks(doc.title, analyzer.version).toLowerCase()
    // Whether any chunk has marks to join, asked once of the body rather than of every chunk.
    const marks = analyzer.version === 2 && hasMarks(body)
    scanWords(title, ranges)
    addTerms(title)
    const titleTerms = size - titleFrom
    spans.forEach((span, s) => {
      starts.push(span.start)
      ends.push(span.end)
      texts.push(span.text)
      // The first chunk's title terms are those just found; every later chunk's are a copy of them.
      const before = s === 0 ? titleFrom : size
      if (s > 0 && titleTerms > 0) {
        if (size + titleTerms > ids.length) {
          const grown = new Uint32Array(Math.max(ids.length * 2, size + titleTerms))
          grown.set(ids)
          ids = grown
        }
        ids.copyWithin(size, titleFrom, titleFrom + titleTerms)
        size += titleTerms
      }
      const lowered = (marks ? joinMarks(span.text, analyzer.version) : span.text).toLowerCase()
      scanWords(lowered, ranges)
      addTerms(lowered)
      counts.push(size - before)
    })
  })
  let vectors: Float64Array | undefined
  if (settings.localVectors === true) {
    vectors = new Float64Array(texts.length * LOCAL_SHA256_DIMENSIONS)
    texts.forEach((text, c) => {
      embedTextInto(text, vectors!, c * LOCAL_SHA256_DIMENSIONS)
    })
  }
  const refs = writer.pack(bodies, settings.rawPacks === true)
  const packs: Array<Uint8Array> = []
  const places = new Uint32Array(3 * docs.length)
  refs.forEach((ref, i) => {
    if (packs.at(-1) !== ref.pack) packs.push(ref.pack)
    places[3 * i] = packs.length - 1
    places[3 * i + 1] = ref.from
    places[3 * i + 2] = ref.to
  })
  const flat: FlatDocs = {
    chunkCounts,
    starts: Uint32Array.from(starts),
    ends: Uint32Array.from(ends),
    texts: vectors === undefined ? texts : [],
    vectors,
    packs,
    bodies: places,
    hashes: settings.hashDocs === true ? hashesOf(docs) : undefined,
    rawPacks: settings.rawPacks === true
  }
  return {
    flat,
    docs: docsOf(flat),
    vocabulary,
    termIds: ids.slice(0, size),
    termCounts: Uint32Array.from(counts)
  }
}

/**
 * A prepared batch as it crosses from a preparing thread to the writer: only the terms new since that thread's
 * previous batch, numbered from `firstTerm` in the thread's vocabulary `generation`.
 */
export interface PreparedDelta {
  readonly flat: FlatDocs
  readonly generation: number
  readonly firstTerm: number
  readonly newTerms: ReadonlyArray<string>
  readonly termIds: Uint32Array
  readonly termCounts: Uint32Array
}

/** The sending side, one per thread: prepares batches with one numbering and sends each term once. */
export const deltaPreparer = () => {
  const numbering = new TermNumbering()
  const packs = new PackWriter()
  let generation = 0
  let sent = 0
  return (docs: ReadonlyArray<DocText>, settings: PrepareSettings): PreparedDelta => {
    const batch = prepareBatch(docs, settings, numbering, packs)
    if (numbering.generation !== generation) {
      generation = numbering.generation
      sent = 0
    }
    const firstTerm = sent
    sent = batch.vocabulary.length
    const { flat, termCounts, termIds, vocabulary } = batch
    return { flat, termIds, termCounts, generation, firstTerm, newTerms: vocabulary.slice(firstTerm) }
  }
}

/**
 * The receiving side, one per thread: rebuilds each batch's vocabulary from the deltas, which must be given every
 * delta the thread sends, in order. A new generation starts a new vocabulary array, so a writer that remembers
 * mappings by vocabulary sees it as another vocabulary. Returns `undefined` on a gap in the numbering (a bug).
 */
export const deltaReceiver = () => {
  let generation = 0
  let vocabulary: Array<string> = []
  return (delta: PreparedDelta): PreparedBatch | undefined => {
    if (delta.generation !== generation) {
      generation = delta.generation
      vocabulary = []
    }
    if (delta.firstTerm !== vocabulary.length) return undefined
    for (const term of delta.newTerms) vocabulary.push(term)
    return {
      flat: delta.flat,
      docs: docsOf(delta.flat),
      vocabulary,
      termIds: delta.termIds,
      termCounts: delta.termCounts
    }
  }
}
