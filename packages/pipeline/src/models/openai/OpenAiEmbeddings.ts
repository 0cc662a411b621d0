/**
 * The `openai:<model>` embedding models: any service that answers OpenAI's `POST <base URL>/embeddings` (OpenAI,
 * Ollama, vLLM, LM Studio, llama.cpp's server, Text Embeddings Inference, LocalAI), as an `effect/ai` `EmbeddingModel`
 * adapted to the pipeline's `Embedder`.
 */

import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { Clock, Config, Context, Effect, Layer, Random, Redacted, Ref, Result, Schema } from "effect"
import { AiError, EmbeddingModel } from "effect/ai"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { Embedder, EmbedFailure, type EmbedUsage, fingerprintOf } from "../Embedder.ts"
import { ModelUnavailable, type Provider } from "../Provider.ts"

/** The prefix of the model names this provider answers: `openai:text-embedding-3-small`, `openai:nomic-embed-text`. */
export const OPENAI_PREFIX = "openai:"

/** Where requests go unless `--embed-url` or `FUNCPIPE_EMBED_URL` says otherwise. */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1"

/** The environment variables the provider reads. The CLI's `--embed-url` and `--dimensions` take precedence. */
export const ENV = {
  url: "FUNCPIPE_EMBED_URL",
  key: "FUNCPIPE_EMBED_KEY",
  openAiKey: "OPENAI_API_KEY",
  dimensions: "FUNCPIPE_EMBED_DIMENSIONS",
  batch: "FUNCPIPE_EMBED_BATCH",
  batchTokens: "FUNCPIPE_EMBED_BATCH_TOKENS",
  concurrency: "FUNCPIPE_EMBED_CONCURRENCY",
  timeout: "FUNCPIPE_EMBED_TIMEOUT",
  retries: "FUNCPIPE_EMBED_RETRIES"
} as const

/** How to reach the service and how hard to push it. */
export interface OpenAiSettings {
  /** The address up to `/embeddings`, without a trailing slash: `https://api.openai.com/v1`. */
  readonly baseUrl: string
  /** Sent as a bearer token when present. Never printed, logged or stored in the index. */
  readonly apiKey: Redacted.Redacted<string> | undefined
  /** The environment variable the key came from, for messages. */
  readonly keySource: string | undefined
  /** The vector length to ask for (the `dimensions` field); undefined: the model's own, found by a probe. */
  readonly dimensions: number | undefined
  /** At most this many texts per request. */
  readonly batchInputs: number
  /** At most this many approximate tokens (`approxTokens`) per request; a longer text goes alone. */
  readonly batchTokens: number
  /** Requests in flight at once. */
  readonly concurrency: number
  /** How long one request may take, answer included, before it counts as failed (and is retried). */
  readonly timeoutMillis: number
  /** Further tries after a failed one (429, 5xx, timeout, dropped connection): `retries + 1` tries in all. */
  readonly retries: number
  /** The first retry waits about this long, each next one twice as long, up to `maxBackoffMillis`. */
  readonly backoffMillis: number
  readonly maxBackoffMillis: number
}

/** The settings with nothing set in the environment or on the command line. */
export const defaultSettings: OpenAiSettings = {
  baseUrl: DEFAULT_BASE_URL,
  apiKey: undefined,
  keySource: undefined,
  dimensions: undefined,
  batchInputs: 128,
  batchTokens: 60_000,
  concurrency: 4,
  timeoutMillis: 60_000,
  retries: 5,
  backoffMillis: 500,
  maxBackoffMillis: 30_000
}

/** A service asking to wait longer than this before the next try (`Retry-After`) ends the run instead. */
export const MAX_RETRY_AFTER_MILLIS = 300_000

/** What the command line says; each field left out falls back to the environment, then to `defaultSettings`. */
export interface ServiceFlags {
  readonly embedUrl?: string | undefined
  readonly dimensions?: number | undefined
}

