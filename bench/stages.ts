/** Benchmark of the pure stages clean → chunk → embed: the schema path against the hot path, on a synthetic corpus. */

import { createHash } from "node:crypto"
import { ChunkDraft, ChunkerConfig, CleanDoc, CleanerConfig, DocId, Embedding, Offset, RawDoc } from "@funcpipe/domain"
import {
  chunkDoc,
  chunkSpans,
  cleanDoc,
  cleanText,
  cleanTextGeneric,
  embedChunk,
  embedTextInto,
  LOCAL_SHA256,
  LOCAL_SHA256_DIMENSIONS
} from "@funcpipe/pipeline"
import { syntheticDocs } from "./Corpus.ts"

// Usage: npx node bench/stages.ts [megabytes] [seed]
const megabytes = Number(process.argv[2] ?? 64)
const seed = Number(process.argv[3] ?? 42)
const RUNS = 3

/** A path's result: how many chunks it made and the sum of all their components, to check the paths agree. */
interface Outcome {
  readonly chunks: number
  readonly checksum: number
}

// The stages as they were before the hot paths: regex rules, an array of code points, a `createHash` digest.
const chunkDocBefore = (doc: CleanDoc, config: ChunkerConfig): ReadonlyArray<ChunkDraft> => {
  const points = Array.from(doc.body)
  const { chunkSize, overlap, tailPolicy } = config
  const out: Array<ChunkDraft> = []
  for (let start = 0; start < points.length; start += chunkSize - overlap) {
    const windowEnd = start + chunkSize
    const short = windowEnd > points.length
    if (short && tailPolicy === "drop") break
    const segmentEnd = Math.min(windowEnd, points.length)
    let text = points.slice(start, segmentEnd).join("")
    if (short && tailPolicy === "pad") text += "\u0000".repeat(windowEnd - segmentEnd)
    const end = tailPolicy === "pad" ? windowEnd : segmentEnd
    out.push(new ChunkDraft({ docId: doc.docId, start: Offset.make(start), end: Offset.make(end), text }))
  }
  return out
}
const embedTextBefore = (text: string): Embedding => {
  const digest = createHash("sha256").update(text, "utf8").digest()
  const vector: Array<number> = []
  for (let i = 0; i < 16; i++) vector.push(digest.readUInt16BE(2 * i) / 65535)
  return new Embedding({ vector: vector as [number, ...Array<number>], model: LOCAL_SHA256 })
}

const before = (docs: ReadonlyArray<RawDoc>, config: ChunkerConfig): Outcome => {
  let chunks = 0
  let checksum = 0
  for (const raw of docs) {
    const body = cleanTextGeneric(raw.body)
    const clean = new CleanDoc({ docId: raw.docId, title: raw.title, body, categories: raw.categories })
    for (const draft of chunkDocBefore(clean, config)) {
      const chunk = embedChunk(draft, embedTextBefore(draft.text))
      chunks++
      for (const v of chunk.embedding.vector) checksum += v
    }
  }
  return { chunks, checksum }
}

const schemaPath = (docs: ReadonlyArray<RawDoc>, config: ChunkerConfig): Outcome => {
  let chunks = 0
  let checksum = 0
  for (const raw of docs) {
    for (const draft of chunkDoc(cleanDoc(raw), config)) {
      const chunk = embedChunk(draft)
      chunks++
      for (const v of chunk.embedding.vector) checksum += v
    }
  }
  return { chunks, checksum }
}

let vectors = new Float64Array(0)
const fastPath = (bodies: ReadonlyArray<string>, config: ChunkerConfig): Outcome => {
  let chunks = 0
  for (const body of bodies) {
    for (const span of chunkSpans(cleanText(body), config)) {
      const offset = chunks * LOCAL_SHA256_DIMENSIONS
      if (offset + LOCAL_SHA256_DIMENSIONS > vectors.length) {
        const grown = new Float64Array(Math.max(2 * vectors.length, 1 << 16))
        grown.set(vectors)
        vectors = grown
      }
      embedTextInto(span.text, vectors, offset)
      chunks++
    }
  }
  let checksum = 0
  for (let i = 0; i < chunks * LOCAL_SHA256_DIMENSIONS; i++) checksum += vectors[i]!
  return { chunks, checksum }
}

