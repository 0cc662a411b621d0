/** DocumentSource over real files: every kind of input, and every kind of bad input. */
import { execFileSync } from "node:child_process"
import { createWriteStream, readdirSync } from "node:fs"
import { createServer } from "node:net"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Path, Result, Stream } from "effect"
import { DocumentSource } from "../src/read/DocumentSource.ts"

const TestLayer = DocumentSource.layer.pipe(Layer.provideMerge(NodeServices.layer))

/** Writes `files` (relative path → text or bytes) under a fresh temporary directory and returns its path. */
const tree = Effect.fn("tree")(function* (files: Record<string, string | Uint8Array>) {
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

/** The same service reading CSV and JSONL 7 bytes at a time, and text files of at most 16 bytes. */
const TinyLayer = DocumentSource.layerWith({ chunkBytes: 7, maxTextFileBytes: 16 }).pipe(
  Layer.provideMerge(NodeServices.layer)
)

const readAll = (paths: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const source = yield* DocumentSource
    return yield* Stream.runCollect(source.read(paths))
  })

const summarize = (
  records: ReadonlyArray<Result.Result<{ readonly doc: { readonly docId: string } }, { readonly message: string }>>
) => records.map((r) => (Result.isSuccess(r) ? r.success.doc.docId : `! ${r.failure.message}`))

describe("DocumentSource", () => {
  it.effect("walks a directory in sorted order with relative doc ids and reads CSV and JSONL inside it", () =>
    Effect.gen(function* () {
      const root = yield* tree({
        "b.md": "# Bee\nbody b",
        "a/z.txt": "plain z",
        "a/y.md": "no heading",
        ".hidden/x.md": "hidden",
        "node_modules/m.md": "dependency",
        "notes.png": "ignored kind",
        "rows.csv": "doc_id,title,abstract,categories\nr1,T,A,c\n",
        "lines.jsonl": '{"id":"j1","text":"J"}\n'
      })
      const records = yield* readAll([root])
      assert.deepStrictEqual(summarize(records), ["a/y.md", "a/z.txt", "b.md", "j1", "r1"])
      const bee = records.find((r) => Result.isSuccess(r) && r.success.doc.docId === "b.md")
      assert.strictEqual(bee && Result.isSuccess(bee) ? bee.success.doc.title : "", "Bee")
      assert.strictEqual(bee && Result.isSuccess(bee) ? bee.success.source : "", `${root}/b.md`)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("names a text file given directly by its file name", () =>
    Effect.gen(function* () {
      const root = yield* tree({ "deep/dir/note.md": "x" })
      assert.deepStrictEqual(summarize(yield* readAll([`${root}/deep/dir/note.md`])), ["note.md"])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("skips binary and non-UTF-8 files with a reason and goes on", () =>
    Effect.gen(function* () {
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
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("reports a bad CSV row with file and line while good rows flow, quoted newlines included", () =>
    Effect.gen(function* () {
      const root = yield* tree({
        "docs.csv": 'title,doc_id,categories,abstract\r\nT,1,c,"two\r\nlines"\r\nT,2,c,x,EXTRA\r\nT,3,c,y\r\n'
      })
      const file = `${root}/docs.csv`
      const records = yield* readAll([file])
      assert.deepStrictEqual(summarize(records), ["1", `! ${file}:4: the row has 5 cells but the header has 4`, "3"])
      assert.strictEqual(Result.isSuccess(records[0]!) ? records[0].success.doc.body : "", "two\r\nlines")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("reads CSV and JSONL 7 bytes at a time into the records of a whole read", () =>
    Effect.gen(function* () {
      const root = yield* tree({
        "a.jsonl":
          '\ufeff{"id":"j1","text":"café 😀"}\r\n\r\n' +
          '{"id":2,"body":"中文","categories":["x","y"]}\r\n[1]\n{"id":"j3","text":"€"}',
        "b.csv":
          "\ufeffdoc_id,title,abstract,categories\r\n" + 'c1,Été,"deux\r\nlignes 😀",x\r\nc2,T,€,\r\n\r\nc3,T\r\n'
      })
      const whole = summarize(yield* readAll([root]))
      assert.deepStrictEqual(whole, [
        "j1",
        "2",
        "! a.jsonl:4: expected a JSON object with an id and a body",
        "j3",
        "c1",
        "c2",
        "! b.csv:6: the row has 2 cells and no value for abstract"
      ])
      const tiny = yield* readAll([root]).pipe(Effect.provide(TinyLayer))
      assert.deepStrictEqual(summarize(tiny), whole)
      const c1 = tiny[4]!
      assert.strictEqual(Result.isSuccess(c1) ? c1.success.doc.body : "", "deux\r\nlignes 😀")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("skips a JSONL line that is not UTF-8 and reads the other lines", () =>
    Effect.gen(function* () {
      const root = yield* tree({
        "docs.jsonl": new Uint8Array([
          ...new TextEncoder().encode('{"id":"a","text":"x"}\n{"id":"b","text":"'),
          0xe9,
          ...new TextEncoder().encode('"}\n{"id":"c","text":"z"}\n')
        ])
      })
      const file = `${root}/docs.jsonl`
      const expected = [
        "a",
        `! ${file}:2: the line is not UTF-8 text, skipped; convert the file to UTF-8 to index it`,
        "c"
      ]
      assert.deepStrictEqual(summarize(yield* readAll([file])), expected)
      assert.deepStrictEqual(summarize(yield* readAll([file]).pipe(Effect.provide(TinyLayer))), expected)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("skips a UTF-16 (NUL-holding) JSONL file as a whole", () =>
    Effect.gen(function* () {
      const utf16 = [...'{"id":"a","text":"x"}\n'].flatMap((c) => [c.charCodeAt(0), 0])
      const root = yield* tree({ "w.jsonl": new Uint8Array([0xff, 0xfe, ...utf16, ...utf16]) })
      assert.deepStrictEqual(summarize(yield* readAll([root]).pipe(Effect.provide(TinyLayer))), [
        "! w.jsonl: a binary file (it contains NUL bytes), skipped"
      ])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("skips a text file over the size limit with a reason", () =>
    Effect.gen(function* () {
      const root = yield* tree({ "big.md": "# Big\nmore than sixteen bytes", "small.md": "# Small\nok" })
      assert.deepStrictEqual(summarize(yield* readAll([root]).pipe(Effect.provide(TinyLayer))), [
        "! big.md: larger than 16 bytes, skipped; split it or convert it to JSONL to index it",
        "small.md"
      ])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("sizes the files it would read", () =>
    Effect.gen(function* () {
      const root = yield* tree({ "a.md": "12345", "sub/b.jsonl": "123", ".hidden/c.md": "1234567", "d.png": "12" })
      const source = yield* DocumentSource
      // a.md is named twice but counted once, as it is read once.
      assert.strictEqual(yield* source.size([root, `${root}/a.md`]), 8)
      const error = yield* Effect.flip(source.size([`${root}/d.png`]))
      assert.strictEqual(error._tag, "UnsupportedSource")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("fails with SourceMissing for a path that does not exist", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(readAll(["/definitely/not/here"]))
      assert.strictEqual(error._tag, "SourceMissing")
      assert.strictEqual(error.message, "nothing at /definitely/not/here: check the path")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("fails with NoDocuments for a directory with nothing to read", () =>
    Effect.gen(function* () {
      const root = yield* tree({ "image.png": "not text", ".git/config": "x" })
      const error = yield* Effect.flip(readAll([root]))
      assert.strictEqual(error._tag, "NoDocuments")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("fails with UnsupportedSource for a file of another kind", () =>
    Effect.gen(function* () {
      const root = yield* tree({ "photo.png": "PNG" })
      const error = yield* Effect.flip(readAll([`${root}/photo.png`]))
      assert.strictEqual(error._tag, "UnsupportedSource")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("keeps the records already read when a later path is missing", () =>
    Effect.gen(function* () {
      const root = yield* tree({ "a.md": "one" })
      const source = yield* DocumentSource
      const seen: Array<string> = []
      const error = yield* Effect.flip(
        source
          .read([root, "/missing/too"])
          .pipe(
            Stream.runForEach((r) => Effect.sync(() => seen.push(Result.isSuccess(r) ? r.success.doc.docId : "bad")))
          )
      )
      assert.deepStrictEqual(seen, [`${root.slice(root.lastIndexOf("/") + 1)}/a.md`])
      assert.strictEqual(error._tag, "SourceMissing")
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("keeps the doc ids of several paths apart with each path's name, the same every run", () =>
    Effect.gen(function* () {
      const root = yield* tree({
        "projA/README.md": "a",
        "projB/README.md": "b",
        "x/docs/n.md": "x",
        "y/docs/n.md": "y",
        "one/notes.md": "1",
        "two/notes.md": "2"
      })
      const ids = summarize(yield* readAll([`${root}/projA`, `${root}/projB`]))
      assert.deepStrictEqual(ids, ["projA/README.md", "projB/README.md"])
      assert.deepStrictEqual(summarize(yield* readAll([`${root}/projA`, `${root}/projB`])), ids)
      assert.deepStrictEqual(summarize(yield* readAll([`${root}/x/docs`, `${root}/y/docs`, `${root}/projA`])), [
        "x/docs/n.md",
        "y/docs/n.md",
        "projA/README.md"
      ])
      assert.deepStrictEqual(summarize(yield* readAll([`${root}/one/notes.md`, `${root}/two/notes.md`])), [
        "one/notes.md",
        "two/notes.md"
      ])
      // One path keeps the plain relative ids, and a path named twice is read once.
      assert.deepStrictEqual(summarize(yield* readAll([`${root}/projA`, `${root}/projA/`])), ["README.md"])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("follows a link back up the tree once, reports the loop, and reads each file once", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const root = yield* tree({ "a/note.md": "n", "b.md": "b" })
      yield* fs.symlink("..", `${root}/a/up`)
      yield* fs.symlink("../b.md", `${root}/a/link.md`)
      const records = yield* readAll([root])
      // The first name in reading order is the one read.
      assert.deepStrictEqual(summarize(records), [
        "a/link.md",
        "a/note.md",
        `! a/up: a link back to the folder ${root} it is in (a loop), not followed`,
        "! b.md: the same file as a/link.md, read once"
      ])
      const source = yield* DocumentSource
      assert.strictEqual(yield* source.size([root, `${root}/b.md`]), 2)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("skips an unreadable folder and a broken link with their reasons and reads the rest", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const root = yield* tree({ "locked/x.md": "x", "open/y.md": "y" })
      yield* fs.symlink("gone.md", `${root}/open/broken.md`)
      // Tests run as root here, which no folder mode keeps out: the listing itself is made to fail as Node's would.
      const denied = (dir: string) => {
        if (!dir.endsWith("/locked")) return readdirSync(dir, { withFileTypes: true })
        throw Object.assign(new Error(`EACCES: permission denied, scandir '${dir}'`), { code: "EACCES" })
      }
      const records = yield* readAll([root]).pipe(Effect.provide(DocumentSource.layerWith({ listFolder: denied })))
      assert.deepStrictEqual(summarize(records), [
        "! locked: permission denied, so the folder was skipped",
        "! open/broken.md: a link to a file that does not exist, skipped",
        "open/y.md"
      ])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("skips a JSONL path that cannot be opened with the system's reason, and reads the rest", () =>
    Effect.gen(function* () {
      const root = yield* tree({ "b.jsonl": '{"id":"b1","title":"B","text":"bee"}\n' })
      // A socket: it lists as an entry but no file can be opened there, whoever runs the test.
      const server = createServer()
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => void server.listen(`${root}/a.jsonl`, () => resume(Effect.void))),
        () => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const records = yield* readAll([`${root}/a.jsonl`, `${root}/b.jsonl`])
      assert.deepStrictEqual(summarize(records), [`! ${root}/a.jsonl: there is no such device`, "b1"])
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect.skipIf(process.platform !== "linux")(
    "skips a JSONL file whose reading fails with the system's reason, and reads the rest",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const root = yield* tree({ "b.jsonl": '{"id":"b1","title":"B","text":"bee"}\n' })
        // Linux's view of a process's memory: it opens, but reading its unmapped first page fails (EIO), as root too.
        yield* fs.symlink("/proc/self/mem", `${root}/a.jsonl`)
        const records = yield* readAll([`${root}/a.jsonl`, `${root}/b.jsonl`])
        assert.deepStrictEqual(summarize(records), [`! ${root}/a.jsonl: the disk reported an input/output error`, "b1"])
      }).pipe(Effect.provide(TestLayer))
  )

  it.effect.skipIf(process.platform === "win32")(
    "reads a JSONL named pipe as another writer fills it, without stopping the process to wait for it",
    () =>
      Effect.gen(function* () {
        const root = yield* tree({})
        const pipe = `${root}/feed.jsonl`
        execFileSync("mkfifo", [pipe])
        // The writer is this same process: a read that waited for the pipe synchronously would never let it write.
        const writer = createWriteStream(pipe)
        writer.end('{"id":"p1","title":"P","text":"piped"}\n{"id":"p2","title":"Q","text":"too"}\n')
        assert.deepStrictEqual(summarize(yield* readAll([pipe])), ["p1", "p2"])
      }).pipe(Effect.provide(TestLayer))
  )

  it.effect("walks names in code-point order, the project's one string order (not UTF-16's)", () =>
    Effect.gen(function* () {
      // By UTF-16 code unit the emoji (a surrogate pair starting 0xD83D) sorts before U+FF5E; by code point after it.
      const root = yield* tree({ "\u{1F600}.md": "emoji", "\uFF5E.md": "tilde", "a.md": "a" })
      assert.deepStrictEqual(summarize(yield* readAll([root])), ["a.md", "\uFF5E.md", "\u{1F600}.md"])
    }).pipe(Effect.provide(TestLayer))
  )
})
