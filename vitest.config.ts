import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"
import projects from "./vitest.workspace.ts"

export default defineConfig({
  test: {
    projects,
    // Two test files at once even on two cores (vitest's default leaves one core free): most files wait on child
    // processes, SQLite or PostgreSQL much of the time, so the suite takes ~59 s here instead of ~73 s.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // The Node processes that tests start (the CLI, indexing children) resolve the workspace packages to their
    // sources too; each project's own config sets the condition for its files and workers.
    env: { NODE_OPTIONS: [process.env["NODE_OPTIONS"], "--conditions=@funcpipe/source"].filter(Boolean).join(" ") }
  }
})
