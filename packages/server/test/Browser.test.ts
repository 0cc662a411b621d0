/**
 * The search page end to end in headless Chromium (Debian's `chromium`, driven by playwright-core): type a query, see
 * the expected first result with its words highlighted, open the explanation. A screenshot is kept in
 * `build/artifacts/`.
 */

import { existsSync, mkdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { chromium } from "playwright-core"
import { baseUrl, fixtureIndex, serverOver } from "./Fixture.ts"

const CHROMIUM = "/usr/bin/chromium"
const ARTIFACTS = fileURLToPath(new URL("../../../build/artifacts/", import.meta.url))

// CI installs Chromium (.ci/run) and must run this test; elsewhere it is skipped when Chromium is not installed.
const runs = existsSync(CHROMIUM) || process.env["CI"] !== undefined

describe("the search page", () => {
  it.effect.skipIf(!runs)(
    "answers a query typed into it, highlights the matches and explains the score",
    () =>
      Effect.gen(function* () {
        const file = yield* fixtureIndex
        yield* Effect.gen(function* () {
          const url = yield* baseUrl
          const browser = yield* Effect.acquireRelease(
            Effect.promise(() => chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] })),
            (browser) => Effect.promise(() => browser.close())
          )
          const page = yield* Effect.promise(() => browser.newPage({ viewport: { width: 1000, height: 800 } }))
          // The page may only talk to this server: no CDN, nothing from elsewhere.
          const elsewhere: Array<string> = []
          page.on("request", (request) => {
            if (!request.url().startsWith(url)) elsewhere.push(request.url())
          })
          const found = yield* Effect.promise(async () => {
            await page.goto(`${url}/`)
            await page.getByText("4 documents").waitFor()
            await page.fill("#q", "Saturn rings")
            await page.selectOption("#mode", "lexical")
            await page.fill("#topk", "3")
            await page.click("button[type=submit]")
            const first = page.locator("li.result").first()
            await first.waitFor()
            const summary = {
              count: await page.locator("li.result").count(),
              rank: await first.locator(".rank").textContent(),
              doc: await first.locator(".doc").textContent(),
              span: await first.locator(".span").textContent(),
              marks: await first.locator("mark").allTextContents()
            }
            await first.getByText("explain score").click()
            const table = first.locator("table.explain")
            await table.waitFor({ state: "visible" })
            const terms = await table.locator("td:first-child").allTextContents()
            mkdirSync(ARTIFACTS, { recursive: true })
            await page.screenshot({ path: `${ARTIFACTS}search-page.png`, fullPage: true })
            return { ...summary, terms }
          })
          assert.deepStrictEqual(found, {
            count: 2,
            rank: "#1",
            doc: "cassini",
            span: "[0, 74)",
            marks: ["saturn", "rings"],
            terms: ["saturn", "ring"]
          })
          assert.isTrue(existsSync(`${ARTIFACTS}search-page.png`))
          assert.deepStrictEqual(elsewhere, [])
        }).pipe(Effect.provide(serverOver(file)))
        // A budget, not a measure: starting Chromium on a busy 2-core machine can take most of half a minute.
      }),
    120_000
  )
})
