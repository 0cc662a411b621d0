/**
 * Global setup of the CLI tests: several run `funcpipe` as users do, through the launcher (bin/funcpipe.mjs) and the
 * bundle it starts, which starts in a quarter of the time the sources take. So that they never test stale code, the
 * bundle is built first when it is missing or older than any source file of the packages (`npm ci` builds it, so in
 * CI it is current).
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../../../", import.meta.url))

const newestSource = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return Math.max(newest, newestSource(path))
    return entry.name.endsWith(".ts") ? Math.max(newest, statSync(path).mtimeMs) : newest
  }, 0)

export default function setup(): void {
  const bundle = join(root, "packages", "cli", "dist", "funcpipe.mjs")
  const packages = join(root, "packages")
  const newest = Math.max(
    ...readdirSync(packages).map((name) => {
      const src = join(packages, name, "src")
      return existsSync(src) ? newestSource(src) : 0
    })
  )
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= newest) return
  execFileSync(process.execPath, [join(root, "packages", "cli", "bundle.ts")], { cwd: root, stdio: "inherit" })
}
