import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "server",
    include: ["test/**/*.test.ts"],
    // The multi-process sharding tests run with `npm run test:cluster` (see vitest.cluster.config.ts).
    exclude: ["test/**/*.cluster.test.ts"],
    setupFiles: ["../../vitest.setup.ts"],
    // The test files share no module state, so they share one module graph (a second or two less each).
    isolate: false
  }
})