/** The command line's settings for the provider (`--embed-url`, `--dimensions`); empty unless a command sets them. */
export const ServiceFlags = Context.Reference<ServiceFlags>("pipeline/OpenAiEmbeddings/ServiceFlags", {
  defaultValue: () => ({})
})

/** The provider's settings as found in the environment: raw text, checked by `settingsFrom`. */
export interface SettingsInput {
  readonly url?: string | undefined
  readonly key?: Redacted.Redacted<string> | undefined
  readonly openAiKey?: Redacted.Redacted<string> | undefined
  readonly dimensions?: string | undefined
  readonly batch?: string | undefined
  readonly batchTokens?: string | undefined
  readonly concurrency?: string | undefined
  readonly timeout?: string | undefined
  readonly retries?: string | undefined
}

const text = (name: string) => Config.String(name).pipe(Config.withDefault(""))

/** The environment variables of `ENV`, unchecked. */
export const environment: Config.Config<SettingsInput> = Config.all({
  url: text(ENV.url),
  key: Config.Redacted(ENV.key).pipe(Config.withDefault(Redacted.make(""))),
  openAiKey: Config.Redacted(ENV.openAiKey).pipe(Config.withDefault(Redacted.make(""))),
  dimensions: text(ENV.dimensions),
  batch: text(ENV.batch),
  batchTokens: text(ENV.batchTokens),
  concurrency: text(ENV.concurrency),
  timeout: text(ENV.timeout),
  retries: text(ENV.retries)
})

/** A whole number from `min` to `max`, or `fallback` when `raw` is empty. */
const wholeNumber = (name: string, raw: string | undefined, min: number, max: number, fallback: number) => {
  const given = raw?.trim() ?? ""
  if (given === "") return Result.succeed(fallback)
  const value = /^\d+$/.test(given) ? Number(given) : Number.NaN
  return value >= min && value <= max
    ? Result.succeed(value)
    : Result.fail(`${name} must be a whole number from ${min} to ${max}, not ${JSON.stringify(raw)}`)
}

/** The base URL in the form requests and fingerprints use, or why it cannot be one. */
export const normalizeBaseUrl = (raw: string): Result.Result<string, string> => {
  const where = `the embedding service's address (--embed-url or ${ENV.url})`
  let url: URL
  try {
    url = new URL(raw.trim())
  } catch {
    return Result.fail(`${where} must be an http:// or https:// address, not ${JSON.stringify(raw)}`)
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return Result.fail(`${where} must be an http:// or https:// address, not ${JSON.stringify(raw)}`)
  }
  if (url.username !== "" || url.password !== "") {
    return Result.fail(`${where} must not hold a user name or password; put the key in ${ENV.key} instead`)
  }
  if (url.search !== "" || url.hash !== "") {
    return Result.fail(`${where} must not have a ?query or #fragment: give the address up to /embeddings`)
  }
  return Result.succeed(`${url.origin}${url.pathname.replace(/\/+$/, "")}`)
}

const present = (key: Redacted.Redacted<string> | undefined) =>
  key !== undefined && Redacted.value(key).trim() !== "" ? key : undefined

/**
 * Checks the settings from the environment and the command line (which wins) and fills in the defaults; a value that
 * is not allowed gives a message naming the variable or flag and what it accepts.
 */
