/** The API in process (typed client, no socket) and over a real loopback socket, with the typed client and raw HTTP. */

import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { answerJson } from "@funcpipe/domain/Answer"
import { Alpha } from "@funcpipe/domain/Config"
import { FuncPipeApi } from "@funcpipe/domain/http/Api"
import { eq } from "@funcpipe/domain/Rule"
import { parseRule } from "@funcpipe/domain/RuleParser"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { indexPaths } from "@funcpipe/pipeline/programs/IndexRun"
import { queryIndex } from "@funcpipe/pipeline/programs/QueryIndex"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { layerSqlite } from "@funcpipe/pipeline/store/sqlite/SqliteIndexStore"
import { Effect, FileSystem, Layer, Result } from "effect"
import { HttpServer } from "effect/http"
import { HttpApiClient, HttpApiTest, OpenApi } from "effect/http-api"
import { handlersLayer } from "../src/Handlers.ts"
import { LiveIndex } from "../src/LiveIndex.ts"
import { baseUrl, fixtureIndex, send, serverOver, shortChunkIndex } from "./Fixture.ts"

/** The handlers over `file` without a server, for `HttpApiTest`. */
const inProcess = (file: string, writable = false, embedder: Layer.Layer<Embedder> = Embedder.layerLocalSha256) =>
  Layer.mergeAll(handlersLayer({ writable }), HttpServer.layerServices).pipe(
    Layer.provideMerge(LiveIndex.layer({ pollMillis: 0 })),
    Layer.provideMerge(Layer.mergeAll(layerSqlite(file), embedder, NodeServices.layer))
  )

/** The index's model, except that a query of digits only has no direction (as for word vectors, which know none). */
const digitsBlind = Layer.effect(
  Embedder,
  Effect.map(Effect.service(Embedder), (local) =>
    Embedder.of({
      ...local,
      embedMany: (texts) =>
        Effect.map(local.embedMany(texts), (embeddings) =>
          embeddings.map((e, i) =>
            /^[\d ]+$/.test(texts[i]!) ? { ...e, vector: e.vector.map(() => 0) as unknown as typeof e.vector } : e
          )
        )
    })
  )
).pipe(Layer.provide(Embedder.layerLocalSha256))

