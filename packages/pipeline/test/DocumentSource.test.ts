/** DocumentSource over real files: every kind of input, and every kind of bad input. */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Path, Result, Stream } from "effect"
import { DocumentSource } from "../src/services/DocumentSource.ts"

const TestLayer = DocumentSource.layer.pipe(Layer.provideMerge(NodeServices.layer))

/** Writes `files` (relative path → text or bytes) under a fresh temporary directory and returns its path. */
const tree = Effect.fn("tree")(function*(files: Record<string, string | Uint8Array>) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const root = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-source-" })
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(root, name)
    yield* fs.makeDirectory(path.dirname(file), { recursive: true })
    if (typeof content === "string") yield* fs.writeFileString(file, content)
    else yield* fs.writeFile(file, content)
  }
  return root
})

const readAll = (paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const source = yield* DocumentSource
    return yield* Stream.runCollect(source.read(paths))
  })

const summarize = (
  records: ReadonlyArray<Result.Result<{ readonly doc: { readonly docId: string } }, { readonly message: string }>>
) => records.map((r) => (Result.isSuccess(r) ? r.success.doc.docId : `! ${r.failure.message}`))

describe("DocumentSource", () => {
  it.effect("walks a directory in sorted order with relative doc ids and reads CSV and JSONL inside it", () =>
    Effect.gen(function*() {
      const root = yield* tree({
        "b.md": "# Bee\nbody b",
        "a/z.txt": "plain z",
        "a/y.md": "no heading",
        ".hidden/x.md": "hidden",
        "node_modules/m.md": "dependency",
        "notes.pdf": "ignored kind",
        "rows.csv": "doc_id,title,abstract,categories\nr1,T,A,c\n",
        "lines.jsonl": "{\"id\":\"j1\",\"text\":\"J\"}\n"
      })
      const records = yield* readAll([root])
      assert.deepStrictEqual(summarize(records), ["a/y.md", "a/z.txt", "b.md", "j1", "r1"])
      const bee = records.find((r) => Result.isSuccess(r) && r.success.doc.docId === "b.md")
      assert.strictEqual(bee && Result.isSuccess(bee) ? bee.success.doc.title : "", "Bee")
      assert.strictEqual(bee && Result.isSuccess(bee) ? bee.success.source : "", `${root}/b.md`)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("names a text file given directly by its file name", () =>
    Effect.gen(function*() {
      const root = yield* tree({ "deep/dir/note.md": "x" })
      assert.deepStrictEqual(summarize(yield* readAll([`${root}/deep/dir/note.md`])), ["note.md"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("skips binary and non-UTF-8 files with a reason and goes on", () =>
    Effect.gen(function*() {
      const root = yield* tree({
        "a.md": "fine",
        "b.txt": new Uint8Array([0x68, 0x00, 0x69]),
        "c.txt": new Uint8Array([0x63, 0xff, 0xfe, 0x21]),
        "d.md": "\ufefffine too"
      })
      const records = yield* readAll([root])
      assert.deepStrictEqual(summarize(records), [
        "a.md",
        "! b.txt: a binary file (it contains NUL bytes), skipped",
        "! c.txt: not UTF-8 text, skipped; convert it to UTF-8 to index it",
        "d.md"
      ])
      const bom = records[3]!
      assert.strictEqual(Result.isSuccess(bom) ? bom.success.doc.body : "", "fine too")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("reports a bad CSV row with file and line while good rows flow, quoted newlines included", () =>
    Effect.gen(function*() {
      const root = yield* tree({
        "docs.csv": "title,doc_id,categories,abstract\r\nT,1,c,\"two\r\nlines\"\r\nT,2,c,x,EXTRA\r\nT,3,c,y\r\n"
      })
      const file = `${root}/docs.csv`
      const records = yield* readAll([file])
      assert.deepStrictEqual(summarize(records), ["1", `! ${file}:4: the row has 5 cells but the header has 4`, "3"])
      assert.strictEqual(Result.isSuccess(records[0]!) ? records[0].success.doc.body : "", "two\r\nlines")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with SourceMissing for a path that does not exist", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(readAll(["/definitely/not/here"]))
      assert.strictEqual(error._tag, "SourceMissing")
      assert.strictEqual(error.message, "nothing at /definitely/not/here: check the path")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with NoDocuments for a directory with nothing to read", () =>
    Effect.gen(function*() {
      const root = yield* tree({ "image.png": "not text", ".git/config": "x" })
      const error = yield* Effect.flip(readAll([root]))
      assert.strictEqual(error._tag, "NoDocuments")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with UnsupportedSource for a file of another kind", () =>
    Effect.gen(function*() {
      const root = yield* tree({ "paper.pdf": "%PDF" })
      const error = yield* Effect.flip(readAll([`${root}/paper.pdf`]))
      assert.strictEqual(error._tag, "UnsupportedSource")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("keeps the records already read when a later path is missing", () =>
    Effect.gen(function*() {
      const root = yield* tree({ "a.md": "one" })
      const source = yield* DocumentSource
      const seen: Array<string> = []
      const error = yield* Effect.flip(
        source.read([root, "/missing/too"]).pipe(
          Stream.runForEach((r) => Effect.sync(() => seen.push(Result.isSuccess(r) ? r.success.doc.docId : "bad")))
        )
      )
      assert.deepStrictEqual(seen, ["a.md"])
      assert.strictEqual(error._tag, "SourceMissing")
    }).pipe(Effect.provide(TestLayer)))
})
