#!/usr/bin/env -S node --max-semi-space-size=4
// The flag keeps V8's young generation small: sized for throughput on a machine with much memory, it costs hundreds
// of MB of resident memory while indexing and gains little here.
// Starts the funcpipe CLI: the bundle that `npm run build` makes (npm ci runs it), or the TypeScript sources when
// there is no bundle. Node's compile cache keeps later starts fast.
import { existsSync } from "node:fs"
import module from "node:module"

module.enableCompileCache?.()
const bundle = new URL("../dist/funcpipe.mjs", import.meta.url)
await import(existsSync(bundle) ? bundle.href : new URL("../src/bin.ts", import.meta.url).href)