export const settingsFrom = (input: SettingsInput, flags: ServiceFlags = {}): Result.Result<OpenAiSettings, string> =>
  Result.gen(function* () {
    const rawUrl = flags.embedUrl ?? (input.url?.trim() || undefined)
    const baseUrl = rawUrl === undefined ? DEFAULT_BASE_URL : yield* normalizeBaseUrl(rawUrl)
    const ownKey = present(input.key)
    // OpenAI's key goes to OpenAI only: sent to another address (a local server, a third party) it would leak.
    const openAiKey =
      new URL(baseUrl).hostname === new URL(DEFAULT_BASE_URL).hostname ? present(input.openAiKey) : undefined
    const apiKey = ownKey ?? openAiKey
    const dimensions =
      flags.dimensions ??
      ((input.dimensions?.trim() ?? "") === ""
        ? undefined
        : yield* wholeNumber(ENV.dimensions, input.dimensions, 1, 65_536, 0))
    const timeoutText = input.timeout?.trim() ?? ""
    const timeoutSeconds = timeoutText === "" ? defaultSettings.timeoutMillis / 1000 : Number(timeoutText)
    if (!/^\d*\.?\d*$/.test(timeoutText) || !(timeoutSeconds > 0 && timeoutSeconds <= 3600)) {
      return yield* Result.fail(
        `${ENV.timeout} must be a number of seconds above 0 and at most 3600, not ${JSON.stringify(input.timeout)}`
      )
    }
    return {
      ...defaultSettings,
      baseUrl,
      apiKey,
      keySource: ownKey !== undefined ? ENV.key : openAiKey !== undefined ? ENV.openAiKey : undefined,
      dimensions,
      batchInputs: yield* wholeNumber(ENV.batch, input.batch, 1, 2048, defaultSettings.batchInputs),
      batchTokens: yield* wholeNumber(ENV.batchTokens, input.batchTokens, 100, 10_000_000, defaultSettings.batchTokens),
      concurrency: yield* wholeNumber(ENV.concurrency, input.concurrency, 1, 64, defaultSettings.concurrency),
      timeoutMillis: Math.round(timeoutSeconds * 1000),
      retries: yield* wholeNumber(ENV.retries, input.retries, 0, 20, defaultSettings.retries)
    }
  })

/**
 * A text's size in tokens, approximately: one token per 3 bytes of UTF-8, rounded up. Tokenizers give English about
 * 4 characters per token, so this errs on the large side, which keeps batches within a service's limit.
 */
export const approxTokens = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c < 0xdc00) {
      bytes += 4 // a surrogate pair is one code point of 4 bytes
      i++
    } else bytes += 3
  }
  return Math.ceil(bytes / 3)
}

/**
 * Splits `texts` into consecutive batches of at most `maxInputs` texts and `maxTokens` approximate tokens; a text
 * over `maxTokens` on its own is a batch of one (the service decides whether it is too long). Returns `[start, end)`
 * index pairs in order.
 */
export const planBatches = (
  texts: ReadonlyArray<string>,
  maxInputs: number,
  maxTokens: number
): ReadonlyArray<readonly [number, number]> => {
  const out: Array<readonly [number, number]> = []
  let start = 0
  let tokens = 0
  for (let i = 0; i < texts.length; i++) {
    const t = approxTokens(texts[i]!)
    if (i > start && (i - start === maxInputs || tokens + t > maxTokens)) {
      out.push([start, i])
      start = i
      tokens = 0
    }
    tokens += t
  }
  if (start < texts.length) out.push([start, texts.length])
  return out
}

/**
 * How long a service asks to be left alone, in milliseconds: `retry-after-ms` (OpenAI's), else `Retry-After` as
 * seconds or as an HTTP date (relative to `nowMillis`). Undefined when neither is there or readable.
 */
export const retryAfterMillis = (
  headers: Readonly<Record<string, string | undefined>>,
  nowMillis: number
): number | undefined => {
  const ms = headers["retry-after-ms"]?.trim()
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms))
  const value = headers["retry-after"]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMillis)
}

/**
 * The wait before try `tries + 1`, in milliseconds: exponential backoff (`backoffMillis · 2^(tries-1)`, at most
 * `maxBackoffMillis`) with jitter (between half and all of it, by `random` in [0, 1)), and never less than what the
 * service asked for with `Retry-After`.
 */
export const retryDelayMillis = (
  tries: number,
  askedMillis: number | undefined,
  random: number,
  settings: Pick<OpenAiSettings, "backoffMillis" | "maxBackoffMillis">
): number => {
  const backoff = Math.min(settings.maxBackoffMillis, settings.backoffMillis * 2 ** (tries - 1))
  return Math.max(askedMillis ?? 0, Math.round(backoff * (0.5 + random / 2)))
}

