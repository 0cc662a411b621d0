import { defineConfig } from "vitest/config"

/**
 * The multi-process sharding tests (`*.cluster.test.ts`: runner processes, a SIGKILL, lock expiry), about a minute:
 * `npm run test:cluster`, which CI runs after `npm test`; `npm test` leaves them out to stay quick.
 */
export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.cluster.test.ts"],
    setupFiles: ["./vitest.setup.ts"],
    // One file at a time: each test starts its own runners, and the machine has two cores.
    fileParallelism: false
  }
})
