/** Bundles the CLI (and its worker) into JavaScript files, so `funcpipe` starts without compiling TypeScript. */
import { build } from "rolldown"

const root = new URL("./", import.meta.url).pathname

await build({
  input: { funcpipe: `${root}src/bin.ts`, "prepare-worker": `${root}../pipeline/src/stages/PrepareWorker.ts` },
  platform: "node",
  logLevel: "warn",
  output: { dir: `${root}dist`, format: "esm", entryFileNames: "[name].mjs", chunkFileNames: "[name]-[hash].mjs" }
})
