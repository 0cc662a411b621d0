/** Bundles the CLI into one JavaScript file, so `funcpipe` starts without compiling TypeScript or resolving modules. */
import { build } from "rolldown"

const root = new URL("./", import.meta.url).pathname

await build({
  input: `${root}src/bin.ts`,
  platform: "node",
  logLevel: "warn",
  output: { file: `${root}dist/funcpipe.mjs`, format: "esm", minify: false }
})
