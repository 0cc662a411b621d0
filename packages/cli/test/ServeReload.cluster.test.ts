/** `funcpipe serve` reads its configuration again on SIGHUP: new limits apply at once, a bad file changes nothing. */

import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { Effect, FileSystem, Layer, Path } from "effect"
import { run, SAMPLE } from "./support/Run.ts"
import { stderrOf } from "./support/Stderr.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))
const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))

/** A temporary folder with an empty configuration file; both paths. */
const configFile = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-reload-" })
  const file = path.join(dir, "funcpipe.yaml")
  yield* fs.writeFileString(file, "")
  return { dir, file }
})

describe("funcpipe serve on SIGHUP", () => {
  it.live(
    "reads its configuration again: new limits apply at once, a bad file changes nothing",
    () =>
      Effect.gen(function* () {
        const { dir, file } = yield* configFile
        const fs = yield* FileSystem.FileSystem
        const index = `${dir}/index.db`
        yield* run(["index", SAMPLE, "--index", index])
        yield* fs.writeFileString(file, `index: ${index}\nserve:\n  port: 0\n`)
        const child = spawn(process.execPath, [bin, "serve"], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] })
        yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
        const stderr = stderrOf(child)
        const url = (yield* stderr.waitFor(/listening on (http:\/\/\S+) /))[1]!
        const statuses = (n: number) =>
          Effect.promise(async () => {
            const codes: Array<number> = []
            for (let i = 0; i < n; i++) {
              const response = await fetch(`${url}/v1/query`, { method: "POST", body: '{"text":"moon"}' })
              await response.arrayBuffer()
              codes.push(response.status)
            }
            return codes
          })
        assert.deepStrictEqual(yield* statuses(3), [200, 200, 200])
        // A rate of one request a minute, one at once: the second request in a row is refused.
        yield* fs.writeFileString(
          file,
          `index: ${index}\nserve:\n  port: 0\n  rate-limit: 1\n  burst: 1\n  host: localhost\n`
        )
        child.kill("SIGHUP")
        const reloaded = yield* stderr.waitFor(/reloaded the configuration.*\n/)
        assert.include(reloaded[0], "rate limit 1/s")
        assert.include(reloaded[0], "host changed, which takes a restart")
        const codes = yield* statuses(2)
        assert.include(codes, 429)
        // A file that does not parse leaves the settings as they were, and the server serving.
        yield* fs.writeFileString(file, "serve:\n  port: [\n")
        child.kill("SIGHUP")
        const refused = yield* stderr.waitFor(/cannot reload the configuration: (.*)\n/)
        assert.include(refused[1]!, `${file}, line 3`)
        assert.include(refused[1]!, "still serving with the settings before")
        assert.strictEqual((yield* Effect.promise(() => fetch(`${url}/healthz`))).status, 200)
        child.kill("SIGTERM")
        const code = yield* Effect.promise(() => new Promise<number | null>((resolve) => child.on("exit", resolve)))
        assert.strictEqual(code, 0, stderr.text())
      }).pipe(Effect.scoped, Effect.provide(TestLayer)),
    60_000
  )
})
