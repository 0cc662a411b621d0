/**
 * The floors check (`npm run lint` runs it): every source file's imports must stay within what its room may import,
 * as docs/architecture.md lays out. The pure rooms never reach Node's I/O modules, the boundaries never reach the
 * programs, and nothing below the CLI and the server imports them. It prints one line per offending import and exits
 * 1 when there is any.
 */
import { readdirSync, readFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { dirname, join, relative, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")

/** A room: the folder prefix (under the repository) its files share, what it may import, and the Node modules it may. */
interface Room {
  readonly name: string
  readonly folder: string
  readonly imports: ReadonlyArray<string>
  readonly io: boolean
}

const pure = (name: string, folder: string, imports: ReadonlyArray<string>): Room => ({
  name,
  folder,
  imports,
  io: false
})
const boundary = (name: string, folder: string, imports: ReadonlyArray<string>): Room => ({
  name,
  folder,
  imports,
  io: true
})

const P = "packages/pipeline/src/"
/** The rooms, most specific folder first. A room may always import its own files. */
export const ROOMS: ReadonlyArray<Room> = [
  pure("domain/http", "packages/domain/src/http/", ["domain"]),
  pure("domain", "packages/domain/src/", []),
  pure("base", `${P}base/`, ["domain"]),
  pure("analysis", `${P}analysis/`, ["domain", "base"]),
  boundary("index/prepare", `${P}index/prepare/`, ["domain", "base", "analysis", "index", "search"]),
  pure("index", `${P}index/`, ["domain", "base", "analysis"]),
  pure("search", `${P}search/`, ["domain", "base", "analysis", "index"]),
  pure("eval", `${P}eval/`, ["domain", "base", "read"]),
  boundary("platform", `${P}platform/`, ["domain", "base"]),
  boundary("read", `${P}read/`, ["domain", "base", "analysis", "platform"]),
  boundary("models", `${P}models/`, ["domain", "base", "analysis", "platform"]),
  boundary("store", `${P}store/`, ["domain", "base", "analysis", "index", "search", "platform"]),
  boundary("cluster", `${P}cluster/`, ["domain", "base", "analysis", "index", "search", "store", "models", "platform"]),
  boundary("programs", `${P}programs/`, [
    "domain",
    "domain/http",
    "base",
    "analysis",
    "index",
    "index/prepare",
    "search",
    "eval",
    "platform",
    "read",
    "models",
    "store",
    "cluster"
  ]),
  boundary("front doors", `${P}`, ["*pipeline", "domain"]),
  boundary("test-kit", "packages/test-kit/src/", []),
  boundary("server", "packages/server/src/", ["*pipeline", "domain", "domain/http"]),
  boundary("cli", "packages/cli/src/", ["*pipeline", "domain", "domain/http", "server"])
]

/** Node's modules that reach outside the process (files, network, processes, threads, the terminal). */
const NODE_IO = new Set([
  "fs",
  "fs/promises",
  "net",
  "http",
  "https",
  "http2",
  "child_process",
  "worker_threads",
  "dgram",
  "dns",
  "tls",
  "readline",
  "sqlite",
  "os",
  "cluster",
  "tty",
  "v8",
  "inspector",
  "process"
])

/** Node's built-in modules, which may also be named without the `node:` prefix. */
const NODE_BUILTINS = new Set(builtinModules)

/** Packages that do I/O of their own (drivers, platform layers): boundary rooms only. */
const IO_PACKAGES = ["@effect/platform-node", "@effect/sql-pg", "pg", "playwright-core"]

/** A file's room: the most specific folder that holds it (the front doors are the files directly in the pipeline's src). */
const roomOf = (file: string): Room | undefined =>
  ROOMS.find((room) =>
    room.name === "front doors" ? dirname(file) === room.folder.slice(0, -1) : file.startsWith(room.folder)
  )

const PACKAGE_SOURCES: Record<string, string> = {
  "@funcpipe/domain": "packages/domain/src",
  "@funcpipe/pipeline": "packages/pipeline/src",
  "@funcpipe/server": "packages/server/src",
  "@funcpipe/cli": "packages/cli/src",
  "@funcpipe/test-kit": "packages/test-kit/src"
}

/** What a program outside the packages (the benchmark, the examples) may import: the packages' entry points. */
const ENTRY_POINTS = new Set([
  "@funcpipe/domain",
  "@funcpipe/domain/http",
  "@funcpipe/pipeline",
  "@funcpipe/pipeline/postgres",
  "@funcpipe/pipeline/cluster",
  "@funcpipe/pipeline/worker",
  "@funcpipe/server"
])

const sourceFiles = (folder: string): Array<string> =>
  readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts"))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))

/** Every module a file imports, statically or dynamically, with the line it is on. */
const importsOf = (text: string): Array<{ readonly spec: string; readonly line: number }> => {
  const found: Array<{ spec: string; line: number }> = []
  const pattern = /(?:^|[^\w.])(?:import|export)(?:\s+type)?(?:[\s\w{},*]*?from\s*|\s*\(\s*)["']([^"']+)["']/g
  for (const match of text.matchAll(pattern)) {
    const at = match.index + match[0].search(/import|export/)
    found.push({ spec: match[1]!, line: text.slice(0, at).split("\n").length })
  }
  return found
}

/** The repository file (or `node:x` / package name) an import names. */
const targetOf = (file: string, spec: string): string => {
  if (spec.startsWith(".")) return relative(root, resolve(root, dirname(file), spec))
  if (spec.startsWith("node:")) return spec
  // A built-in named without its prefix is the same module.
  if (NODE_BUILTINS.has(spec.split("/")[0]!)) return `node:${spec}`
  const base = Object.keys(PACKAGE_SOURCES).find((name) => spec === name || spec.startsWith(`${name}/`))
  if (base === undefined) return spec
  const rest = spec.slice(base.length + 1)
  if (base === "@funcpipe/pipeline" && ["postgres", "cluster"].includes(rest)) {
    return `${PACKAGE_SOURCES[base]}/${rest}.ts`
  }
  if (base === "@funcpipe/pipeline" && rest === "worker")
    return `${PACKAGE_SOURCES[base]}/index/prepare/PrepareWorker.ts`
  if (base === "@funcpipe/domain" && rest === "http") return `${PACKAGE_SOURCES[base]}/http/Api.ts`
  return `${PACKAGE_SOURCES[base]}/${rest === "" ? "index" : rest}.ts`
}

const problems: Array<string> = []
for (const folder of [
  "packages/domain/src",
  "packages/pipeline/src",
  "packages/server/src",
  "packages/cli/src",
  "packages/test-kit/src"
]) {
  for (const file of sourceFiles(folder)) {
    const room = roomOf(file)
    if (room === undefined) {
      problems.push(`${file}: in no room; add its folder to scripts/floors.ts and docs/architecture.md`)
      continue
    }
    for (const { spec, line } of importsOf(readFileSync(join(root, file), "utf8"))) {
      const target = targetOf(file, spec)
      const at = `${file}:${line}: ${room.name} imports ${spec}`
      if (target.startsWith("node:")) {
        if (!room.io && NODE_IO.has(target.slice(5))) problems.push(`${at} (Node I/O in a pure room)`)
        continue
      }
      if (!target.startsWith("packages/")) {
        if (!room.io && IO_PACKAGES.some((name) => target === name || target.startsWith(`${name}/`))) {
          problems.push(`${at} (an I/O package in a pure room)`)
        }
        continue
      }
      const other = roomOf(target)
      if (other === undefined || other === room) continue
      const allowed =
        room.imports.includes(other.name) || (room.imports.includes("*pipeline") && other.folder.startsWith(P))
      if (!allowed) problems.push(`${at} (${other.name} is not below ${room.name})`)
    }
  }
}

// The benchmark and the examples use the packages as a user does: through their entry points only.
for (const folder of ["bench", "examples/library/src"]) {
  for (const file of sourceFiles(folder)) {
    for (const { spec, line } of importsOf(readFileSync(join(root, file), "utf8"))) {
      if (spec.startsWith("@funcpipe/") && !ENTRY_POINTS.has(spec)) {
        problems.push(`${file}:${line}: imports ${spec}, which is not an entry point of its package`)
      }
    }
  }
}

for (const problem of problems) process.stderr.write(`${problem}\n`)
if (problems.length > 0) {
  process.stderr.write(`floors: ${problems.length} import(s) break the rooms' rules (docs/architecture.md)\n`)
  process.exit(1)
}
process.stdout.write("floors: every import stays within its room's rules\n")