/** The vectors of one response, in input order, and the tokens the service counted (when it says). */
export interface Answer {
  readonly vectors: Array<Array<number>>
  readonly tokens: number | undefined
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Reads an embeddings response: `count` vectors (placed by their `index` field when every item has one), each of
 * `dimensions` finite numbers (or, with `dimensions` undefined, all of one length). A failure says, in words, what is
 * wrong with the answer.
 */
export const decodeAnswer = (
  body: unknown,
  count: number,
  dimensions: number | undefined,
  lengthNote = ""
): Result.Result<Answer, string> => {
  if (!isRecord(body) || !Array.isArray(body.data)) {
    return Result.fail('it is not an embeddings response (there is no "data" list)')
  }
  const data = body.data as ReadonlyArray<unknown>
  if (data.length !== count) {
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`
    return Result.fail(`it holds ${plural(data.length, "vector")} for ${plural(count, "text")}`)
  }
  const byIndex = data.every((item) => isRecord(item) && Number.isInteger(item.index))
  const vectors: Array<Array<number>> = new Array(count)
  let length = dimensions
  for (let i = 0; i < count; i++) {
    const item = data[i]
    const at = byIndex ? (item as { readonly index: number }).index : i
    if (at < 0 || at >= count || vectors[at] !== undefined) {
      return Result.fail('the "index" fields of its vectors do not number the texts 0, 1, 2, …')
    }
    const vector = isRecord(item) ? item.embedding : undefined
    if (!Array.isArray(vector) || vector.length === 0) {
      return Result.fail(`the vector of text ${at} is not a list of numbers`)
    }
    length ??= vector.length
    if (vector.length !== length) {
      return Result.fail(
        `the vector of text ${at} has ${vector.length} numbers where the model's vectors have ${length}${lengthNote}`
      )
    }
    for (let j = 0; j < vector.length; j++) {
      const x: unknown = vector[j]
      if (typeof x !== "number" || !Number.isFinite(x)) {
        const shown = JSON.stringify(x) ?? String(x)
        return Result.fail(`the vector of text ${at} holds ${shown} at position ${j}, not a finite number`)
      }
    }
    vectors[at] = vector as Array<number>
  }
  const usage = body.usage
  const tokens =
    isRecord(usage) && Number.isInteger(usage.prompt_tokens) && (usage.prompt_tokens as number) >= 0
      ? (usage.prompt_tokens as number)
      : undefined
  return Result.succeed({ vectors, tokens })
}

/** A failed try: whether another try may help, how long the service asked to wait, and the error if none follows. */
interface Failed {
  readonly _tag: "Failed"
  readonly retry: boolean
  readonly reason: (tries: number) => AiError.AiErrorReason
  readonly askedMillis: number | undefined
}

const failed = (
  retry: boolean,
  reason: (tries: number) => AiError.AiErrorReason,
  askedMillis: number | undefined = undefined
): Failed => ({
  _tag: "Failed",
  // A service asking for a longer pause than the run should sit through ends it now.
  retry: retry && !(askedMillis !== undefined && askedMillis > MAX_RETRY_AFTER_MILLIS),
  reason,
  askedMillis
})

const aiError = (reason: AiError.AiErrorReason) =>
  AiError.make({ module: "OpenAiEmbeddings", method: "embedMany", reason })

/**
 * The sentence a user reads for an `AiError` of this provider: what went wrong, where, and what to do. Every reason
 * this provider makes carries it (as its `description`, or in its `metadata` when the reason has no description).
 */
export const describe = (error: AiError.AiError): string => {
  const reason = error.reason as { readonly description?: unknown; readonly metadata?: Record<string, unknown> }
  if (typeof reason.description === "string") return reason.description
  const text = reason.metadata?.description
  return typeof text === "string" ? text : error.reason.message
}

/** How often a failure happened, for the end of a clause: nothing for a first try, ", 3 times in a row" after more. */
const inARow = (tries: number) => (tries === 1 ? "" : `, ${tries} times in a row`)
const seconds = (millis: number) => `${Number((millis / 1000).toFixed(1))} s`

