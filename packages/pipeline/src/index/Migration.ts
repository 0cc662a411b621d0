/** Migration planning: what a change of settings means for an existing index. */
import type { AnalyzerConfig, ChunkerConfig, CleanerConfig } from "@funcpipe/domain/Config"
import {
  type AnnConfig,
  FORMAT_VERSION,
  type IndexManifest,
  type IndexSettings,
  OLDEST_FORMAT_VERSION,
  vectorStorageOf
} from "@funcpipe/domain/Manifest"

/**
 * The kinds of change, from harmless to fatal: `Compatible` (the index answers as is), `Rechunk` (the clean rules or
 * chunker settings changed, so every document must be cut again), `Reembed` (the model or vector length changed, so
 * every stored vector is useless), `Regraph` (the approximate vector index was added, removed or set otherwise, or the
 * vectors are to be stored otherwise, so every graph and vector must be written again), `IncompatibleFormat` (the file's layout is not this build's).
 */
export type Migration =
  | { readonly _tag: "Compatible" }
  | { readonly _tag: "Rechunk"; readonly changes: ReadonlyArray<string> }
  | { readonly _tag: "Reembed"; readonly changes: ReadonlyArray<string> }
  | { readonly _tag: "Regraph"; readonly changes: ReadonlyArray<string> }
  | { readonly _tag: "IncompatibleFormat"; readonly found: number; readonly supported: number }

const rules = (c: CleanerConfig) => c.rules.join(", ") || "(none)"
const chunking = (c: ChunkerConfig) =>
  `size ${c.chunkSize}, overlap ${c.overlap}, tail ${c.tailPolicy}${c.strategy === undefined || c.strategy === "fixed" ? "" : `, chunker ${c.strategy}`}`
const annText = (ann: AnnConfig | "exact" | undefined) =>
  ann === undefined || ann === "exact" ? "exact" : `hnsw (m ${ann.m}, efConstruction ${ann.efConstruction})`
const analysis = (a: AnalyzerConfig) => `stop words ${a.stopWords}, stemmer ${a.stemmer}, version ${a.version ?? 1}`

/** Classifies the difference between a stored manifest and the settings a command asks for. Pure. */
export const planMigration = (stored: IndexManifest, requested: IndexSettings): Migration => {
  // An older layout this build still writes is kept as it is (`--rebuild` moves the index to the newest).
  const writable =
    stored.formatVersion === requested.formatVersion ||
    (stored.formatVersion >= OLDEST_FORMAT_VERSION && stored.formatVersion < requested.formatVersion)
  if (!writable) {
    return { _tag: "IncompatibleFormat", found: stored.formatVersion, supported: requested.formatVersion }
  }
  const embedding: Array<string> = []
  if (stored.model !== requested.model) embedding.push(`model ${stored.model} → ${requested.model}`)
  if (stored.dimensions !== requested.dimensions) {
    embedding.push(`dimensions ${stored.dimensions} → ${requested.dimensions}`)
  }
  if (
    embedding.length === 0 &&
    stored.modelFingerprint !== undefined &&
    stored.modelFingerprint !== requested.modelFingerprint
  ) {
    embedding.push(`the settings of ${stored.model} (its address or version) changed`)
  }
  const chunks: Array<string> = []
  if (rules(stored.cleaner) !== rules(requested.cleaner)) {
    chunks.push(`clean rules ${rules(stored.cleaner)} → ${rules(requested.cleaner)}`)
  }
  if (chunking(stored.chunker) !== chunking(requested.chunker)) {
    chunks.push(`chunking ${chunking(stored.chunker)} → ${chunking(requested.chunker)}`)
  }
  if (analysis(stored.analyzer) !== analysis(requested.analyzer)) {
    chunks.push(`analyzer ${analysis(stored.analyzer)} → ${analysis(requested.analyzer)}`)
  }
  if (embedding.length > 0) return { _tag: "Reembed", changes: [...embedding, ...chunks] }
  if (chunks.length > 0) return { _tag: "Rechunk", changes: chunks }
  const storedAnn = annText(stored.ann)
  const requestedAnn = requested.ann === undefined ? storedAnn : annText(requested.ann)
  const vectors: Array<string> = []
  if (storedAnn !== requestedAnn) vectors.push(`vector index ${storedAnn} → ${requestedAnn}`)
  const storedStorage = vectorStorageOf(stored)
  const requestedStorage = requested.vectorStorage ?? storedStorage
  if (storedStorage !== requestedStorage) vectors.push(`vector storage ${storedStorage} → ${requestedStorage}`)
  if (vectors.length > 0) return { _tag: "Regraph", changes: vectors }
  return { _tag: "Compatible" }
}

/** One sentence for a user: what changed and what it takes. */
export const describeMigration = (migration: Migration): string => {
  switch (migration._tag) {
    case "Compatible":
      return "the index matches the requested settings"
    case "Rechunk":
      return `the settings changed (${migration.changes.join("; ")}), so every document must be chunked again`
    case "Reembed":
      return `the embedding changed (${migration.changes.join("; ")}), so every chunk must be embedded again`
    case "Regraph":
      return `the ${migration.changes.join(" and the ")} changed, so the index must be built again`
    case "IncompatibleFormat":
      return migration.found > migration.supported
        ? `the index has format version ${migration.found}, newer than this FuncPipe (${migration.supported}); upgrade FuncPipe`
        : `the index has format version ${migration.found}, older than this FuncPipe (${migration.supported}), and must be rebuilt`
  }
}

export { FORMAT_VERSION }
