/**
 * The search page end to end in headless Chromium (Debian's `chromium`, driven by playwright-core): type a query, see
 * the expected first result with its words highlighted, open the explanation. A screenshot is kept in
 * `build/artifacts/`.
 */

import { existsSync, mkdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { NodeHttpClient } from "@effect/platform-node"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { defaultChatSettings, layerChatModel } from "@funcpipe/pipeline/models/openai/OpenAiChat"
import { chunkEvent, fakeChatService } from "@funcpipe/test-kit/FakeChat"
import { Effect, Layer } from "effect"
import { type Browser, chromium } from "playwright-core"
import { baseUrl, fixtureIndex, serverOver, shortChunkIndex } from "./Fixture.ts"

const CHROMIUM = "/usr/bin/chromium"
const ARTIFACTS = fileURLToPath(new URL("../../../build/artifacts/", import.meta.url))

// CI installs Chromium (.ci/run) and must run this test; elsewhere it is skipped when Chromium is not installed.
const runs = existsSync(CHROMIUM) || process.env["CI"] !== undefined

/** One headless Chromium for the file's tests, started by the first that needs it (starting one takes seconds). */
let shared: Promise<Browser> | undefined
const browser = () => (shared ??= chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] }))
afterAll(async () => {
  if (shared !== undefined) await (await shared).close()
})

/** A page of the shared Chromium, in a context of its own, 1000 pixels wide and `height` high, closed with the scope. */
const browserPage = (height: number) =>
  Effect.acquireRelease(
    Effect.promise(async () => (await browser()).newContext({ viewport: { width: 1000, height } })),
    (context) => Effect.promise(() => context.close())
  ).pipe(Effect.flatMap((context) => Effect.promise(() => context.newPage())))

