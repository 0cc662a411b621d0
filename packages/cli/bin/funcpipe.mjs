#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4
// The flag keeps V8's young generation small: sized for throughput on a machine with much memory, it costs hundreds
// of MB of resident memory while indexing and gains little here. Two malloc arenas (glibc) stop the worker thread
// and SQLite from spreading freed memory over many arenas (on a 1 GB corpus: ~460 → ~400 MB peak).
// Starts the funcpipe CLI: the bundle that `npm run build` makes (npm ci runs it), or the TypeScript sources when
// there is no bundle. Node's compile cache keeps later starts fast.
import { existsSync } from "node:fs"
import module from "node:module"

module.enableCompileCache?.()
const bundle = new URL("../dist/funcpipe.mjs", import.meta.url)
await import(existsSync(bundle) ? bundle.href : new URL("../src/bin.ts", import.meta.url).href)
