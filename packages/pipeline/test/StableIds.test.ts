/**
 * Doc ids stay as they were when paths are added to an index or taken from it: indexing `src`, then `src pages`,
 * renames nothing (it used to turn `foo.md` into `src/foo.md`, so every document was embedded again).
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { IndexManifest } from "@funcpipe/domain/Manifest"
import { Effect, FileSystem, Layer, Option } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { indexPaths } from "../src/programs/IndexRun.ts"
import { indexStatus } from "../src/programs/IndexStatus.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"
import { IndexStore } from "../src/store/IndexStore.ts"
import { layerSqlite } from "../src/store/sqlite/SqliteIndexStore.ts"

describe("doc ids", () => {
  it.effect("stay as they were when a path is added or taken away, and status reads them the same way", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-ids-" })
      yield* fs.makeDirectory(`${dir}/src`)
      yield* fs.makeDirectory(`${dir}/pages`)
      yield* fs.writeFileString(`${dir}/src/foo.md`, "# Foo\nThe foo of the matter.\n")
      yield* fs.writeFileString(`${dir}/src/bar.md`, "# Bar\nA bar to cross.\n")
      yield* fs.writeFileString(`${dir}/pages/baz.md`, "# Baz\nBaz, at last.\n")
      const ids = IndexStore.use((s) => s.documents).pipe(Effect.map((docs) => docs.map((d) => d.docId).sort()))
      const layer = Layer.mergeAll(layerSqlite(`${dir}/index.db`), DocumentSource.layer)
      yield* Effect.gen(function* () {
        yield* indexPaths([`${dir}/src`])
        assert.deepStrictEqual(yield* ids, ["bar.md", "foo.md"])
        // A path added: the documents indexed already keep their ids and are not written again.
        const added = yield* indexPaths([`${dir}/src`, `${dir}/pages`])
        assert.deepStrictEqual(
          [added.plan.added, added.plan.updated, added.plan.unchanged],
          [["pages/baz.md"], [], ["bar.md", "foo.md"]]
        )
        assert.deepStrictEqual(yield* ids, ["bar.md", "foo.md", "pages/baz.md"])
        const status = yield* indexStatus()
        assert.deepStrictEqual(status.changed, [], "status names the files as the index does")
        // The same paths again: nothing changes (the labels are the index's, not those of two fresh paths).
        const again = yield* indexPaths([`${dir}/src`, `${dir}/pages`])
        assert.deepStrictEqual([again.plan.added, again.plan.updated, again.plan.deleted], [[], [], []])
        // A path taken away (with --prune, as the guard asks): the others keep their ids.
        const taken = yield* indexPaths([`${dir}/pages`], { prune: true })
        assert.deepStrictEqual([taken.plan.unchanged, taken.plan.deleted], [["pages/baz.md"], ["bar.md", "foo.md"]])
        const manifest = Option.getOrThrow(yield* IndexStore.use((s) => s.manifest))
        assert.deepStrictEqual(manifest.rootLabels, { [`${dir}/pages`]: "pages" })
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)))
  )

  it.effect("of an index made before they were recorded are kept too: a path added renames nothing", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-ids-" })
      for (const folder of ["a/notes", "b/notes", "c"]) yield* fs.makeDirectory(`${dir}/${folder}`, { recursive: true })
      yield* fs.writeFileString(`${dir}/a/notes/one.md`, "one note\n")
      yield* fs.writeFileString(`${dir}/b/notes/two.md`, "two notes\n")
      yield* fs.writeFileString(`${dir}/c/three.md`, "three notes\n")
      const layer = Layer.mergeAll(layerSqlite(`${dir}/index.db`), DocumentSource.layer)
      yield* Effect.gen(function* () {
        yield* indexPaths([`${dir}/a/notes`, `${dir}/b/notes`])
        // As an older FuncPipe left it: the paths, but not the labels they were read with.
        const store = yield* IndexStore
        yield* store.transaction((w) =>
          Effect.flatMap(w.manifest, (m) => {
            const { rootLabels: _, ...older } = Option.getOrThrow(m)
            return w.putManifest(new IndexManifest(older))
          })
        )
        const added = yield* indexPaths([`${dir}/a/notes`, `${dir}/b/notes`, `${dir}/c`])
        assert.deepStrictEqual(
          [added.plan.added, added.plan.updated, added.plan.unchanged],
          [["c/three.md"], [], ["a/notes/one.md", "b/notes/two.md"]]
        )
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)))
  )

  it.effect("of a new path are longer where a kept path without a label holds a folder of the same name", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-ids-" })
      yield* fs.makeDirectory(`${dir}/docs/api`, { recursive: true })
      yield* fs.makeDirectory(`${dir}/other/api`, { recursive: true })
      yield* fs.writeFileString(`${dir}/docs/api/intro.md`, "the docs' intro\n")
      yield* fs.writeFileString(`${dir}/other/api/intro.md`, "the other intro\n")
      const layer = Layer.mergeAll(layerSqlite(`${dir}/index.db`), DocumentSource.layer)
      yield* Effect.gen(function* () {
        yield* indexPaths([`${dir}/docs`])
        const added = yield* indexPaths([`${dir}/docs`, `${dir}/other/api`])
        // `api/intro.md` is the docs' own: the new path is named `other/api`, and nothing is skipped as read twice.
        assert.deepStrictEqual([added.plan.added, added.plan.unchanged], [["other/api/intro.md"], ["api/intro.md"]])
        assert.deepStrictEqual(added.skipped, [])
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.provide(Layer.mergeAll(Embedder.layerLocalSha256, NodeServices.layer)))
  )
})
