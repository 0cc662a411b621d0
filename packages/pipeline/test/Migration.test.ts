/** planMigration and planSync: pure decisions about an existing index. */
import { assert, describe, it } from "@effect/vitest"
import { AnalyzerConfig, ChunkerConfig, ChunkSize, CleanerConfig, Overlap } from "@funcpipe/domain/Config"
import { ModelLabel } from "@funcpipe/domain/Embedding"
import { FORMAT_VERSION, IndexManifest } from "@funcpipe/domain/Manifest"
import { describeMigration, planMigration } from "../src/index/Migration.ts"
import { planSync } from "../src/index/Sync.ts"

const stored = new IndexManifest({
  formatVersion: FORMAT_VERSION,
  model: ModelLabel.make("local-sha256"),
  dimensions: 16,
  cleaner: CleanerConfig.default,
  chunker: ChunkerConfig.default,
  analyzer: AnalyzerConfig.default,
  createdAt: 0,
  updatedAt: 0,
  documents: 3,
  chunks: 9
})
const same = {
  formatVersion: FORMAT_VERSION,
  model: stored.model,
  dimensions: 16,
  modelFingerprint: "f1",
  cleaner: stored.cleaner,
  chunker: stored.chunker,
  analyzer: stored.analyzer
}

describe("planMigration", () => {
  it("finds nothing to do for the same settings", () => {
    assert.deepStrictEqual(planMigration(stored, same), { _tag: "Compatible" })
  })
  it("asks to build again when the vector storage changes; an index made before the setting stores exactly", () => {
    // The stored manifest has no setting: it was made storing every bit.
    assert.deepStrictEqual(planMigration(stored, { ...same, vectorStorage: "exact" }), { _tag: "Compatible" })
    const plan = planMigration(stored, { ...same, vectorStorage: "float32" })
    assert.strictEqual(plan._tag, "Regraph")
    assert.include(describeMigration(plan), "vector storage exact → float32 changed")
    const float32 = new IndexManifest({ ...stored, vectorStorage: "float32" })
    assert.deepStrictEqual(planMigration(float32, same), { _tag: "Compatible" })
    const both = planMigration(float32, {
      ...same,
      vectorStorage: "exact",
      ann: { kind: "hnsw", m: 16, efConstruction: 100 }
    })
    assert.include(
      describeMigration(both),
      "vector index exact → hnsw (m 16, efConstruction 100) and the vector storage"
    )
  })
  it("asks to re-chunk when the clean rules or chunker change", () => {
    const chunker = new ChunkerConfig({ chunkSize: ChunkSize.make(100), overlap: Overlap.make(10), tailPolicy: "drop" })
    const plan = planMigration(stored, { ...same, chunker, cleaner: new CleanerConfig({ rules: ["strip"] }) })
    assert.strictEqual(plan._tag, "Rechunk")
    assert.include(describeMigration(plan), "clean rules strip, lower, collapse_ws → strip")
    assert.include(describeMigration(plan), "size 512, overlap 0, tail emit_short → size 100, overlap 10, tail drop")
  })
  it("asks to re-chunk when the chunker changes where chunks end", () => {
    const chunker = new ChunkerConfig({ ...ChunkerConfig.default, strategy: "markdown" })
    const plan = planMigration(stored, { ...same, chunker })
    assert.strictEqual(plan._tag, "Rechunk")
    assert.include(describeMigration(plan), "tail emit_short → size 512, overlap 0, tail emit_short, chunker markdown")
    // An index made before the choice existed has fixed windows, as `fixed` asks.
    const fixed = new ChunkerConfig({ ...ChunkerConfig.default, strategy: "fixed" })
    assert.deepStrictEqual(planMigration(stored, { ...same, chunker: fixed }), { _tag: "Compatible" })
  })
  it("asks to re-index when the analyzer changes", () => {
    const plan = planMigration(stored, {
      ...same,
      analyzer: new AnalyzerConfig({ stopWords: "none", stemmer: "porter" })
    })
    assert.strictEqual(plan._tag, "Rechunk")
    assert.include(
      describeMigration(plan),
      "analyzer stop words english, stemmer porter, version 2 → stop words none, stemmer porter, version 1"
    )
  })
  it("asks to re-embed when the model or dimensions change, even if chunking changed too", () => {
    const plan = planMigration(stored, { ...same, model: ModelLabel.make("other"), dimensions: 384 })
    assert.strictEqual(plan._tag, "Reembed")
    assert.include(describeMigration(plan), "model local-sha256 → other; dimensions 16 → 384")
  })
  it("asks to re-embed when the same model's settings changed, and trusts an index that predates fingerprints", () => {
    const fingerprinted = new IndexManifest({ ...stored, modelFingerprint: "f1" })
    assert.deepStrictEqual(planMigration(fingerprinted, same), { _tag: "Compatible" })
    const plan = planMigration(fingerprinted, { ...same, modelFingerprint: "f2" })
    assert.strictEqual(plan._tag, "Reembed")
    assert.include(describeMigration(plan), "the settings of local-sha256 (its address or version) changed")
    assert.deepStrictEqual(planMigration(stored, { ...same, modelFingerprint: "f2" }), { _tag: "Compatible" })
  })
  it("refuses a newer format version, and one too old to write", () => {
    const newer = planMigration(new IndexManifest({ ...stored, formatVersion: FORMAT_VERSION + 1 }), same)
    assert.deepStrictEqual(newer, { _tag: "IncompatibleFormat", found: FORMAT_VERSION + 1, supported: FORMAT_VERSION })
    assert.include(describeMigration(newer), "upgrade FuncPipe")
    const older = planMigration(new IndexManifest({ ...stored, formatVersion: 1 }), same)
    assert.strictEqual(older._tag, "IncompatibleFormat")
    assert.include(describeMigration(older), "must be rebuilt")
  })
  it("keeps writing an index of format 2, which holds only cleaned text", () => {
    assert.deepStrictEqual(planMigration(new IndexManifest({ ...stored, formatVersion: 2 }), same), {
      _tag: "Compatible"
    })
  })
})

describe("planSync", () => {
  const entry = (docId: string, hash: string, source = "f") => ({ docId, hash, source })
  it("sorts documents into added, updated, unchanged and deleted", () => {
    const plan = planSync(
      [entry("a", "1"), entry("b", "2"), entry("c", "3"), entry("m", "4", "old-file")],
      [entry("d", "9"), entry("b", "2"), entry("a", "7"), entry("m", "4", "new-file")]
    )
    assert.deepStrictEqual(plan, { added: ["d"], updated: ["a", "m"], unchanged: ["b"], deleted: ["c"] })
  })
})
