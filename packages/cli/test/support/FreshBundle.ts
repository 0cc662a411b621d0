/**
 * Global setup of the CLI tests: several run `funcpipe` as users do, through the launcher (bin/funcpipe.mjs) and the
 * bundle it starts, which starts in a quarter of the time the sources take. So that they never test stale code, the
 * bundle is built first when it is missing or older than any source file of the packages (`npm ci` builds it, so in
 * CI it is current).
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"

export default function setup(): void {
  const bundler = fileURLToPath(new URL("../../bundle.ts", import.meta.url))
  execFileSync(process.execPath, [bundler, "--if-stale"], { stdio: "inherit" })
}
