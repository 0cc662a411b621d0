import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "pipeline",
    include: ["test/**/*.test.ts"],
    // Tests that need installed model files run with `npm run test:models` (see vitest.models.config.ts).
    exclude: ["test/**/*.models.test.ts"],
    setupFiles: ["../../vitest.setup.ts"]
  }
})
