#!/usr/bin/env node
// Starts the funcpipe CLI: the bundle that `npm run build` makes (npm ci runs it), or the TypeScript sources when
// there is no bundle. Node's compile cache keeps later starts fast.
import { existsSync } from "node:fs"
import module from "node:module"

module.enableCompileCache?.()
const bundle = new URL("../dist/funcpipe.mjs", import.meta.url)
await import(existsSync(bundle) ? bundle.href : new URL("../src/bin.ts", import.meta.url).href)