/** The error codes (`ECONNREFUSED`, …) along an error's chain of causes. */
const codesOf = (error: unknown): ReadonlyArray<string> => {
  const codes: Array<string> = []
  for (let e: unknown = error, depth = 0; isRecord(e) || e instanceof Error; depth++) {
    const code = (e as { readonly code?: unknown }).code
    if (typeof code === "string") codes.push(code)
    if (depth > 8) break
    e = (e as { readonly cause?: unknown }).cause
  }
  return codes
}

/**
 * Makes the `EmbeddingModel` of `model` (the name the service knows, without `openai:`) at the service the settings
 * name, and the counter of its usage. Each `embedMany` is split by `planBatches`, sent `concurrency` requests at a
 * time, each retried per the settings; vectors must have `dimensions` numbers (any one length when undefined).
 */
export const makeModel = Effect.fn("OpenAiEmbeddings.makeModel")(function* (
  model: string,
  settings: OpenAiSettings,
  options: {
    /** The vector length to expect (default: `settings.dimensions`). */
    readonly dimensions?: number | undefined
    /** Where to count requests and tokens (default: a new counter). */
    readonly usage?: Ref.Ref<EmbedUsage>
  } = {}
) {
  const client = yield* HttpClient.HttpClient
  const dimensions = options.dimensions ?? settings.dimensions
  const usage = options.usage ?? (yield* Ref.make<EmbedUsage>({ requests: 0, inputTokens: undefined }))
  const service = settings.baseUrl
  const url = `${service}/embeddings`
  const key = settings.apiKey === undefined ? undefined : Redacted.value(settings.apiKey)
  /** The service's own words, on one line, shortened, and never with the key in them. */
  const serviceSays = (body: string): string => {
    let said: unknown = body
    try {
      const json: unknown = JSON.parse(body)
      const error = isRecord(json) ? json.error : undefined
      said = isRecord(error) ? error.message : (error ?? (isRecord(json) ? json.message : undefined) ?? body)
    } catch {
      // not JSON: the text itself
    }
    let words = (typeof said === "string" ? said : (JSON.stringify(said) ?? "")).replace(/\s+/g, " ").trim()
    if (key !== undefined && key.length > 0) words = words.replaceAll(key, "[the key]")
    return words.length > 300 ? `${words.slice(0, 299)}…` : words
  }
  const status = (code: number, body: string) => {
    const said = serviceSays(body)
    return `HTTP ${code}${said === "" ? "" : `: ${said}`}`
  }
  const keyNote =
    settings.keySource === undefined
      ? `no key was sent; put one in ${ENV.key} (or ${ENV.openAiKey})`
      : `check the key in ${settings.keySource}`

  /** Classifies an answer that is not a success. */
  const failedAnswer = (response: HttpClientResponse.HttpClientResponse, body: string, now: number): Failed => {
    const code = response.status
    const http = `(${status(code, body)})`
    if (code === 401 || code === 403) {
      return failed(
        false,
        () =>
          new AiError.AuthenticationError({
            kind:
              settings.keySource === undefined ? "MissingKey" : code === 401 ? "InvalidKey" : "InsufficientPermissions",
            description: `the embedding service at ${service} refused the request ${http}: ${keyNote}`
          })
      )
    }
    if (code === 404) {
      const aboutModel = /model/i.test(serviceSays(body))
      return failed(
        false,
        () =>
          new AiError.InvalidRequestError({
            parameter: aboutModel ? "model" : "url",
            description: aboutModel
              ? `the embedding service at ${service} has no model ${JSON.stringify(model)} ${http}. Check the name ` +
                `after "openai:" (Ollama needs "ollama pull ${model}" first)`
              : `there is no embeddings endpoint at ${url} ${http}. Check --embed-url (or ${ENV.url}): it is the ` +
                `address before /embeddings, which usually ends in /v1`
          })
      )
    }
    if (code === 429) {
      if (/insufficient_quota|exceeded your current quota/i.test(body)) {
        return failed(
          false,
          () =>
            new AiError.QuotaExhaustedError({
              metadata: {
                description: `the embedding service at ${service} says the account has no quota left ${http}`
              }
            })
        )
      }
      const asked = retryAfterMillis(response.headers, now)
      const tooLong = asked !== undefined && asked > MAX_RETRY_AFTER_MILLIS
      return failed(
        true,
        (tries) =>
          new AiError.RateLimitError({
            metadata: {
              tries,
              description: tooLong
                ? `the embedding service at ${service} is limiting the rate of requests and asks to wait ` +
                  `${seconds(asked)} ${http}; run again later`
                : `the embedding service at ${service} was still limiting the rate of requests after ${tries} ` +
                  `tr${tries === 1 ? "y" : "ies"} ${http}. Wait a while and run again, or send fewer requests at ` +
                  `once (${ENV.concurrency}, now ${settings.concurrency})`
            }
          }),
        asked
      )
    }
    if (code === 408 || code >= 500) {
      return failed(
        true,
        (tries) =>
          new AiError.InternalProviderError({
            description:
              tries === 1
                ? `the embedding service at ${service} failed (${status(code, body)})`
                : `the embedding service at ${service} failed ${tries} times in a row (last: ${status(code, body)})`
          }),
        retryAfterMillis(response.headers, now)
      )
    }
    const tooBig = code === 413 || /token|too long|context length|maximum/i.test(body)
    return failed(
      false,
      () =>
        new AiError.InvalidRequestError({
          description:
            `the embedding service at ${service} rejected the request ${http}` +
            (tooBig
              ? `. Smaller requests may help: lower ${ENV.batchTokens} (now ${settings.batchTokens}) or --chunk-size`
              : "")
        })
    )
  }

  /** A request that got no answer: nobody listening, an unknown host, or a connection lost. */
  const noAnswer = (error: unknown): Failed => {
    const codes = codesOf(error)
    const network = (description: string) =>
      new AiError.NetworkError({ reason: "TransportError", method: "POST", url, description })
    if (codes.includes("ECONNREFUSED")) {
      return failed(false, () =>
        network(
          `nothing answers at ${service} (connection refused). Is the service running, and is --embed-url ` +
            `(or ${ENV.url}) right?`
        )
      )
    }
    if (codes.includes("ENOTFOUND") || codes.includes("EAI_AGAIN")) {
      return failed(false, () =>
        network(`the host of ${service} could not be found (DNS lookup failed). Check --embed-url (or ${ENV.url})`)
      )
    }
    const code = codes.length === 0 ? "" : ` (${codes[0]})`
    return failed(true, (tries) =>
      network(
        `the connection to the embedding service at ${service} was lost before it answered${inARow(tries)}${code}`
      )
    )
  }

  const timedOut = failed(
    true,
    (tries) =>
      new AiError.NetworkError({
        reason: "TransportError",
        method: "POST",
        url,
        description:
          `the embedding service at ${service} did not answer within ${seconds(settings.timeoutMillis)}` +
          `${inARow(tries)}. A slow model may need a longer ${ENV.timeout} (seconds) or a smaller ` +
          `${ENV.batch} (now ${settings.batchInputs} texts per request)`
      })
  )

  const lengthNote =
    settings.dimensions === undefined
      ? ""
      : ` (--dimensions or ${ENV.dimensions} asked for ${settings.dimensions}; not every model can shorten its vectors)`

  /** One try: send, wait for the whole answer (within the timeout), read it. */
  const once = (input: ReadonlyArray<string>): Effect.Effect<Answer, Failed> => {
    const body: Record<string, unknown> = { model, input }
    if (settings.dimensions !== undefined) body.dimensions = settings.dimensions
    let request = HttpClientRequest.post(url).pipe(HttpClientRequest.acceptJson, HttpClientRequest.bodyJsonUnsafe(body))
    if (settings.apiKey !== undefined) request = HttpClientRequest.bearerToken(request, settings.apiKey)
    return Effect.gen(function* () {
      // No trace headers (traceparent, b3): the service, often a third party's, has no use for our span ids.
      const response = yield* client
        .execute(request)
        .pipe(Effect.provideService(HttpClient.TracerPropagationEnabled, false))
      const text = yield* response.text
      const now = yield* Clock.currentTimeMillis
      if (response.status < 200 || response.status >= 300) return yield* Effect.fail(failedAnswer(response, text, now))
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      const answer = decodeAnswer(json, input.length, dimensions, lengthNote)
      if (Result.isSuccess(answer)) return answer.success
      const problem = json === undefined ? "it is not JSON" : answer.failure
      return yield* Effect.fail(
        failed(
          false,
          () =>
            new AiError.InvalidOutputError({
              description: `the embedding service at ${service} gave an answer that cannot be used: ${problem}`
            })
        )
      )
    }).pipe(
      Effect.timeoutOrElse({ duration: settings.timeoutMillis, orElse: () => Effect.fail(timedOut) }),
      Effect.catchTag("HttpClientError", (error) => Effect.fail(noAnswer(error.reason)))
    )
  }

  /** One batch, tried up to `retries + 1` times; counts what the successful try cost. */
  const send = Effect.fn("OpenAiEmbeddings.send")(function* (input: ReadonlyArray<string>) {
    for (let tries = 1; ; tries++) {
      const result = yield* Effect.result(once(input))
      if (Result.isSuccess(result)) {
        const { tokens } = result.success
        yield* Ref.update(usage, (u) => ({
          requests: u.requests + 1,
          inputTokens: tokens === undefined ? u.inputTokens : (u.inputTokens ?? 0) + tokens
        }))
        return result.success
      }
      const { askedMillis, reason, retry } = result.failure
      if (!retry || tries > settings.retries) return yield* aiError(reason(tries))
      yield* Effect.sleep(retryDelayMillis(tries, askedMillis, yield* Random.next, settings))
    }
  })

  const embeddingModel = yield* EmbeddingModel.make({
    embedMany: ({ inputs }) =>
      Effect.forEach(
        planBatches(inputs, settings.batchInputs, settings.batchTokens),
        ([start, end]) => send(inputs.slice(start, end)),
        { concurrency: settings.concurrency }
      ).pipe(
        Effect.map((answers) => {
          let inputTokens: number | undefined
          for (const a of answers) if (a.tokens !== undefined) inputTokens = (inputTokens ?? 0) + a.tokens
          return { results: answers.flatMap((a) => a.vectors), usage: { inputTokens } }
        })
      )
  })
  return { embeddingModel, usage: Ref.get(usage) }
})