const started = performance.now()
const bodies: Array<string> = []
const rawDocs: Array<RawDoc> = []
let bytes = 0
let units = 0
for (const doc of syntheticDocs(seed, megabytes * 1e6)) {
  bodies.push(doc.body)
  rawDocs.push(new RawDoc({ docId: DocId.make(doc.id), title: doc.title, body: doc.body, categories: null }))
  bytes += Buffer.byteLength(doc.body, "utf8")
  units += doc.body.length
}
const config = ChunkerConfig.default
// Room for every chunk up front (cleaning only shortens this corpus), so the timed runs allocate no vector storage.
vectors = new Float64Array((Math.ceil(units / config.chunkSize) + bodies.length) * LOCAL_SHA256_DIMENSIONS)
console.log(
  `corpus: ${bodies.length} documents, ${(bytes / 1e6).toFixed(1)} MB of UTF-8 bodies (seed ${seed}, built in ` +
    `${((performance.now() - started) / 1000).toFixed(1)} s); rules ${CleanerConfig.default.rules.join(", ")}; ` +
    `chunks of ${config.chunkSize} code points, overlap ${config.overlap}, ${config.tailPolicy}; local-sha256`
)

const paths = [
  { name: "before (regex clean, Array.from chunk, createHash, schemas)", run: () => before(rawDocs, config) },
  { name: "schema path (cleanDoc → chunkDoc → embedChunk)", run: () => schemaPath(rawDocs, config) },
  { name: "fast path (cleanText → chunkSpans → embedTextInto)", run: () => fastPath(bodies, config) }
]

// Warm up the JIT on a slice of the corpus, so the first timed run is not mostly compilation.
const warm = { raw: rawDocs.slice(0, 500), bodies: bodies.slice(0, 500) }
before(warm.raw, config)
schemaPath(warm.raw, config)
fastPath(warm.bodies, config)

// Runs interleave the paths, so a slow spell of the machine hits them all alike.
const speeds = paths.map(() => [] as Array<number>)
const outcomes: Array<Outcome> = []
for (let run = 0; run < RUNS; run++) {
  paths.forEach((path, i) => {
    const t0 = performance.now()
    const outcome = path.run()
    const seconds = (performance.now() - t0) / 1000
    speeds[i]!.push(bytes / 1e6 / seconds)
    outcomes[i] = outcome
  })
}
const [reference, ...others] = outcomes
for (const [i, outcome] of others.entries()) {
  if (outcome.chunks !== reference!.chunks || outcome.checksum !== reference!.checksum) {
    throw new Error(`${paths[i + 1]!.name} disagrees: ${JSON.stringify(outcome)} vs ${JSON.stringify(reference)}`)
  }
}

const best = (xs: ReadonlyArray<number>) => Math.max(...xs)
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const rows = paths.map((path, i) => [
  path.name,
  best(speeds[i]!).toFixed(1),
  median(speeds[i]!).toFixed(1),
  `${(median(speeds[i]!) / median(speeds[0]!)).toFixed(2)}×`,
  `${(median(speeds[i]!) / median(speeds[1]!)).toFixed(2)}×`
])
const header = ["path", "best MB/s", "median MB/s", "vs before", "vs schema"]
const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)))
const line = (cells: ReadonlyArray<string>) =>
  cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("  ")
console.log(`${RUNS} runs each; ${reference!.chunks} chunks per run, identical on every path (MB = 10^6 bytes)`)
console.log(line(header))
for (const row of rows) console.log(line(row))
