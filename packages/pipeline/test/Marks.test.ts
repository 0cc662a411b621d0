/** Analyzer version 2: what people write inside words (`E[x]tract`, soft hyphens) is joined into the word. */

import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { AnalyzerConfig } from "@funcpipe/domain/Config"
import { Effect, FileSystem, Layer, Option } from "effect"
import fc from "fast-check"
import { analyze, joinMarks, joinMarksAligned } from "../src/analysis/Analyzer.ts"
import { highlightSpans } from "../src/analysis/Highlight.ts"
import { prepareBatch } from "../src/index/prepare/Prepare.ts"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { queryIndex } from "../src/programs/QueryIndex.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"
import { docsSource } from "./Sources.ts"

const v1 = new AnalyzerConfig({ stopWords: "english", stemmer: "porter" })
const v2 = new AnalyzerConfig({ stopWords: "english", stemmer: "porter", version: 2 })

describe("analyzer version 2", () => {
  it("joins a bracketed letter inside or before a word, and invisible marks inside one", () => {
    assert.deepStrictEqual(analyze("E[x]tract files, [c]reate an archive", v2), ["extract", "file", "creat", "archiv"])
    assert.deepStrictEqual(analyze("E[x]tract files", v1), ["e", "x", "tract", "file"])
    assert.deepStrictEqual(analyze("extra\u00adordinary co\u200dop", v2), ["extraordinari", "coop"])
  })

  it("leaves indexing and other brackets as they are", () => {
    assert.deepStrictEqual(analyze("a[i] v[0] [link](url) [abcd]ef", v2), analyze("a[i] v[0] [link](url) [abcd]ef", v1))
  })

  it("is version 1 exactly on text without such marks", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 60 }), (text) => {
        const clean = text.replace(/\[|\]|\u00ad|\u200c|\u200d|\u2060/g, "")
        assert.deepStrictEqual(analyze(clean, v2), analyze(clean, v1))
      }),
      { numRuns: 500 }
    )
  })

  it("aligns the joined text with the text as written", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("E", "[x]", "tract", " ", "[c]", "\u00ad", "😀", "a[i]", "]"), { maxLength: 20 }),
        (parts) => {
          const text = parts.join("")
          const joined = joinMarksAligned(text, 2)
          assert.strictEqual(joined.text, joinMarks(text, 2))
          for (let i = 0; i < joined.text.length; i++) assert.strictEqual(text[joined.from[i]!], joined.text[i])
        }
      )
    )
  })

  it("highlights the word as written, brackets included", () => {
    const text = "E[x]tract a file; then [l]ist"
    const terms = analyze("extract list", v2)
    const points = Array.from(text)
    const shown = highlightSpans(text, terms, v2).map(([s, e]) => points.slice(s, e).join(""))
    assert.deepStrictEqual(shown, ["E[x]tract", "[l]ist"])
    assert.deepStrictEqual(highlightSpans(text, analyze("extract list", v1), v1), [])
  })

  it("is the analyzer an index run uses for chunks and titles", () => {
    const batch = prepareBatch([{ title: "E[x]tract", body: "Un[z]ip the archive" }], {
      cleaner: { rules: ["strip"] },
      chunker: { chunkSize: 100 as never, overlap: 0 as never, tailPolicy: "emit_short" },
      analyzer: v2
    })
    const terms = Array.from(batch.termIds, (id) => batch.vocabulary[id])
    assert.deepStrictEqual(terms, ["extract", "unzip", "archiv"])
  })

  it.effect("is what a new index gets, while an index of version 1 keeps its own unless a version is named", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-marks-" })
      const docs = docsSource([["tar", "E[x]tract an archive"]])
      const versionAt = (file: string, options: Parameters<typeof indexPaths>[1]) =>
        Effect.gen(function* () {
          yield* indexPaths(["mem"], options)
          const manifest = Option.getOrThrow(yield* IndexStore.use((s) => s.manifest))
          const { results } = yield* queryIndex("extract", 1)
          return { version: manifest.analyzer.version ?? 1, found: results.length }
        }).pipe(Effect.provide(Layer.mergeAll(layerSqlite(`${dir}/${file}`), docs)))
      // A new index: version 2, so E[x]tract is found as extract.
      assert.deepStrictEqual(yield* versionAt("new.db", { analyzerVersionFromIndex: true }), { version: 2, found: 1 })
      // An index made with version 1 keeps it when no version is named, and refuses another one without a rebuild.
      assert.deepStrictEqual(yield* versionAt("old.db", { analyzer: v1 }), { version: 1, found: 0 })
      assert.deepStrictEqual(yield* versionAt("old.db", { analyzerVersionFromIndex: true }), { version: 1, found: 0 })
      const refused = yield* Effect.flip(versionAt("old.db", { analyzer: v2 }))
      assert.strictEqual(refused._tag, "SettingsChanged")
      assert.include(
        refused.message,
        "stop words english, stemmer porter, version 1 → stop words english, stemmer porter, version 2"
      )
      assert.deepStrictEqual(yield* versionAt("old.db", { analyzer: v2, rebuild: true }), { version: 2, found: 1 })
    }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)))
  )
})
