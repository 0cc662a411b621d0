import { defineConfig } from "vitest/config"
import projects from "./vitest.workspace.ts"

export default defineConfig({
  test: {
    projects,
    // The Node processes that tests start (the CLI, indexing children) resolve the workspace packages to their
    // sources too; each project's own config sets the condition for its files and workers.
    env: { NODE_OPTIONS: [process.env["NODE_OPTIONS"], "--conditions=@funcpipe/source"].filter(Boolean).join(" ") }
  }
})
