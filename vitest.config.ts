import { availableParallelism } from "node:os"
import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import projects from "./vitest.workspace.ts"

export default defineConfig({
  test: {
    projects,
    // Two test files at once even on two cores (vitest's default leaves one core free): most files wait on child
    // processes, SQLite or PostgreSQL much of the time, so the suite takes ~59 s here instead of ~73 s.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    env: {
      // The Node processes that tests start (the CLI, indexing children) resolve the workspace packages to their
      // sources too; each project's own config sets the condition for its files and workers.
      NODE_OPTIONS: [process.env["NODE_OPTIONS"], "--conditions=@funcpipe/source"].filter(Boolean).join(" "),
      // And they share Node's compile cache: a child that runs the TypeScript sources starts in ~0.9 s instead of
      // ~1.2 s once an earlier one has filled it (the suite, 2 interleaved pairs: 54.9 and 59.4 s without, 53.6 and 55.0 s with).
      NODE_COMPILE_CACHE:
        process.env["NODE_COMPILE_CACHE"] ??
        fileURLToPath(new URL("./node_modules/.cache/funcpipe-tests", import.meta.url))
    }
  }
})
