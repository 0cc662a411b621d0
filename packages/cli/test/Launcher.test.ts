import { spawnSync } from "node:child_process"
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { version } from "../src/Cli.ts"
import { launcher } from "./support/Launcher.ts"

const bundle = fileURLToPath(new URL("../dist/funcpipe.mjs", import.meta.url))
const manifest = fileURLToPath(new URL("../package.json", import.meta.url))
const run = (...args: ReadonlyArray<string>) => spawnSync(process.execPath, [...args], { encoding: "utf8" })

/** A Node older than the CLI needs, if this machine has one (Debian's is 20): the launcher must refuse it clearly. */
const oldNode = ["/usr/bin/node", "/usr/local/bin/node"].find((path) => {
  const found = spawnSync(path, ["-p", "process.versions.node"], { encoding: "utf8" })
  return found.status === 0 && Number(found.stdout.split(".")[0]) < 22
})

describe("the launcher", () => {
  it.skipIf(oldNode === undefined)("says which Node it needs on an older one, in one line, for every command", () => {
    for (const args of [["index", "docs"], ["query", "x"], ["--help"]]) {
      const found = spawnSync(oldNode!, [launcher, ...args], { encoding: "utf8" })
      expect(found.status).toBe(1)
      expect(found.stderr).toMatch(/^funcpipe: this is Node\.js [\d.]+, and funcpipe needs Node\.js 22\.19 or later/)
      expect(found.stderr.trim().split("\n")).toHaveLength(1)
    }
  })

  it("answers --version itself, without the CLI, exactly as the CLI does", () => {
    const full = run(bundle, "--version")
    expect(full.status).toBe(0)
    expect(full.stdout).toBe(`funcpipe v${version}\n`)
    // The launcher and its package.json alone: were the CLI loaded, it would say it is not built.
    const dir = mkdtempSync(join(tmpdir(), "funcpipe-launcher-"))
    try {
      mkdirSync(join(dir, "bin"))
      copyFileSync(launcher, join(dir, "bin", "funcpipe.mjs"))
      copyFileSync(manifest, join(dir, "package.json"))
      const fast = run(join(dir, "bin", "funcpipe.mjs"), "--version")
      expect(fast.stderr).toBe("")
      expect(fast.status).toBe(0)
      expect(fast.stdout).toBe(full.stdout)
      const other = run(join(dir, "bin", "funcpipe.mjs"), "--help")
      expect(other.stderr).toContain("the CLI is not built")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("loads the document converters only when a file of their kind is read, and YAML's parser only for a file", () => {
    // What start-up loads: the bundle and every chunk it imports statically, and theirs in turn.
    const dist = dirname(bundle)
    const loaded = new Set<string>()
    const visit = (file: string) => {
      if (loaded.has(file)) return
      loaded.add(file)
      const code = readFileSync(join(dist, file), "utf8")
      for (const match of code.matchAll(
        /(?:^|[;\s}])(?:import|export)\s*(?:[^"'()]*?from\s*)?["']\.\/([^"']+\.mjs)["']/g
      )) {
        visit(match[1]!)
      }
    }
    visit(basename(bundle))
    expect(loaded.size).toBeGreaterThan(3)
    const converters = readdirSync(dist).filter((file) => /^(Pdf|pdfjs|Html|Docx|Epub|Charset|Zip)-/.test(file))
    expect(converters).toHaveLength(7)
    for (const file of converters) expect(loaded.has(file), file).toBe(false)
    for (const file of loaded)
      expect(readFileSync(join(dist, file), "utf8")).not.toMatch(
        /htmlparser2|getDocumentProxy|unzipWithin|YAMLParseError/
      )
  })
})