describe("the search page", () => {
  it.effect.skipIf(!runs)(
    "answers a query typed into it, highlights the matches and explains the score",
    () =>
      Effect.gen(function* () {
        const file = yield* fixtureIndex
        yield* Effect.gen(function* () {
          const url = yield* baseUrl
          const page = yield* browserPage(800)
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
            marks: ["Saturn", "rings"],
            terms: ["saturn", "ring"]
          })
          assert.isTrue(existsSync(`${ARTIFACTS}search-page.png`))
          assert.deepStrictEqual(elsewhere, [])
        }).pipe(Effect.provide(serverOver(file)))
        // A budget, not a measure: starting Chromium on a busy 2-core machine can take most of half a minute.
      }),
    120_000
  )

  it.effect.skipIf(!runs)(
    "shows one result per document with its title, expands the document's other passages in place, and clears old " +
      "results on an error",
    () =>
      Effect.gen(function* () {
        const file = yield* shortChunkIndex
        yield* Effect.gen(function* () {
          const url = yield* baseUrl
          const page = yield* browserPage(900)
          const found = yield* Effect.promise(async () => {
            await page.goto(`${url}/`)
            await page.getByText("3 documents").waitFor()
            await page.fill("#q", "polaris stars")
            await page.check("#group")
            // Enter in the mode's list submits, as in any other field.
            await page.selectOption("#mode", "lexical")
            await page.press("#mode", "Enter")
            const first = page.locator("li.result").first()
            await first.waitFor()
            const grouped = {
              docs: await page.locator("li.result .doc").allTextContents(),
              titles: await page.locator("li.result .title").allTextContents(),
              more: await first.locator("button.more").textContent(),
              dir: await first.locator(".text").first().getAttribute("dir"),
              section: await first.locator(".section").first().textContent(),
              passage: await first.locator(".text").first().textContent(),
              source: await first.locator("a.source").textContent()
            }
            // The source link opens the document as written, fetched with the page's token.
            const [popup] = await Promise.all([page.waitForEvent("popup"), first.locator("a.source").click()])
            // The tab opens at once (blank) and shows the text when it has been fetched.
            await popup.waitForURL(/^blob:/)
            await popup.waitForLoadState()
            const opened = await popup.locator("body").textContent()
            await popup.close()
            await first.locator("button.more").click()
            await first.locator(".more-list li").first().waitFor()
            const expanded = await first.locator(".more-list li .span").allTextContents()
            mkdirSync(ARTIFACTS, { recursive: true })
            await page.screenshot({ path: `${ARTIFACTS}search-page-grouped.png`, fullPage: true })
            // A failing search leaves no results of the previous one on the page (the server's answer is replaced by an
            // error, as when the index has gone away).
            await page.route("**/v1/query", (route) =>
              route.fulfill({
                status: 503,
                contentType: "application/json",
                body: JSON.stringify({ _tag: "IndexUnavailable", message: "there is no index to answer from" })
              })
            )
            await page.fill("#q", "polaris")
            await page.click("button[type=submit]")
            await page.locator("#message.error").waitFor()
            const afterError = await page.locator("li.result").count()
            const favicon = await page.locator("link[rel=icon]").count()
            return { ...grouped, expanded, afterError, favicon, opened }
          })
          assert.deepStrictEqual(found.docs, ["polaris.md", "orion.md"])
          assert.deepStrictEqual(found.titles, ["Finding Polaris", "Orion"])
          assert.match(found.more ?? "", /^also in this document: \d+ more passages?$/)
          const more = Number(/(\d+) more/.exec(found.more ?? "")![1])
          assert.strictEqual(found.expanded.length, more)
          assert.strictEqual(found.dir, "auto")
          // The passage as written (capitals kept, markup gone), under the headings it sits in.
          assert.strictEqual(found.section, "Finding Polaris › From the Big Dipper")
          assert.match(found.passage ?? "", /Polaris/)
          assert.notMatch(found.passage ?? "", /[#*]/)
          assert.match(found.source ?? "", /\/notes\/polaris\.md$/)
          assert.match(found.opened ?? "", /^# Finding Polaris\s+## From the \*Big Dipper\*/)
          assert.strictEqual(found.afterError, 0)
          assert.strictEqual(found.favicon, 1)
        }).pipe(Effect.provide(serverOver(file, { linkSources: true })))
      }),
    120_000
  )

  it.effect.skipIf(!runs)(
    "asks the server's chat model: streams the answer, then links each citation to its numbered source",
    () =>
      Effect.gen(function* () {
        const file = yield* fixtureIndex
        const fake = yield* fakeChatService(() => ({
          events: [chunkEvent("Cassini orbited Saturn "), chunkEvent("for thirteen years [1], not [2, 7]."), "[DONE]"]
        }))
        const chat = layerChatModel("test-chat", defaultChatSettings(fake.baseUrl)).pipe(
          Layer.provide(NodeHttpClient.layerNodeHttp)
        )
        yield* Effect.gen(function* () {
          const url = yield* baseUrl
          const page = yield* browserPage(800)
          const shown = yield* Effect.promise(async () => {
            await page.goto(`${url}/`)
            await page.getByText("4 documents").waitFor()
            await page.fill("#q", "How long did Cassini orbit Saturn?")
            const [asked] = await Promise.all([page.waitForRequest("**/v1/ask"), page.click("#ask")])
            await page.locator("#sources li").first().waitFor()
            const answer = {
              accept: asked.headers()["accept"],
              text: await page.locator("#answer-text").textContent(),
              cites: await page.locator("#answer-text a.cite").allTextContents(),
              unknown: await page.locator("#answer-text .unknown").allTextContents(),
              first: await page.locator("#sources li").first().locator(".doc").textContent()
            }
            await page.locator("#answer-text a.cite").first().click()
            const hash = await page.evaluate(() => location.hash)
            mkdirSync(ARTIFACTS, { recursive: true })
            await page.screenshot({ path: `${ARTIFACTS}search-page-ask.png`, fullPage: true })
            return { ...answer, hash }
          })
          assert.deepStrictEqual(shown, {
            accept: "text/event-stream",
            text: "Cassini orbited Saturn for thirteen years [1], not [2, 7].",
            cites: ["1", "2"],
            unknown: ["7"],
            first: "cassini",
            hash: "#source-1"
          })
        }).pipe(Effect.provide(serverOver(file, { chat })))
      }),
    120_000
  )

  it.effect.skipIf(!runs)(
    "and the API reference at /docs load nothing from elsewhere: they work offline",
    () =>
      Effect.gen(function* () {
        const file = yield* fixtureIndex
        yield* Effect.gen(function* () {
          const url = yield* baseUrl
          const page = yield* browserPage(900)
          const elsewhere: Array<string> = []
          page.on("request", (request) => {
            const at = request.url()
            if (!at.startsWith(url) && !at.startsWith("data:") && !at.startsWith("blob:")) elsewhere.push(at)
          })
          const shown = yield* Effect.promise(async () => {
            await page.goto(`${url}/docs`, { waitUntil: "networkidle" })
            await page.getByText("/v1/query").first().waitFor()
            mkdirSync(ARTIFACTS, { recursive: true })
            await page.screenshot({ path: `${ARTIFACTS}api-docs.png` })
            return await page.title()
          })
          assert.isString(shown)
          assert.deepStrictEqual(elsewhere, [])
        }).pipe(Effect.provide(serverOver(file)))
      }),
    120_000
  )
})
