/** `funcpipe index --metrics-file`: the run's metrics in Prometheus' text format, for node_exporter's textfile collector. */

import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Models } from "@funcpipe/pipeline/models/Models"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { checkMetrics, promtoolChecks, sample } from "@funcpipe/test-kit/PrometheusText"
import { Effect, FileSystem, Layer } from "effect"
import { run, SAMPLE } from "./support/Run.ts"

const TestLayer = Layer.mergeAll(DocumentSource.layer, Models.layerLocal).pipe(Layer.provideMerge(NodeServices.layer))

describe("funcpipe index --metrics-file", () => {
  it.live("writes each run's counts, time and completion in Prometheus' text format, replacing the file", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-metrics-file-" })
      const file = `${dir}/funcpipe.prom`
      const added = (text: string) => sample(text, "funcpipe_index_run_documents_total", { change: "added" }) ?? 0
      yield* run(["index", SAMPLE, "--index", `${dir}/index.db`, "--metrics-file", file])
      const first = yield* fs.readFileString(file)
      assert.include(first, "# TYPE funcpipe_index_run_duration_seconds histogram")
      assert.isAbove(sample(first, "funcpipe_index_run_last_completed_timestamp_seconds") ?? 0, 1.7e9)
      assert.strictEqual(sample(first, "funcpipe_index_run_index_chunks"), 17)
      // A second run adds nothing: the counters (of this process) grow by its counts, the file is written anew.
      yield* run(["index", SAMPLE, "--index", `${dir}/index.db`, "--metrics-file", file])
      const second = yield* fs.readFileString(file)
      assert.strictEqual(added(second), added(first))
      assert.isAtLeast(sample(second, "funcpipe_index_run_documents_total", { change: "unchanged" }) ?? 0, 17)
      if (promtoolChecks) {
        const checked = checkMetrics(second)
        assert.strictEqual(checked.status, 0, checked.output)
      }
      // A folder that is not there: one clear error, after the run (which is committed).
      const error = yield* Effect.flip(
        run(["index", SAMPLE, "--index", `${dir}/index.db`, "--metrics-file", `${dir}/none/funcpipe.prom`])
      )
      assert.strictEqual(error._tag, "OutputFailure")
      assert.include(error.message, `${dir}/none/funcpipe.prom`)
    }).pipe(Effect.scoped, Effect.provide(TestLayer))
  )
})
