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
      // ~1.2 s once an earlier one has filled it (the suite, interleaved: 54.9, 59.4, 56 and 63 s without; 53.6, 55.0,
      // 53 and 61 s with). It was once taken out after a clean-clone run hung in a Preparer test; that hang was a race
      // in the test itself (it attached a thread's exit listener too late), fixed since.
      NODE_COMPILE_CACHE:
        process.env["NODE_COMPILE_CACHE"] ??
        fileURLToPath(new URL("./node_modules/.cache/funcpipe-tests", import.meta.url))
    }
  }
})
