/** A child Node process run for the benchmark: its wall time, peak resident set size, exit code and output. */
import { execFileSync, spawn } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/** What one child run took and printed. */
export interface ChildRun {
  /** From spawning to its exit, in milliseconds: Node's start-up included. */
  readonly wallMs: number
  /** Peak resident set size in KiB, the child's own high-water mark at exit (see `rss.mjs`). */
  readonly peakRssKiB: number
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The repository root (the folder above `bench/`), where the children run. */
export const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url))

/** The CLI's TypeScript entry, as `npm run funcpipe` runs it. */
export const CLI_SOURCE = join(REPO_ROOT, "packages", "cli", "src", "bin.ts")

/**
 * The `funcpipe` command as npm installs it: the `bin` of packages/cli/package.json (a launcher that starts the
 * bundle), or the TypeScript entry if the package names none.
 */
export const cliEntry = (): string => {
  const cli = join(REPO_ROOT, "packages", "cli")
  const manifest = JSON.parse(readFileSync(join(cli, "package.json"), "utf8")) as {
    bin?: string | Record<string, string>
  }
  const bin = typeof manifest.bin === "string" ? manifest.bin : manifest.bin?.["funcpipe"]
  return bin === undefined ? CLI_SOURCE : join(cli, bin)
}

/**
 * The CLI bundle (packages/cli/dist/funcpipe.mjs) and whether it is older than some source file of the packages, in
 * which case the launcher runs stale code; undefined when there is no bundle. The bundler answers (`--state`).
 */
export const cliBundle = (): { readonly path: string; readonly stale: boolean } | undefined => {
  const cli = join(REPO_ROOT, "packages", "cli")
  const state = execFileSync(process.execPath, [join(cli, "bundle.ts"), "--state"], { encoding: "utf8" }).trim()
  return state === "missing" ? undefined : { path: join(cli, "dist", "funcpipe.mjs"), stale: state === "stale" }
}

// Plain JavaScript, so measuring a child does not load Node's TypeScript stripping into it.
const PRELOAD = new URL("./rss.mjs", import.meta.url).href

/**
 * What a script's `#!/usr/bin/env -S [NAME=value …] node …` line asks for: environment variables and Node flags (the
 * CLI launcher sets V8 and malloc options this way), so the benchmark runs it as `npx funcpipe` would.
 */
const shebang = (script: string): { readonly env: Record<string, string>; readonly flags: Array<string> } => {
  const none = { env: {}, flags: [] }
  if (!script.endsWith(".mjs") && !script.endsWith(".js")) return none
  try {
    const first = readFileSync(script, "utf8").split("\n", 1)[0]!
    const match = /^#!\/usr\/bin\/env -S (.*)$/.exec(first)
    if (match === null) return none
    const words = match[1]!.trim().split(/\s+/)
    const node = words.indexOf("node")
    if (node < 0) return none
    const env = Object.fromEntries(
      words.slice(0, node).map((w) => [w.slice(0, w.indexOf("=")), w.slice(w.indexOf("=") + 1)])
    )
    return { env, flags: words.slice(node + 1) }
  } catch {
    return none
  }
}

/**
 * Runs `node <args>` with the same Node binary as this process and the peak-RSS preload, one at a time (the caller
 * awaits each). `rssFile` is where the preload leaves its figure; it is removed before the run. A child that dies
 * before its exit handler runs reports a peak RSS of NaN.
 */
export const runNode = (args: ReadonlyArray<string>, rssFile: string): Promise<ChildRun> =>
  new Promise((resolve, reject) => {
    rmSync(rssFile, { force: true })
    const out: Array<Buffer> = []
    const err: Array<Buffer> = []
    let exited = Number.NaN
    const started = performance.now()
    const launcher = shebang(args[0] ?? "")
    // The workspace's sources, whatever the parent was started with (a stale dist/ after a pack must not answer).
    const child = spawn(
      process.execPath,
      [...launcher.flags, "--conditions=@funcpipe/source", "--import", PRELOAD, ...args],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, ...launcher.env, FUNCPIPE_BENCH_RSS_FILE: rssFile },
        stdio: ["ignore", "pipe", "pipe"]
      }
    )
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk))
    child.on("error", reject)
    child.on("exit", () => {
      exited = performance.now()
    })
    child.on("close", (code) => {
      let peakRssKiB = Number.NaN
      try {
        peakRssKiB = Number(readFileSync(rssFile, "utf8"))
      } catch {
        // The child was killed before its exit handler ran.
      }
      rmSync(rssFile, { force: true })
      resolve({
        wallMs: (Number.isNaN(exited) ? performance.now() : exited) - started,
        peakRssKiB,
        code,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8")
      })
    })
  })