/**
 * The `EmbeddingModel` and its `Dimensions` for other Effect programs (`settings.dimensions` must be set, since a
 * layer cannot probe); needs an `HttpClient`.
 */
export const layerEmbeddingModel = (model: string, settings: OpenAiSettings & { readonly dimensions: number }) =>
  Layer.merge(
    Layer.effect(
      EmbeddingModel.EmbeddingModel,
      Effect.map(makeModel(model, settings), (made) => made.embeddingModel)
    ),
    Layer.succeed(EmbeddingModel.Dimensions, settings.dimensions)
  )

/** The text a dimension probe embeds when the settings do not give the vector length. */
export const PROBE_TEXT = "FuncPipe dimension probe"

const decodeLabel = Schema.decodeUnknownResult(ModelLabel)

/** The label of `openai:<model>`, or why that is no model name. */
const labelOf = (model: string): Result.Result<ModelLabel, ModelUnavailable> => {
  const name = `${OPENAI_PREFIX}${model}`
  if (model.trim() === "") {
    return Result.fail(
      new ModelUnavailable({
        model: name,
        reason:
          `name the service's model after "${OPENAI_PREFIX}", e.g. ${OPENAI_PREFIX}text-embedding-3-small or ` +
          `${OPENAI_PREFIX}nomic-embed-text`
      })
    )
  }
  return Result.mapError(
    decodeLabel(name),
    () => new ModelUnavailable({ model: name, reason: "a model name may hold only letters, digits and . _ : / @ -" })
  )
}

