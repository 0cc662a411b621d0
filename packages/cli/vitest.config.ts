import { availableParallelism } from "node:os"
import { defaultServerConditions } from "vite"
import { defineProject } from "vitest/config"

export default defineProject({
  // The workspace packages resolve to their TypeScript sources (the `@funcpipe/source` export condition, see
  // docs/decisions/0062-packages-resolve-to-sources-or-dist.md); vitest passes these conditions on to its worker
  // processes, and so to the threads they start.
  ssr: { resolve: { conditions: ["@funcpipe/source", ...defaultServerConditions] } },
  test: {
    name: "cli",
    // Two files at once, as the root config says (vitest.config.ts): a project file does not inherit it, and with one
    // worker a project's files ran one after another.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    include: ["test/**/*.test.ts"],
    // Tests that need installed model files run with `npm run test:models` (see vitest.models.config.ts), and the
    // multi-process ones with `npm run test:cluster` (vitest.cluster.config.ts).
    exclude: ["test/**/*.models.test.ts", "test/**/*.cluster.test.ts"],
    setupFiles: ["../../vitest.setup.ts"],
    // Builds the CLI bundle if a source file is newer: tests that run the command as users do start it from there.
    globalSetup: ["./test/support/FreshBundle.ts"],
    // Test files share one module graph per worker: importing effect and the pipeline again for each file cost
    // more than half of the suite's time. No test relies on fresh module state.
    isolate: false
  }
})
