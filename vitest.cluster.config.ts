import { defaultServerConditions } from "vite"
import { defineConfig } from "vitest/config"

/**
 * The multi-process tests (`*.cluster.test.ts`: sharding's runner processes, a SIGKILL, lock expiry; a real Prometheus
 * scraping a server), about half a minute: `npm run test:cluster`, which CI runs after `npm test`; `npm test` leaves
 * them out to stay quick.
 */
export default defineConfig({
  // The workspace packages resolve to their TypeScript sources, as in vitest.config.ts and the projects' configs.
  ssr: { resolve: { conditions: ["@funcpipe/source", ...defaultServerConditions] } },
  test: {
    include: ["packages/*/test/**/*.cluster.test.ts"],
    setupFiles: ["./vitest.setup.ts"],
    env: { NODE_OPTIONS: [process.env["NODE_OPTIONS"], "--conditions=@funcpipe/source"].filter(Boolean).join(" ") },
    // One file at a time: each test starts its own runners, and the machine has two cores.
    fileParallelism: false
  }
})
