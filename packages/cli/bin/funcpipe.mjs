#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4
// The flag keeps V8's young generation small: sized for throughput on a machine with much memory, it costs hundreds
// of MB of resident memory while indexing and gains little here. Two malloc arenas (glibc) stop the worker thread
// and SQLite from spreading freed memory over many arenas (on a 1 GB corpus: ~460 → ~400 MB peak).
// Starts the funcpipe CLI: the bundle that `npm run build` makes (npm ci runs it; an installed package ships it).
// Node's compile cache keeps later starts fast. The TypeScript sources run with `npm run funcpipe`: they need the
// `@funcpipe/source` condition, which this process, started by its first line, does not have.
import { existsSync } from "node:fs"
import module from "node:module"

module.enableCompileCache?.()
const bundle = new URL("../dist/funcpipe.mjs", import.meta.url)
if (existsSync(bundle)) await import(bundle.href)
else {
  process.stderr.write(
    "funcpipe: the CLI is not built; run `npm run build`, or run the sources with `npm run funcpipe -- …`\n"
  )
  process.exitCode = 1
}
