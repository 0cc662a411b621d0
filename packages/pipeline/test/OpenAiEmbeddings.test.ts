/** The `openai:` provider against a fake `/v1/embeddings` on 127.0.0.1: batching, retries, timeouts and bad answers. */

import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { inspect } from "node:util"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { listenOnLoopback } from "@funcpipe/test-kit/Loopback"
import { Clock, ConfigProvider, Duration, Effect, Fiber, Layer, Metric, Queue, Redacted, Result } from "effect"
import { EmbeddingModel } from "effect/ai"
import { HttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import { Models } from "../src/models/Models.ts"
import * as OpenAi from "../src/models/openai/OpenAiEmbeddings.ts"
import { embeddingRequests } from "../src/platform/Telemetry.ts"

const KEY = "sk-test-3f9c2a-never-shown"

/** What the fake server saw of one request. */
interface Seen {
  readonly auth: string | undefined
  /** Whether the request carried trace headers (traceparent, b3). */
  readonly traced: boolean
  readonly model: string
  readonly input: ReadonlyArray<string>
  readonly dimensions: unknown
}

/** How the fake answers: a status with a JSON or text body, a dropped connection, or no answer at all. */
type Reply =
  | {
      readonly status?: number
      readonly headers?: Record<string, string>
      readonly json?: unknown
      readonly text?: string
    }
  | "drop"
  | "hang"

/** A deterministic vector: the text's length, then fixed numbers. */
const vectorOf = (text: string) => [text.length, 0.5, 1]

/** A correct answer for `input`, `usage` counting one token per text. */
const ok = (input: ReadonlyArray<string>): Reply => ({
  json: {
    object: "list",
    data: input.map((text, index) => ({ object: "embedding", index, embedding: vectorOf(text) })),
    usage: { prompt_tokens: input.length, total_tokens: input.length }
  }
})

/** An answer of `vector` (any JSON) for every text of `input`. */
const vectorsOf = (input: ReadonlyArray<string>, vector: ReadonlyArray<unknown>): Reply => ({
  json: { data: input.map((_, index) => ({ index, embedding: vector })) }
})

/** Answers every request correctly. */
const answerAll = (seen: Seen) => ok(seen.input)

/**
 * A fake `/v1/embeddings` on 127.0.0.1 (port 0), one per test, closed with the test's scope. `reply` gets each
 * request and its number (1, 2, …) and may answer later (a promise). `arrivals` receives each request's number.
 */
const fakeServer = (reply: (seen: Seen, n: number) => Reply | Promise<Reply>) =>
  Effect.gen(function* () {
    const arrivals = yield* Queue.unbounded<number>()
    const seen: Array<Seen> = []
    const answer = (res: ServerResponse, req: IncomingMessage, r: Reply) => {
      if (r === "hang") return
      if (r === "drop") return void req.socket.destroy()
      const body = r.text ?? JSON.stringify(r.json)
      const type = r.text === undefined ? "application/json" : "text/plain"
      res.writeHead(r.status ?? 200, { "content-type": type, ...r.headers })
      res.end(body)
    }
    const server = createServer((req, res) => {
      let raw = ""
      req
        .on("data", (chunk) => (raw += chunk))
        .on("end", () => {
          if (req.url !== "/v1/embeddings") return void res.writeHead(404).end("404 page not found")
          const body = JSON.parse(raw) as { model: string; input: ReadonlyArray<string>; dimensions?: unknown }
          const { dimensions, input, model } = body
          const traced = "traceparent" in req.headers || "b3" in req.headers
          seen.push({ auth: req.headers.authorization, traced, model, input, dimensions })
          const n = seen.length
          Queue.offerUnsafe(arrivals, n)
          void Promise.resolve(reply(seen[n - 1]!, n)).then((r) => answer(res, req, r))
        })
    })
    const port = yield* listenOnLoopback(server)
    return { baseUrl: `http://127.0.0.1:${port}/v1`, seen, arrivals }
  })

/** Settings for tests: the fake's address, a key, 3 dimensions, small batches, a distinctive timeout. */
const settings = (baseUrl: string, more: Partial<OpenAi.OpenAiSettings> = {}): OpenAi.OpenAiSettings => ({
  ...OpenAi.defaultSettings,
  baseUrl,
  apiKey: Redacted.make(KEY),
  keySource: "FUNCPIPE_EMBED_KEY",
  dimensions: 3,
  batchInputs: 4,
  timeoutMillis: 1_000_000,
  retries: 2,
  ...more
})

/** The embedder of `openai:test-embed` at the fake, made with `more` settings. */
const embedderAt = (baseUrl: string, more: Partial<OpenAi.OpenAiSettings> = {}) =>
  OpenAi.makeEmbedder("test-embed", settings(baseUrl, more))

/**
 * A clock that reports every sleep (in milliseconds) before sleeping on the test clock, so a test can wait until the
 * provider waits, then move time on by exactly that much. Request timeouts (1,000,000 ms here) are sleeps too.
 */
const recordSleeps = Effect.gen(function* () {
  const clock = yield* Clock.Clock
  const sleeps = yield* Queue.unbounded<number>()
  const recording: Clock.Clock = {
    ...clock,
    sleep: (duration) => Effect.andThen(Queue.offer(sleeps, Duration.toMillis(duration)), clock.sleep(duration))
  }
  /** The next wait that is not a request timeout. */
  const nextWait: Effect.Effect<number> = Effect.flatMap(Queue.take(sleeps), (ms) =>
    ms === 1_000_000 ? nextWait : Effect.succeed(ms)
  )
  return { sleeps, nextWait, provide: Effect.provideService(Clock.Clock, recording) }
})

/** Runs `effect` forked under the recording clock, lets `waits` retry waits pass, and returns its exit's result. */
const withWaits = <A, E>(effect: Effect.Effect<A, E>, waits: number) =>
  Effect.gen(function* () {
    const clock = yield* recordSleeps
    const fiber = yield* Effect.forkChild(Effect.result(clock.provide(effect)))
    const waited: Array<number> = []
    for (let i = 0; i < waits; i++) {
      const ms = yield* clock.nextWait
      waited.push(ms)
      yield* TestClock.adjust(ms)
    }
    return { result: yield* Fiber.join(fiber), waited }
  })

/** The client bin.ts provides. */
const HttpLayer = Layer.merge(NodeHttpClient.layerNodeHttpOptions({ keepAlive: true }), NodeServices.layer)

/** The error of a result that must be a failure. */
const failureIn = <A, E>(result: Result.Result<A, E>): E =>
  Result.isFailure(result) ? result.failure : assert.fail("expected a failure, got a success")

/** The failure of `effect`, which must fail with an `EmbedFailure`, and the sentence a user reads. */
const failureOf = <A, R>(effect: Effect.Effect<A, { readonly _tag: string; readonly message: string }, R>) =>
  Effect.map(Effect.flip(effect), (error) => ({ tag: error._tag, message: error.message }))

describe("OpenAiEmbeddings, pure parts", () => {
  it("estimates tokens from UTF-8 bytes, erring large", () => {
    assert.strictEqual(OpenAi.approxTokens(""), 0)
    assert.strictEqual(OpenAi.approxTokens("abc"), 1)
    assert.strictEqual(OpenAi.approxTokens("abcd"), 2)
    assert.strictEqual(OpenAi.approxTokens("é"), 1) // 2 bytes
    assert.strictEqual(OpenAi.approxTokens("日本語"), 3) // 9 bytes
    assert.strictEqual(OpenAi.approxTokens("😀😀😀"), 4) // 12 bytes
  })

  it("plans batches by count and by approximate tokens; an oversized text goes alone", () => {
    const texts = ["aaa", "bbb", "ccc", "ddd", "eee"]
    assert.deepStrictEqual(OpenAi.planBatches(texts, 2, 1000), [
      [0, 2],
      [2, 4],
      [4, 5]
    ])
    assert.deepStrictEqual(OpenAi.planBatches(texts, 10, 3), [
      [0, 3],
      [3, 5]
    ])
    assert.deepStrictEqual(OpenAi.planBatches(["a", "x".repeat(30), "b"], 10, 5), [
      [0, 1],
      [1, 2],
      [2, 3]
    ])
    assert.deepStrictEqual(OpenAi.planBatches([], 10, 5), [])
  })

  it("reads Retry-After as seconds, as an HTTP date, and OpenAI's retry-after-ms", () => {
    assert.strictEqual(OpenAi.retryAfterMillis({ "retry-after": "7" }, 0), 7000)
    assert.strictEqual(OpenAi.retryAfterMillis({ "retry-after": "0.5" }, 0), 500)
    assert.strictEqual(OpenAi.retryAfterMillis({ "retry-after-ms": "1200", "retry-after": "2" }, 0), 1200)
    const now = Date.parse("Wed, 21 Oct 2015 07:28:00 GMT")
    assert.strictEqual(OpenAi.retryAfterMillis({ "retry-after": "Wed, 21 Oct 2015 07:28:30 GMT" }, now), 30_000)
    assert.strictEqual(OpenAi.retryAfterMillis({ "retry-after": "soon" }, 0), undefined)
    assert.strictEqual(OpenAi.retryAfterMillis({}, 0), undefined)
  })

  it("backs off exponentially with jitter, capped, never below Retry-After", () => {
    const s = { backoffMillis: 500, maxBackoffMillis: 3000 }
    const delays = (random: number, tries: ReadonlyArray<number>) =>
      tries.map((t) => OpenAi.retryDelayMillis(t, undefined, random, s))
    assert.deepStrictEqual(delays(0, [1, 2, 3, 4, 5]), [250, 500, 1000, 1500, 1500])
    assert.deepStrictEqual(delays(0.999999, [1, 2, 3]), [500, 1000, 2000])
    assert.strictEqual(OpenAi.retryDelayMillis(1, 7000, 0.5, s), 7000)
    assert.strictEqual(OpenAi.retryDelayMillis(4, 100, 0.5, s), 2250)
  })

  it("decodes answers in index order and names what is wrong with a bad one", () => {
    const body = {
      data: [
        { index: 1, embedding: [3, 4] },
        { index: 0, embedding: [1, 2] }
      ]
    }
    const answer = OpenAi.decodeAnswer(body, 2, 2)
    assert.deepStrictEqual(Result.getOrThrow(answer), {
      vectors: [
        [1, 2],
        [3, 4]
      ],
      tokens: undefined
    })
    const problem = (body: unknown, count = 2, dims: number | undefined = 2) =>
      Result.match(OpenAi.decodeAnswer(body, count, dims), { onFailure: (f) => f, onSuccess: () => "decoded" })
    assert.strictEqual(problem({ error: "nope" }), 'it is not an embeddings response (there is no "data" list)')
    assert.strictEqual(problem({ data: [{ embedding: [1, 2] }] }), "it holds 1 vector for 2 texts")
    assert.strictEqual(
      problem({
        data: [
          { index: 0, embedding: [1, 2] },
          { index: 0, embedding: [1, 2] }
        ]
      }),
      'the "index" fields of its vectors do not number the texts 0, 1, 2, …'
    )
    assert.strictEqual(
      problem({ data: [{ embedding: [1, 2] }, { embedding: [1, 2, 3] }] }),
      "the vector of text 1 has 3 numbers where the model's vectors have 2"
    )
    assert.strictEqual(
      problem({ data: [{ embedding: [1, 2] }, { embedding: [1, 2, 3] }] }, 2, undefined),
      "the vector of text 1 has 3 numbers where the model's vectors have 2"
    )
    assert.strictEqual(
      problem({ data: [{ embedding: "AAAA" }, { embedding: [1] }] }),
      "the vector of text 0 is not a list of numbers"
    )
    assert.strictEqual(
      problem({ data: [{ embedding: [1, "NaN"] }, { embedding: [1, 2] }] }),
      'the vector of text 0 holds "NaN" at position 1, not a finite number'
    )
    assert.strictEqual(
      problem({ data: [{ embedding: [1, 2] }, { embedding: [null, 2] }] }),
      "the vector of text 1 holds null at position 0, not a finite number"
    )
  })

  it("checks the settings from the environment and the command line", () => {
    const fails = (input: OpenAi.SettingsInput, flags: OpenAi.ServiceFlags = {}) =>
      Result.match(OpenAi.settingsFrom(input, flags), { onFailure: (f) => f, onSuccess: () => "accepted" })
    const ok = (input: OpenAi.SettingsInput, flags: OpenAi.ServiceFlags = {}) =>
      Result.getOrThrow(OpenAi.settingsFrom(input, flags))

    assert.strictEqual(ok({}).baseUrl, "https://api.openai.com/v1")
    assert.strictEqual(ok({ url: "http://localhost:11434/v1/" }).baseUrl, "http://localhost:11434/v1")
    assert.strictEqual(ok({ url: "http://a:1/v1" }, { embedUrl: "http://b:2/v1" }).baseUrl, "http://b:2/v1")
    assert.strictEqual(ok({ dimensions: "256" }).dimensions, 256)
    assert.strictEqual(ok({ dimensions: "256" }, { dimensions: 64 }).dimensions, 64)
    assert.strictEqual(ok({ timeout: "2.5", batch: "8", retries: "0" }).timeoutMillis, 2500)
    assert.strictEqual(ok({ openAiKey: Redacted.make("k1") }).keySource, "OPENAI_API_KEY")
    assert.strictEqual(ok({ key: Redacted.make("k2"), openAiKey: Redacted.make("k1") }).keySource, "FUNCPIPE_EMBED_KEY")
    assert.strictEqual(ok({ key: Redacted.make(""), openAiKey: Redacted.make("k1") }).keySource, "OPENAI_API_KEY")
    assert.strictEqual(ok({ key: Redacted.make(" ") }).apiKey, undefined)

    assert.include(fails({ url: "localhost:11434" }), 'must be an http:// or https:// address, not "localhost:11434"')
    assert.include(fails({}, { embedUrl: "no url" }), "(--embed-url or FUNCPIPE_EMBED_URL) must be an http://")
    assert.include(fails({ url: "http://me:pw@host/v1" }), "must not hold a user name or password")
    assert.include(fails({ url: "http://host/v1?x=1" }), "must not have a ?query or #fragment")
    assert.strictEqual(fails({ batch: "0" }), 'FUNCPIPE_EMBED_BATCH must be a whole number from 1 to 2048, not "0"')
    assert.strictEqual(fails({ batch: "all" }), 'FUNCPIPE_EMBED_BATCH must be a whole number from 1 to 2048, not "all"')
    assert.include(fails({ batchTokens: "5" }), "FUNCPIPE_EMBED_BATCH_TOKENS must be a whole number from 100")
    assert.include(fails({ concurrency: "-1" }), "FUNCPIPE_EMBED_CONCURRENCY must be a whole number from 1 to 64")
    assert.include(fails({ retries: "1.5" }), "FUNCPIPE_EMBED_RETRIES must be a whole number from 0 to 20")
    assert.include(fails({ dimensions: "0" }), "FUNCPIPE_EMBED_DIMENSIONS must be a whole number from 1 to 65536")
    assert.include(fails({ timeout: "0" }), "FUNCPIPE_EMBED_TIMEOUT must be a number of seconds above 0")
    assert.include(fails({ timeout: "1m" }), "FUNCPIPE_EMBED_TIMEOUT must be a number of seconds above 0")
  })
})

describe("OpenAiEmbeddings against a fake service", () => {
  it.effect("splits by count, keeps order, sends the key and model, and counts requests and tokens", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(answerAll)
      const embedder = yield* embedderAt(fake.baseUrl)
      const texts = Array.from({ length: 10 }, (_, i) => "x".repeat(i + 1))
      const embeddings = yield* embedder.embedMany(texts)
      assert.deepStrictEqual(
        embeddings.map((e) => e.vector[0]),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
      )
      assert.strictEqual(embeddings[0]!.model, "openai:test-embed")
      assert.deepStrictEqual(fake.seen.map((s) => s.input.length).sort(), [2, 4, 4])
      const { auth, dimensions, model, traced } = fake.seen[0]!
      assert.deepStrictEqual([auth, model, dimensions, traced], [`Bearer ${KEY}`, "test-embed", 3, false])
      assert.deepStrictEqual(yield* embedder.usage, { requests: 3, inputTokens: 10 })
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("splits by approximate tokens", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(answerAll)
      const embedder = yield* embedderAt(fake.baseUrl, { batchInputs: 100, batchTokens: 100 })
      // 150 bytes = 50 tokens each: two fit in a request; the 600-byte text goes alone.
      const texts = ["a".repeat(150), "b".repeat(150), "c".repeat(150), "d".repeat(600), "e".repeat(150)]
      yield* embedder.embedMany(texts)
      assert.deepStrictEqual(fake.seen.map((s) => s.input.map((t) => t[0]).join("")).sort(), ["ab", "c", "d", "e"])
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("keeps at most `concurrency` requests in flight", () =>
    Effect.gen(function* () {
      // The server holds every request until the test, having seen two arrive, answers them. The client counts the
      // requests it has started and not yet got an answer to: no more than two may be open at once.
      const held: Array<() => void> = []
      const fake = yield* fakeServer(
        (seen) => new Promise<Reply>((resolve) => held.push(() => resolve(ok(seen.input))))
      )
      let open = 0
      let most = 0
      const counting = HttpClient.transform(yield* HttpClient.HttpClient, (request) =>
        Effect.acquireUseRelease(
          Effect.sync(() => (most = Math.max(most, ++open))),
          () => request,
          () => Effect.sync(() => open--)
        )
      )
      const embedder = yield* embedderAt(fake.baseUrl, { batchInputs: 1, concurrency: 2 }).pipe(
        Effect.provideService(HttpClient.HttpClient, counting)
      )
      const texts = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg"]
      const fiber = yield* Effect.forkChild(embedder.embedMany(texts))
      for (let n = 0; n < texts.length; ) {
        n = yield* Queue.take(fake.arrivals)
        if (n % 2 === 0 || n === texts.length) for (const answer of held.splice(0)) answer()
      }
      const embeddings = yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        embeddings.map((e) => e.vector[0]),
        [1, 2, 3, 4, 5, 6, 7]
      )
      assert.strictEqual(most, 2)
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("probes the vector length once when no dimensions are given; the fingerprint has no key", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(answerAll)
      const embedder = yield* embedderAt(fake.baseUrl, { dimensions: undefined })
      assert.strictEqual(embedder.dimensions, 3)
      assert.deepStrictEqual(
        fake.seen.map((s) => [s.input, s.dimensions]),
        [[[OpenAi.PROBE_TEXT], undefined]]
      )
      assert.deepStrictEqual(yield* embedder.usage, { requests: 1, inputTokens: 1 })

      const same = yield* embedderAt(fake.baseUrl, { apiKey: Redacted.make("another key") })
      const elsewhere = yield* embedderAt(fake.baseUrl.replace("127.0.0.1", "localhost"))
      const shorter = yield* embedderAt(fake.baseUrl, { dimensions: 2 })
      assert.strictEqual(same.fingerprint, embedder.fingerprint)
      assert.notStrictEqual(elsewhere.fingerprint, embedder.fingerprint)
      assert.notStrictEqual(shorter.fingerprint, embedder.fingerprint)
      assert.notInclude(JSON.stringify(embedder), KEY)
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("sends no Authorization header without a key", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(answerAll)
      const embedder = yield* embedderAt(fake.baseUrl, { apiKey: undefined, keySource: undefined })
      yield* embedder.embedMany(["a"])
      assert.strictEqual(fake.seen[0]!.auth, undefined)
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("a refused key is an AuthenticationError naming the variable, tried once, the key never shown", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(() => ({
        status: 401,
        json: { error: { message: `Incorrect API key provided: ${KEY}.`, code: "invalid_api_key" } }
      }))
      const { embeddingModel } = yield* OpenAi.makeModel("test-embed", settings(fake.baseUrl))
      const error = yield* Effect.flip(embeddingModel.embedMany(["a"]))
      assert.strictEqual(error.reason._tag, "AuthenticationError")
      assert.strictEqual((error.reason as { kind?: string }).kind, "InvalidKey")
      assert.strictEqual(
        OpenAi.describe(error),
        `the embedding service at ${fake.baseUrl} refused the request ` +
          "(HTTP 401: Incorrect API key provided: [the key].): check the key in FUNCPIPE_EMBED_KEY"
      )
      assert.strictEqual(fake.seen.length, 1)
      const shown = [error.message, OpenAi.describe(error), inspect(error, { depth: 10 }), JSON.stringify(error)]
      for (const text of shown) assert.notInclude(text, KEY)
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("a request without a key that needs one says where to put the key", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(() => ({ status: 401, json: { error: { message: "You didn't provide a key." } } }))
      const embedder = yield* embedderAt(fake.baseUrl, { apiKey: undefined, keySource: undefined })
      const failure = yield* failureOf(embedder.embedMany(["a"]))
      assert.strictEqual(failure.tag, "EmbedFailure")
      assert.include(failure.message, "no key was sent; put one in FUNCPIPE_EMBED_KEY (or OPENAI_API_KEY)")
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("an unknown model and a wrong address are told apart", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(() => ({
        status: 404,
        json: { error: { message: 'model "test-embed" not found, try pulling it first', type: "api_error" } }
      }))
      const error = yield* Effect.flip(embedderAt(fake.baseUrl, { dimensions: undefined }))
      assert.strictEqual(error._tag, "ModelUnavailable")
      assert.strictEqual(
        error.message,
        `the embedding model openai:test-embed cannot be used: the embedding service at ${fake.baseUrl} has no model ` +
          '"test-embed" (HTTP 404: model "test-embed" not found, try pulling it first). Check the name after ' +
          '"openai:" (Ollama needs "ollama pull test-embed" first)'
      )
      const wrongPath = fake.baseUrl.replace(/\/v1$/, "")
      const { embeddingModel } = yield* OpenAi.makeModel("test-embed", settings(wrongPath))
      const missing = yield* Effect.flip(embeddingModel.embedMany(["a"]))
      assert.strictEqual(missing.reason._tag, "InvalidRequestError")
      assert.strictEqual((missing.reason as { parameter?: string }).parameter, "url")
      assert.include(
        OpenAi.describe(missing),
        `there is no embeddings endpoint at ${wrongPath}/embeddings (HTTP 404: 404 page not found)`
      )
      assert.include(OpenAi.describe(missing), "usually ends in /v1")
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("a 429 waits at least its Retry-After, then succeeds", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer((seen, n) =>
        n === 1
          ? { status: 429, headers: { "retry-after": "7" }, json: { error: { message: "Rate limit reached" } } }
          : ok(seen.input)
      )
      const embedder = yield* embedderAt(fake.baseUrl)
      const { result, waited } = yield* withWaits(embedder.embedMany(["a", "b"]), 1)
      assert.strictEqual(Result.getOrThrow(result).length, 2)
      assert.strictEqual(fake.seen.length, 2)
      assert.strictEqual(waited[0], 7000) // the backoff alone would be 250 to 500 ms
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("429s without Retry-After back off exponentially, then fail as rate limited after all tries", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(() => ({ status: 429, json: { error: { message: "Rate limit reached" } } }))
      const { embeddingModel } = yield* OpenAi.makeModel("test-embed", settings(fake.baseUrl, { retries: 3 }))
      const { result, waited } = yield* withWaits(embeddingModel.embedMany(["a"]), 3)
      assert.strictEqual(fake.seen.length, 4)
      assert.isTrue(waited[0]! >= 250 && waited[0]! <= 500, `first wait ${waited[0]}`)
      assert.isTrue(waited[1]! >= 500 && waited[1]! <= 1000, `second wait ${waited[1]}`)
      assert.isTrue(waited[2]! >= 1000 && waited[2]! <= 2000, `third wait ${waited[2]}`)
      const error = failureIn(result)
      assert.strictEqual(error.reason._tag, "RateLimitError")
      assert.strictEqual((error.reason as { metadata: { tries?: number } }).metadata.tries, 4)
      assert.include(
        OpenAi.describe(error),
        "was still limiting the rate of requests after 4 tries (HTTP 429: Rate limit reached)"
      )
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("a Retry-After beyond five minutes ends the run at once", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(() => ({ status: 429, headers: { "retry-after": "3600" }, json: {} }))
      const embedder = yield* embedderAt(fake.baseUrl)
      const failure = yield* failureOf(embedder.embedMany(["a"]))
      assert.include(failure.message, "asks to wait 3600 s")
      assert.strictEqual(fake.seen.length, 1)
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("an exhausted quota is not retried", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(() => ({
        status: 429,
        json: { error: { message: "You exceeded your current quota.", code: "insufficient_quota" } }
      }))
      const { embeddingModel } = yield* OpenAi.makeModel("test-embed", settings(fake.baseUrl))
      const error = yield* Effect.flip(embeddingModel.embedMany(["a"]))
      assert.strictEqual(error.reason._tag, "QuotaExhaustedError")
      assert.include(OpenAi.describe(error), "says the account has no quota left")
      assert.strictEqual(fake.seen.length, 1)
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("500s are retried; success after them counts one request", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer((seen, n) => (n <= 2 ? { status: 500, text: "upstream broke" } : ok(seen.input)))
      const embedder = yield* embedderAt(fake.baseUrl)
      const requests = (outcome: string) =>
        Effect.map(
          Metric.value(Metric.withAttributes(embeddingRequests, { model: "openai:test-embed", outcome })),
          (state) => Number(state.count)
        )
      const before = [yield* requests("ok"), yield* requests("retried"), yield* requests("failed")]
      const { result } = yield* withWaits(embedder.embedMany(["a"]), 2)
      assert.isTrue(Result.isSuccess(result))
      assert.strictEqual(fake.seen.length, 3)
      assert.deepStrictEqual(yield* embedder.usage, { requests: 1, inputTokens: 1 })
      // The metrics count each try: two retried, one answered, none given up on.
      const after = [yield* requests("ok"), yield* requests("retried"), yield* requests("failed")]
      assert.deepStrictEqual(
        after.map((n, i) => n - before[i]!),
        [1, 2, 0]
      )
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("a service failing every try is an InternalProviderError with its last status", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(() => ({ status: 503, json: { error: { message: "overloaded" } } }))
      const { embeddingModel } = yield* OpenAi.makeModel("test-embed", settings(fake.baseUrl))
      const { result } = yield* withWaits(embeddingModel.embedMany(["a"]), 2)
      const error = failureIn(result)
      assert.strictEqual(error.reason._tag, "InternalProviderError")
      assert.include(OpenAi.describe(error), "failed 3 times in a row (last: HTTP 503: overloaded)")
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("a service that does not answer within the timeout is retried, then given up on", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer((seen, n) => (n === 1 ? "hang" : ok(seen.input)))
      const embedder = yield* embedderAt(fake.baseUrl, { timeoutMillis: 5000, retries: 1 })
      const clock = yield* recordSleeps
      const fiber = yield* Effect.forkChild(clock.provide(embedder.embedMany(["a"])))
      assert.strictEqual(yield* Queue.take(clock.sleeps), 5000) // the first try's timeout
      yield* Queue.take(fake.arrivals)
      yield* TestClock.adjust(5000)
      const wait = yield* Queue.take(clock.sleeps)
      assert.isTrue(wait >= 250 && wait <= 500)
      yield* TestClock.adjust(wait)
      assert.strictEqual((yield* Fiber.join(fiber)).length, 1)
      assert.strictEqual(fake.seen.length, 2)

      const silent = yield* fakeServer(() => "hang")
      const once = settings(silent.baseUrl, { timeoutMillis: 5000, retries: 0 })
      const { embeddingModel } = yield* OpenAi.makeModel("test-embed", once)
      const giveUp = yield* Effect.forkChild(Effect.flip(clock.provide(embeddingModel.embedMany(["a"]))))
      yield* Queue.take(silent.arrivals)
      yield* TestClock.adjust(5000)
      const error = yield* Fiber.join(giveUp)
      assert.strictEqual(error.reason._tag, "NetworkError")
      assert.include(
        OpenAi.describe(error),
        "did not answer within 5 s. A slow model may need a longer FUNCPIPE_EMBED_TIMEOUT"
      )
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("a dropped connection is retried, then reported as lost", () =>
    Effect.gen(function* () {
      const flaky = yield* fakeServer((seen, n) => (n === 1 ? "drop" : ok(seen.input)))
      const recovered = yield* embedderAt(flaky.baseUrl)
      const { result } = yield* withWaits(recovered.embedMany(["a"]), 1)
      assert.isTrue(Result.isSuccess(result))
      assert.strictEqual(flaky.seen.length, 2)

      const fake = yield* fakeServer(() => "drop")
      const { embeddingModel } = yield* OpenAi.makeModel("test-embed", settings(fake.baseUrl))
      const lost = yield* withWaits(embeddingModel.embedMany(["a"]), 2)
      const error = failureIn(lost.result)
      assert.strictEqual(error.reason._tag, "NetworkError")
      assert.include(OpenAi.describe(error), "was lost before it answered, 3 times in a row")
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("nobody listening fails at once, without retries", () =>
    Effect.gen(function* () {
      const closed = yield* Effect.scoped(Effect.map(fakeServer(answerAll), (fake) => fake.baseUrl))
      const failure = yield* failureOf(embedderAt(closed, { dimensions: undefined }))
      assert.strictEqual(failure.tag, "ModelUnavailable")
      assert.include(failure.message, `nothing answers at ${closed} (connection refused). Is the service running`)
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect.each([
    ["too few vectors", (input: ReadonlyArray<string>) => ok(input.slice(1)), "it holds 1 vector for 2 texts"],
    [
      "the wrong length",
      (input: ReadonlyArray<string>) => vectorsOf(input, [1, 2]),
      "the vector of text 0 has 2 numbers where the model's vectors have 3 " +
        "(--dimensions or FUNCPIPE_EMBED_DIMENSIONS asked for 3; not every model can shorten its vectors)"
    ],
    [
      "NaN as a string",
      (input: ReadonlyArray<string>) => vectorsOf(input, [1, "NaN", 2]),
      'the vector of text 0 holds "NaN" at position 1, not a finite number'
    ],
    [
      "Infinity as null",
      (input: ReadonlyArray<string>) => vectorsOf(input, [1, 2, null]),
      "the vector of text 0 holds null at position 2, not a finite number"
    ],
    ["HTML", () => ({ text: "<html>Bad gateway</html>" }), "it is not JSON"]
  ] as const)("an answer with %s is an InvalidOutputError", ([_, reply, problem]) =>
    Effect.gen(function* () {
      const fake = yield* fakeServer((seen) => reply(seen.input))
      const { embeddingModel } = yield* OpenAi.makeModel("test-embed", settings(fake.baseUrl))
      const error = yield* Effect.flip(embeddingModel.embedMany(["a", "b"]))
      assert.strictEqual(error.reason._tag, "InvalidOutputError")
      assert.strictEqual(
        OpenAi.describe(error),
        `the embedding service at ${fake.baseUrl} gave an answer that cannot be used: ${problem}`
      )
      assert.strictEqual(fake.seen.length, 1)
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("a rejected request shows the service's words and a hint when it is about size", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(() => ({
        status: 400,
        json: { error: { message: "This model's maximum context length is 8192 tokens; you requested 9000 tokens." } }
      }))
      const embedder = yield* embedderAt(fake.baseUrl)
      const failure = yield* failureOf(embedder.embedMany(["a"]))
      assert.strictEqual(
        failure.message,
        "the embedding model openai:test-embed failed: the embedding service at " +
          fake.baseUrl +
          " rejected the " +
          "request (HTTP 400: This model's maximum context length is 8192 tokens; you requested 9000 tokens.). " +
          "Smaller requests may help: lower FUNCPIPE_EMBED_BATCH_TOKENS (now 60000) or --chunk-size"
      )
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect("concurrent embed calls of the EmbeddingModel share requests", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(answerAll)
      const layer = OpenAi.layerEmbeddingModel("test-embed", { ...settings(fake.baseUrl), dimensions: 3 })
      const vectors = yield* Effect.gen(function* () {
        const model = yield* EmbeddingModel.EmbeddingModel
        assert.strictEqual(yield* EmbeddingModel.Dimensions, 3)
        return yield* Effect.forEach(["a", "bb", "ccc"], (t) => Effect.map(model.embed(t), (r) => r.vector[0]), {
          concurrency: "unbounded"
        })
      }).pipe(Effect.provide(layer))
      assert.deepStrictEqual(vectors, [1, 2, 3])
      assert.strictEqual(fake.seen.length, 1)
    }).pipe(Effect.provide(HttpLayer))
  )
})

describe("the openai: provider in the Models catalogue", () => {
  const env = (vars: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnvRecord(vars))
  const embedderNamed = (name: string) =>
    Models.use((models) => models.embedder(name)).pipe(Effect.provide(Models.layer))

  it.effect("reads the address, key and dimensions from the environment; flags win", () =>
    Effect.gen(function* () {
      const fake = yield* fakeServer(answerAll)
      const embedder = yield* embedderNamed("openai:test-embed").pipe(
        Effect.provide(
          env({
            FUNCPIPE_EMBED_URL: "http://127.0.0.1:9/nowhere",
            FUNCPIPE_EMBED_KEY: KEY,
            FUNCPIPE_EMBED_DIMENSIONS: "3"
          })
        ),
        Effect.provideService(OpenAi.ServiceFlags, { embedUrl: fake.baseUrl })
      )
      yield* embedder.embedMany(["a"])
      assert.deepStrictEqual(
        fake.seen.map((s) => [s.auth, s.dimensions]),
        [[`Bearer ${KEY}`, 3]]
      )
      // OpenAI's own key is for OpenAI's address only: another service never receives it.
      const other = yield* embedderNamed("openai:test-embed").pipe(
        Effect.provide(
          env({ FUNCPIPE_EMBED_URL: fake.baseUrl, OPENAI_API_KEY: "sk-openai-only", FUNCPIPE_EMBED_DIMENSIONS: "3" })
        )
      )
      yield* other.embedMany(["b"])
      assert.strictEqual(fake.seen.at(-1)!.auth, undefined)
    }).pipe(Effect.provide(HttpLayer))
  )

  it.effect.each([
    ["openai:", {}, 'name the service\'s model after "openai:"'],
    ["openai:bad name", { FUNCPIPE_EMBED_URL: "http://127.0.0.1:9/v1" }, "a model name may hold only letters"],
    ["openai:m", {}, "the OpenAI API needs a key: set FUNCPIPE_EMBED_KEY or OPENAI_API_KEY"],
    ["openai:m", { FUNCPIPE_EMBED_URL: "ftp://x" }, 'must be an http:// or https:// address, not "ftp://x"'],
    ["openai:m", { FUNCPIPE_EMBED_BATCH: "0" }, "FUNCPIPE_EMBED_BATCH must be a whole number from 1 to 2048"]
  ] as const)("%s with %o is ModelUnavailable before any request", ([name, vars, reason]) =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(embedderNamed(name).pipe(Effect.provide(env(vars))))
      assert.strictEqual(error._tag, "ModelUnavailable")
      assert.include(error.message, reason)
    }).pipe(Effect.provide(HttpLayer))
  )
})