/**
 * The `Embedder` of `openai:<model>`: the model's vector length comes from the settings or from embedding
 * `PROBE_TEXT` once; the fingerprint covers the base URL, model and length, never the key. Fails with
 * `ModelUnavailable` when the name is not a model label or the probe fails.
 */
export const makeEmbedder = Effect.fn("OpenAiEmbeddings.makeEmbedder")(function* (
  model: string,
  settings: OpenAiSettings
) {
  const label = labelOf(model)
  if (Result.isFailure(label)) return yield* label.failure
  const unavailable = (error: AiError.AiError) =>
    new ModelUnavailable({ model: label.success, reason: describe(error) })
  // The probe's request counts in the usage: it is one the service served.
  const usage = yield* Ref.make<EmbedUsage>({ requests: 0, inputTokens: undefined })
  let dimensions = settings.dimensions
  if (dimensions === undefined) {
    const probe = yield* makeModel(model, settings, { usage })
    const answer = yield* probe.embeddingModel.embed(PROBE_TEXT).pipe(Effect.mapError(unavailable))
    dimensions = answer.vector.length
  }
  const { embeddingModel } = yield* makeModel(model, settings, { dimensions, usage })
  return embedderOf(label.success, dimensions, settings.baseUrl, embeddingModel, Ref.get(usage))
})

