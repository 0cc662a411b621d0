import { defaultServerConditions } from "vite"
import { defineConfig } from "vitest/config"

/** The tests that need installed model files (`*.models.test.ts`): `npm run test:models`; `npm test` leaves them out. */
export default defineConfig({
  // The workspace packages resolve to their TypeScript sources, as in vitest.config.ts and the projects' configs.
  ssr: { resolve: { conditions: ["@funcpipe/source", ...defaultServerConditions] } },
  test: {
    include: ["packages/*/test/**/*.models.test.ts"],
    setupFiles: ["./vitest.setup.ts"],
    env: { NODE_OPTIONS: [process.env["NODE_OPTIONS"], "--conditions=@funcpipe/source"].filter(Boolean).join(" ") }
  }
})
