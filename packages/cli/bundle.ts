/**
 * Bundles the CLI (and its worker) into JavaScript files, so `funcpipe` starts without compiling TypeScript. With
 * `--if-stale` it builds only when the bundle is missing or older than a source file of the packages (the CLI tests'
 * setup); with `--state` it builds nothing and prints `missing`, `stale` or `current` (the benchmark reports it).
 */
import { existsSync, readdirSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"

const root = new URL("./", import.meta.url).pathname
const packages = join(root, "..")

const newestSource = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return Math.max(newest, newestSource(path))
    return entry.name.endsWith(".ts") ? Math.max(newest, statSync(path).mtimeMs) : newest
  }, 0)

const bundleState = (): "missing" | "stale" | "current" => {
  const bundle = join(root, "dist", "funcpipe.mjs")
  if (!existsSync(bundle)) return "missing"
  const newest = Math.max(
    ...readdirSync(packages).map((name) => {
      const src = join(packages, name, "src")
      return existsSync(src) ? newestSource(src) : 0
    })
  )
  return statSync(bundle).mtimeMs < newest ? "stale" : "current"
}

const mode = process.argv[2]
if (mode === "--state") {
  console.log(bundleState())
  process.exit(0)
}
if (mode === "--if-stale" && bundleState() === "current") process.exit(0)

// Loaded only to build: `--state` answers without it.
const { build } = await import("rolldown")

/**
 * effect's CLI output module makes an `Intl.Segmenter` when it is loaded, to measure text widths for help and tables.
 * Making one starts ICU's grapheme rules: about 14 ms of every start (a cold `funcpipe query`: ~4 %), though only help
 * text ever measures. The bundle makes it on first use instead. If a newer effect words the line differently, the
 * bundle is built all the same, without this, and the build says so.
 */
const SEGMENTER =
  /const graphemeSegmenter = (?:\/\*#__PURE__\*\/ *)?new Intl\.Segmenter\(undefined, \{\s*granularity: "grapheme"\s*\}\);/
const lazySegmenter = {
  name: "funcpipe-lazy-grapheme-segmenter",
  transform(code: string, id: string) {
    if (!id.replaceAll("\\", "/").endsWith("effect/dist/cli/CliOutput.js")) return null
    if (!SEGMENTER.test(code)) {
      console.warn("bundle: effect's CliOutput no longer matches; its Intl.Segmenter is made at start-up")
      return null
    }
    return code.replace(
      SEGMENTER,
      "let graphemeSegmenterMade;\n" +
        "const graphemeSegmenter = { segment: (text) => (graphemeSegmenterMade ??= " +
        'new Intl.Segmenter(undefined, { granularity: "grapheme" })).segment(text) };'
    )
  }
}
rmSync(`${root}dist`, { recursive: true, force: true })
await build({
  input: { funcpipe: `${root}src/bin.ts`, "prepare-worker": `${root}../pipeline/src/index/prepare/PrepareWorker.ts` },
  platform: "node",
  // The workspace packages' TypeScript sources (their `@funcpipe/source` export), not a build of them that may be stale.
  resolve: { conditionNames: ["@funcpipe/source", "import", "node", "default"] },
  logLevel: "warn",
  plugins: [lazySegmenter],
  output: {
    dir: `${root}dist`,
    format: "esm",
    entryFileNames: "[name].mjs",
    chunkFileNames: "[name]-[hash].mjs",
    // Less source to read, decode and hash at every start (the start-up files: 2.4 → 1.1 MB, `--version` ~12 % faster
    // over 20 interleaved runs; local names shortened too: 0.91 → 0.67 MB, a cold query on the 210 MB index ~10-16 ms
    // faster over 16-20 interleaved rounds). Function and class names are kept, so a defect's stack trace stays readable.
    minify: { mangle: { keepNames: true }, compress: {}, codegen: { removeWhitespace: true } },
    // Non-ASCII characters escaped: Node then reads each file as one-byte text (`--version` 314 → 302 ms median of
    // 40 interleaved runs; CPU profile of a start 264 → 244 ms).
    charset: "ascii"
  }
})