describe("the API in process", () => {
  it.effect("answers a query exactly as the query program does, and a batch from one snapshot", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const client = yield* HttpApiTest.groups(FuncPipeApi, ["search", "index"])
        const answer = yield* client.search.query({ payload: { text: "Saturn rings", top_k: 2, explain: true } })
        const direct = yield* queryIndex("Saturn rings", 2, { explain: true })
        assert.deepStrictEqual(answer, answerJson(direct))
        assert.deepStrictEqual(
          answer.results.map((r) => r.doc_id),
          ["cassini", "voyager-1"]
        )
        assert.isNotNull(answer.results[0]!.explain?.bm25)

        const batch = yield* client.search.batch({
          payload: { queries: [{ text: "moon" }, { text: "polaris", top_k: 1 }] }
        })
        assert.deepStrictEqual(
          batch.answers.map((a) => a.results[0]?.doc_id),
          ["sky/moon.md", "sky/polaris.md"]
        )

        const status = yield* client.index.status()
        assert.strictEqual(status.ready, true)
        assert.strictEqual(status.manifest?.documents, 4)
        assert.isNotNull(status.snapshot_at)

        const stored = yield* client.index.document({ params: { id: "sky/moon.md" } })
        assert.strictEqual(stored.title, "The Moon")
        assert.strictEqual(stored.chunks.length, 1)
        const missing = yield* Effect.flip(client.index.document({ params: { id: "pluto" } }))
        assert.strictEqual(missing._tag, "DocumentNotFound")
      }).pipe(Effect.provide(inProcess(file)))
    })
  )

  it.effect("groups results by document when asked, as the query program does", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const client = yield* HttpApiTest.groups(FuncPipeApi, ["search"])
        const answer = yield* client.search.query({ payload: { text: "Saturn moons", top_k: 2, group: "doc" } })
        const direct = yield* queryIndex("Saturn moons", 2, { group: "doc" })
        assert.deepStrictEqual(answer, answerJson(direct))
        assert.strictEqual(answer.group, "doc")
        assert.deepStrictEqual(
          answer.results.map((r) => r.more_in_document),
          direct.more
        )
        const ungrouped = yield* client.search.query({ payload: { text: "Saturn moons", top_k: 2 } })
        assert.notProperty(ungrouped, "group")
        assert.notProperty(ungrouped.results[0]!, "more_in_document")
      }).pipe(Effect.provide(inProcess(file)))
    })
  )

  it.effect("filters with where and fuses as fusion and alpha say", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const client = yield* HttpApiTest.groups(FuncPipeApi, ["search"])
        const all = yield* client.search.query({ payload: { text: "Saturn rings", top_k: 4 } })
        const where = Result.getOrThrow(parseRule("doc_id != cassini"))
        const filtered = yield* client.search.query({ payload: { text: "Saturn rings", top_k: 4, where } })
        assert.include(
          all.results.map((r) => r.doc_id),
          "cassini"
        )
        // Exact filtered top k: the unfiltered ranking without the filtered-out document.
        assert.deepStrictEqual(
          filtered.results.map((r) => [r.doc_id, r.score]),
          all.results.filter((r) => r.doc_id !== "cassini").map((r) => [r.doc_id, r.score])
        )
        const rrf = yield* client.search.query({
          payload: {
            text: "Saturn rings",
            top_k: 1,
            mode: "hybrid",
            fusion: "rrf",
            alpha: Alpha.make(0.5),
            explain: true
          }
        })
        assert.strictEqual(rrf.results[0]!.explain?.fusion?.method, "rrf")
      }).pipe(Effect.provide(inProcess(file)))
    })
  )

  it.effect("highlights the words whose terms match the query's", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const answer = yield* Effect.flatMap(HttpApiTest.groups(FuncPipeApi, ["search"]), (client) =>
        client.search.query({ payload: { text: "orbiting ring", top_k: 1, highlight: true } })
      ).pipe(Effect.provide(inProcess(file)))
      const top = answer.results[0]!
      const points = Array.from(top.text)
      assert.deepStrictEqual(
        top.highlights?.map(([s, e]) => points.slice(s, e).join("")),
        ["orbited", "rings"]
      )
    })
  )

  it.effect("refuses writes unless started writable, and writes through the index run's stages when it is", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      const readOnly = yield* Effect.flip(
        Effect.flatMap(HttpApiTest.groups(FuncPipeApi, ["documents"]), (client) =>
          client.documents.put({ payload: { documents: [{ doc_id: "x", text: "x" }] } })
        ).pipe(Effect.provide(inProcess(file)))
      )
      assert.strictEqual(readOnly._tag, "WritesDisabled")
      yield* Effect.gen(function* () {
        const client = yield* HttpApiTest.groups(FuncPipeApi, ["documents", "search"])
        const put = yield* client.documents.put({
          payload: {
            documents: [{ doc_id: "comet", title: "Comets", text: "A comet has an icy nucleus and a long tail." }]
          }
        })
        assert.deepStrictEqual([put.added, put.documents], [["comet"], 5])
        const found = yield* client.search.query({ payload: { text: "icy nucleus", top_k: 1 } })
        assert.strictEqual(found.results[0]?.doc_id, "comet", "answered from the new state at once")
        const twice = yield* Effect.flip(
          client.documents.put({
            payload: {
              documents: [
                { doc_id: "a", text: "a" },
                { doc_id: "a", text: "b" }
              ]
            }
          })
        )
        assert.strictEqual(twice._tag, "InvalidRequest")
        // Categories as a list, as JSONL takes them, or as one string: the same labels either way.
        yield* client.documents.put({
          payload: {
            documents: [
              { doc_id: "listed", text: "Listed labels", categories: ["astro-ph.GA", "draft notes"] },
              { doc_id: "joined", text: "Joined labels", categories: "astro-ph.GA" }
            ]
          }
        })
        const labelled = yield* client.search.query({
          payload: { text: "labels", top_k: 5, where: eq("categories", "astro-ph.GA") }
        })
        assert.deepStrictEqual(labelled.results.map((r) => r.doc_id).sort(), ["joined", "listed"])
        const drafts = yield* client.search.query({
          payload: { text: "labels", where: eq("categories", "draft notes") }
        })
        assert.deepStrictEqual(
          drafts.results.map((r) => r.doc_id),
          ["listed"]
        )
        yield* client.documents.delete({ params: { id: "listed" } })
        yield* client.documents.delete({ params: { id: "joined" } })
        const deleted = yield* client.documents.delete({ params: { id: "comet" } })
        assert.deepStrictEqual(deleted, { deleted: "comet", documents: 4, chunks: 4 })
        const again = yield* Effect.flip(client.documents.delete({ params: { id: "comet" } }))
        assert.strictEqual(again._tag, "DocumentNotFound")
      }).pipe(Effect.provide(inProcess(file, true)))
    })
  )
})

describe("a query the model finds nothing in", () => {
  it.effect("is answered by its words, with a note, and never fails the batch it is in", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const client = yield* HttpApiTest.groups(FuncPipeApi, ["search"])
        const batch = yield* client.search.batch({
          payload: {
            queries: [
              { text: "1977", mode: "hybrid" },
              { text: "moon", mode: "hybrid" }
            ]
          }
        })
        const [digits, words] = batch.answers
        assert.strictEqual(digits?.mode, "lexical")
        assert.match(digits?.note ?? "", /answered in lexical mode, by its words alone/)
        assert.strictEqual(digits?.results[0]?.doc_id, "voyager-1")
        assert.strictEqual(words?.mode, "hybrid")
        assert.isUndefined(words?.note)
      }).pipe(Effect.provide(inProcess(file, false, digitsBlind)))
    })
  )
})

