import { defineConfig } from "vitest/config"

/** The tests that need installed model files (`*.models.test.ts`): `npm run test:models`; `npm test` leaves them out. */
export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.models.test.ts"],
    setupFiles: ["./vitest.setup.ts"]
  }
})
