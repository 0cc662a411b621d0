/** `funcpipe serve --watch PATH`: the server builds its index from the path, and serves each change as it is indexed. */

import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer } from "effect"
import { run } from "./support/Run.ts"
import { stderrOf } from "./support/Stderr.ts"

const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))

describe("funcpipe serve --watch", () => {
  it.live(
    "indexes the folder at start and each change after, serving each new state",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-serve-watch-" })
        yield* fs.makeDirectory(`${dir}/notes`)
        yield* fs.writeFileString(`${dir}/notes/a.md`, "# Aurora\n\nThe aurora borealis glows green.\n")
        yield* fs.writeFileString(`${dir}/notes/draft.md`, "# Draft aurora\n\nNot ready.\n")
        // Built with a keep rule: the watch's runs keep the index's own rule (and chunking), not the defaults.
        yield* run(["index", `${dir}/notes`, "--index", `${dir}/index.db`, "--keep", "not title ^= Draft"])
        const child = spawn(
          process.execPath,
          [bin, "serve", "--index", `${dir}/index.db`, "--port", "0", "--watch", `${dir}/notes`],
          { stdio: ["ignore", "ignore", "pipe"] }
        )
        yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
        const { text: written, waitFor } = stderrOf(child)
        const url = (yield* waitFor(/listening on (http:\/\/\S+) /))[1]!
        yield* waitFor(/serving \S+index\.db: 1 documents/)
        const ask = (text: string) =>
          Effect.promise(async () => {
            const response = await fetch(`${url}/v1/query`, { method: "POST", body: JSON.stringify({ text }) })
            // biome-ignore lint/suspicious/noExplicitAny: JSON, explored by the assertions
            return ((await response.json()) as any).results.map((r: { doc_id: string }) => r.doc_id)
          })
        yield* waitFor(/watch: watching 1 path/)
        assert.deepStrictEqual(yield* ask("aurora"), ["a.md"])
        let mark = written().length
        yield* fs.writeFileString(`${dir}/notes/b.md`, "# Comets\n\nComets have tails of dust.\n")
        yield* waitFor(/now serving \S+index\.db: 2 documents/, mark)
        assert.deepStrictEqual(yield* ask("comets tails"), ["b.md"])
        mark = written().length
        yield* fs.remove(`${dir}/notes/a.md`)
        yield* waitFor(/now serving \S+index\.db: 1 documents/, mark)
        assert.deepStrictEqual(yield* ask("aurora"), [])
        child.kill("SIGTERM")
        const code = yield* Effect.promise(() => new Promise<number | null>((resolve) => child.on("exit", resolve)))
        assert.strictEqual(code, 0, written())
      }).pipe(Effect.scoped, Effect.provide(TestLayer)),
    60_000
  )
})
