import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { version } from "../src/Cli.ts"
import { launcher } from "./support/Launcher.ts"

const bundle = fileURLToPath(new URL("../dist/funcpipe.mjs", import.meta.url))
const run = (...args: ReadonlyArray<string>) => spawnSync(process.execPath, [...args], { encoding: "utf8" })

describe("the launcher", () => {
  it("answers --version itself exactly as the CLI does", () => {
    const fast = run(launcher, "--version")
    const full = run(bundle, "--version")
    expect(full.status).toBe(0)
    expect(full.stdout).toBe(`funcpipe v${version}\n`)
    expect(fast.status).toBe(0)
    expect(fast.stdout).toBe(full.stdout)
    expect(fast.stderr).toBe("")
  })
})