/**
 * Adapts an `EmbeddingModel` to the pipeline's `Embedder`: vectors become domain `Embedding`s of `label` (their
 * numbers were checked finite and of `dimensions` length as they were read), failures an `EmbedFailure` whose
 * reason is `describe`'s sentence.
 */
const embedderOf = (
  label: ModelLabel,
  dimensions: number,
  baseUrl: string,
  model: EmbeddingModel.EmbeddingModel,
  usage: Effect.Effect<EmbedUsage>
): Embedder["Service"] =>
  Embedder.of({
    model: label,
    dimensions,
    fingerprint: fingerprintOf({ model: label, baseUrl, dimensions }),
    embedMany: (texts) =>
      model.embedMany(texts).pipe(
        Effect.map((response) =>
          response.embeddings.map(
            (e) =>
              new Embedding({ vector: e.vector as [number, ...Array<number>], model: label }, { disableChecks: true })
          )
        ),
        Effect.mapError((error) => new EmbedFailure({ model: label, reason: describe(error) }))
      ),
    usage,
    // A remote service: index runs embed before taking the write lock, through the embedding cache.
    costly: true
  })

/**
 * The `openai:` provider for the `Models` catalogue. Settings are read when a model is asked for: the command line's
 * `ServiceFlags`, then the environment (`ENV`), then `defaultSettings`. Without a key, the OpenAI API itself is
 * refused before any request.
 */
export const provider: Effect.Effect<Provider, never, HttpClient.HttpClient> = Effect.map(
  HttpClient.HttpClient,
  (client) => (name) => {
    if (!name.startsWith(OPENAI_PREFIX)) return undefined
    return Effect.gen(function* () {
      const label = labelOf(name.slice(OPENAI_PREFIX.length))
      if (Result.isFailure(label)) return yield* label.failure
      const unavailable = (reason: string) => new ModelUnavailable({ model: name, reason })
      const input = yield* Effect.mapError(environment, (error) => unavailable(error.message))
      const settings = settingsFrom(input, yield* ServiceFlags)
      if (Result.isFailure(settings)) return yield* unavailable(settings.failure)
      if (settings.success.apiKey === undefined && settings.success.baseUrl === DEFAULT_BASE_URL) {
        return yield* unavailable(
          `the OpenAI API needs a key: set ${ENV.key} or ${ENV.openAiKey}; for another service (Ollama, vLLM, …) ` +
            `give its address with --embed-url or ${ENV.url}`
        )
      }
      return yield* makeEmbedder(name.slice(OPENAI_PREFIX.length), settings.success)
    }).pipe(Effect.provideService(HttpClient.HttpClient, client))
  }
)
