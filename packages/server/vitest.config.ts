import { availableParallelism } from "node:os"
import { defaultServerConditions } from "vite"
import { defineProject } from "vitest/config"

export default defineProject({
  // The workspace packages resolve to their TypeScript sources (the `@funcpipe/source` export condition, see
  // docs/decisions/0062-packages-resolve-to-sources-or-dist.md); vitest passes these conditions on to its worker
  // processes, and so to the threads they start.
  ssr: { resolve: { conditions: ["@funcpipe/source", ...defaultServerConditions] } },
  test: {
    name: "server",
    // Two files at once, as the root config says (vitest.config.ts): a project file does not inherit it, and with one
    // worker a project's files ran one after another.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    include: ["test/**/*.test.ts"],
    // The multi-process sharding tests run with `npm run test:cluster` (see vitest.cluster.config.ts).
    exclude: ["test/**/*.cluster.test.ts"],
    setupFiles: ["../../vitest.setup.ts"],
    // The test files share no module state, so they share one module graph (a second or two less each).
    isolate: false
  }
})
