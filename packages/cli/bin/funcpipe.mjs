#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8 --v8-pool-size=1
// The first flag keeps V8's young generation small: sized for throughput on a machine with much memory, it costs
// hundreds of MB of resident memory while indexing and gains little here. 8 MB semi-spaces rather than 4: fewer of the
// documents a run holds for a moment live long enough to be promoted (210 MB: faster in 8 of 8 interleaved pairs, CPU
// −4 %; peak memory 243 → 261 MB, and at 1 GB 314 → 321 MiB). The second gives V8 one background thread
// (collector helpers, compilation) instead of four: `index` keeps every core busy with JavaScript threads (the main
// thread and the preparing ones), which four helpers only crowd (210 MB on 2 cores, 7 interleaved pairs: 6.74-7.29 →
// 6.30-7.61 s, faster in 6 of 7; 10-15 MB more at peak; `--version` and queries unchanged). Two malloc arenas
// (glibc) stop the worker thread and SQLite from spreading freed memory over many arenas (1 GB: ~460 → ~400 MB peak).
// Starts the funcpipe CLI: the bundle that `npm run build` makes (npm ci runs it; an installed package ships it).
// Node's compile cache keeps later starts fast. The TypeScript sources run with `npm run funcpipe`: they need the
// `@funcpipe/source` condition, which this process, started by its first line, does not have.
import { existsSync, readFileSync } from "node:fs"

/**
 * The npm process (npx, `npm exec`, `npm run`) that started this one, directly or through `sh -c`, by Linux's /proc;
 * `undefined` for any other parent.
 */
const npmParent = () => {
  const commandOf = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ")
    } catch {
      return ""
    }
  }
  const parentOf = (pid) => {
    try {
      return Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[1])
    } catch {
      return 0
    }
  }
  const npm = /(^|[\s/])(npm|npx|npm-cli\.js|npx-cli\.js)(\s|$)/
  const parent = process.ppid
  if (npm.test(commandOf(parent))) return parent
  const grandparent = parentOf(parent)
  return /^\S*sh -c /.test(commandOf(parent)) && npm.test(commandOf(grandparent)) ? grandparent : undefined
}

/** Whether process `pid` still runs (signal 0 asks without sending anything). */
const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user (npm may run scripts as the folder's owner).
    return error?.code === "EPERM"
  }
}

import module from "node:module"
import os from "node:os"

module.enableCompileCache?.()
const bundle = new URL("../dist/funcpipe.mjs", import.meta.url)
const args = process.argv.slice(2)
/** The command's name: the first word that is not a flag or the value of a flag taken before it (`--config FILE`). */
const command = (() => {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--") return undefined
    if (["--config", "--log-level", "--completions"].includes(args[i])) i++
    else if (!args[i].startsWith("-")) return args[i]
  }
  return undefined
})()
// The oldest Node the CLI runs on: it needs node:sqlite, zstd and the rest of what Node 22.19 brought.
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number)
const oldNode = major < 22 || (major === 22 && minor < 19)
if (oldNode && !(args.length === 1 && args[0] === "--version")) {
  process.stderr.write(
    `funcpipe: this is Node.js ${process.versions.node}, and funcpipe needs Node.js 22.19 or later (24, the LTS, is ` +
      "the one it is tested on). Install it from https://nodejs.org/ or with a version manager (nvm install 24), " +
      "or run funcpipe with npx from a FuncPipe checkout, which brings its own Node\n"
  )
  process.exitCode = 1
} else if (args.length === 1 && args[0] === "--version") {
  // Answered here, as the CLI would answer it (a test holds them equal), without loading the CLI (about half of the
  // time `--version` took).
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
  process.stdout.write(`funcpipe v${version}\n`)
} else if (existsSync(bundle) && command === "serve") {
  // A server is the one command that allocates for each request, for hours: with the young generation of the flag
  // above, what a request leaves behind is promoted before it dies, and the old generation swells and shrinks (RSS up
  // ~50 % under load). V8 takes the flag for the whole process, so `serve` runs in a process of its own with 16 MB
  // semi-spaces, where that garbage dies young. Signals are passed on; if this process is killed outright, the
  // server sees its channel close and exits too.
  const { spawn } = await import("node:child_process")
  const { fileURLToPath } = await import("node:url")
  const cache = module.getCompileCacheDir?.()
  const server = spawn(
    process.execPath,
    ["--max-semi-space-size=16", fileURLToPath(bundle), ...process.argv.slice(2)],
    {
      stdio: ["inherit", "inherit", "inherit", "ipc"],
      env: {
        ...process.env,
        FUNCPIPE_SERVER_PROCESS: "1",
        ...(cache === undefined ? {} : { NODE_COMPILE_CACHE: cache })
      }
    }
  )
  // SIGHUP asks the server to read its configuration again (with stdin not a terminal; in one, it stops the server as
  // a closed terminal stops any command); the others stop it.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => server.kill(signal))
  // Started by npx (npm exec, through `sh -c`), this process is not told when npx is stopped with SIGTERM: it is left
  // to init. Its parent changing then means npx was stopped, and the server is stopped as if sent SIGTERM. Only under
  // npm: a server left running on purpose (`nohup funcpipe serve &` from a shell that exits) is left running.
  const npm = npmParent()
  if (npm !== undefined) {
    const parent = process.ppid
    const orphaned = setInterval(() => {
      if (process.ppid !== parent || !alive(npm)) {
        clearInterval(orphaned)
        server.kill("SIGTERM")
      }
    }, 500)
    orphaned.unref()
  }
  server.on("exit", (code, signal) => {
    process.exit(code ?? (signal === null ? 1 : 128 + (os.constants.signals[signal] ?? 0)))
  })
} else if (existsSync(bundle)) {
  if (command === "index") {
    // `index` prepares documents on a worker thread, which takes ~0.2 s to start: started here, it starts while the
    // CLI loads (a 10 MB run: 1.49 → 1.31 s), and the CLI takes it over (see `EARLY_WORKER` in the pipeline's Preparer).
    const { Worker } = await import("node:worker_threads")
    const script = new URL("../dist/prepare-worker.mjs", import.meta.url)
    const worker = new Worker(script, { resourceLimits: { maxYoungGenerationSizeMb: 24 } })
    worker.unref()
    const early = { script: script.href, worker, failed: false }
    for (const event of ["error", "exit"]) worker.once(event, () => void (early.failed = true))
    globalThis[Symbol.for("funcpipe/early-prepare-worker")] = early
  }
  await import(bundle.href)
} else {
  process.stderr.write(
    "funcpipe: the CLI is not built; run `npm run build`, or run the sources with `npm run funcpipe -- …`\n"
  )
  process.exitCode = 1
}