describe("the API over a socket", () => {
  it.effect("serves the typed client, the OpenAPI document, the docs page and the search page", () =>
    Effect.gen(function* () {
      const file = yield* fixtureIndex
      yield* Effect.gen(function* () {
        const client = yield* HttpApiClient.make(FuncPipeApi, { baseUrl: yield* baseUrl })
        const answer = yield* client.search.query({ payload: { text: "interstellar", top_k: 1 } })
        assert.strictEqual(answer.results[0]?.doc_id, "voyager-1")
        assert.deepStrictEqual(yield* client.health(), { status: "ok" })
        const slashed = yield* client.index.document({ params: { id: "sky/polaris.md" } })
        assert.strictEqual(slashed.doc_id, "sky/polaris.md")

        const spec = yield* send("GET", "/openapi.json")
        assert.deepStrictEqual(spec.body, JSON.parse(JSON.stringify(OpenApi.fromApi(FuncPipeApi))))
        assert.deepStrictEqual(spec.body.paths["/v1/query"].post.responses["200"].content["application/json"].schema, {
          $ref: "#/components/schemas/QueryResponse"
        })
        // Scores are plain numbers in the document (not a union with "NaN"/"Infinity" strings).
        assert.deepStrictEqual(spec.body.components.schemas.QueryResult.properties.score.type, "number")
        const docs = yield* send("GET", "/docs")
        assert.strictEqual(docs.status, 200)
        assert.include(docs.body, "/v1/query/batch")
        assert.notMatch(
          docs.body,
          /<script[^>]+src=|<link[^>]+href="http/,
          "the docs page loads nothing from elsewhere"
        )
        const page = yield* send("GET", "/")
        assert.strictEqual(page.status, 200)
        assert.include(page.body, "<title>FuncPipe search</title>")
        assert.notMatch(page.body, /<script[^>]+src=|<link[^>]+href="http/, "the page loads nothing from elsewhere")
      }).pipe(Effect.provide(serverOver(file)))
    })
  )

  it.effect("hands out a document's text as written only when started with --link-sources", () =>
    Effect.gen(function* () {
      const file = yield* shortChunkIndex
      const ask = (path: string) =>
        Effect.gen(function* () {
          const text = yield* send("GET", path)
          const status = yield* send("GET", "/v1/status")
          return {
            status: text.status,
            body: text.body,
            type: text.headers["content-type"],
            policy: [text.headers["content-security-policy"], text.headers["x-content-type-options"]],
            links: status.body.link_sources
          }
        })
      const off = yield* ask("/v1/documents/polaris.md/text").pipe(Effect.provide(serverOver(file)))
      assert.deepStrictEqual([off.status, off.body._tag, off.links], [403, "SourcesOff", false])
      assert.include(off.body.message, "--link-sources")
      const on = yield* ask("/v1/documents/polaris.md/text").pipe(
        Effect.provide(serverOver(file, { linkSources: true }))
      )
      // The file as written: its Markdown, capitals and line breaks, not the cleaned text.
      assert.deepStrictEqual([on.status, on.type, on.links], [200, "text/plain; charset=utf-8", true])
      // Shown as text, never run: whatever HTML a document holds stays inert.
      assert.deepStrictEqual(on.policy, ["sandbox", "nosniff"])
      assert.isTrue(String(on.body).startsWith("# Finding Polaris\n\n## From the *Big Dipper*\n"))
      const missing = yield* ask("/v1/documents/pluto.md/text").pipe(
        Effect.provide(serverOver(file, { linkSources: true }))
      )
      assert.deepStrictEqual([missing.status, missing.body._tag], [404, "DocumentNotFound"])
    })
  )

  it.effect("answers with a PDF result's page and an HTML result's section", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "funcpipe-server-formats-" })
      yield* fs.makeDirectory(`${dir}/docs`)
      const report = fileURLToPath(new URL("../../pipeline/test/fixtures/pdf/report.pdf", import.meta.url))
      yield* fs.copyFile(report, `${dir}/docs/report.pdf`)
      yield* fs.writeFileString(
        `${dir}/docs/tides.html`,
        "<title>Tides</title><nav>Home</nav><main><h1>Tides</h1><h2>Neap tides</h2><p>Neap tides are small.</p></main>"
      )
      const file = `${dir}/index.db`
      yield* indexPaths([`${dir}/docs`]).pipe(
        Effect.provide(Layer.mergeAll(layerSqlite(file), Embedder.layerLocalSha256, DocumentSource.layer))
      )
      const answers = yield* Effect.gen(function* () {
        const pdf = yield* send("POST", "/v1/query", { text: "seismometer", top_k: 1 })
        const html = yield* send("POST", "/v1/query", { text: "neap", top_k: 1 })
        return [pdf.body.results[0], html.body.results[0]]
      }).pipe(Effect.provide(serverOver(file)))
      assert.deepStrictEqual([answers[0].doc_id, answers[0].page, answers[0].section], ["report.pdf", 3, []])
      assert.deepStrictEqual([answers[1].doc_id, answers[1].section], ["tides.html", ["Tides"]])
      assert.notProperty(answers[1], "page")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))
  )
})
