/** Why a request to the embeddings service failed, in words a user can act on, and whether another try may help. */

import { Redacted } from "effect"
import { AiError } from "effect/ai"
import type { HttpClientResponse } from "effect/http"
import { isRecord } from "./OpenAiBatches.ts"
import { ENV, MAX_RETRY_AFTER_MILLIS, type OpenAiSettings } from "./OpenAiSettings.ts"

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

/** A failed try: whether another try may help, how long the service asked to wait, and the error if none follows. */
export interface Failed {
  readonly _tag: "Failed"
  readonly retry: boolean
  readonly reason: (tries: number) => AiError.AiErrorReason
  readonly askedMillis: number | undefined
}

/** A failed try; its error is made only when no try follows, so it can say how many tries there were. */
export const failed = (
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

/** The `AiError` a batch fails with once no try is left, so `describe` can read its reason. */
export const aiError = (reason: AiError.AiErrorReason) =>
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
/** A duration as messages show it, in seconds with at most one decimal. */
const seconds = (millis: number) => `${Number((millis / 1000).toFixed(1))} s`

/** The error codes (`ECONNREFUSED`, …) along an error's chain of causes. */
export const codesOf = (error: unknown): ReadonlyArray<string> => {
  const codes: Array<string> = []
  for (let e: unknown = error, depth = 0; isRecord(e) || e instanceof Error; depth++) {
    const code = (e as { readonly code?: unknown }).code
    if (typeof code === "string") codes.push(code)
    if (depth > 8) break
    e = (e as { readonly cause?: unknown }).cause
  }
  return codes
}

/** The service and model one model's requests go to, as its failure messages name them. */
export interface Endpoint {
  /** The name the service knows the model by, without `openai:`. */
  readonly model: string
  readonly settings: OpenAiSettings
  /** The base URL, which messages name the service by. */
  readonly service: string
  /** Where requests are posted: the base URL and `/embeddings`. */
  readonly url: string
  /** The key in clear, only to keep it out of the service's words when they are shown. */
  readonly key: string | undefined
}

/** The endpoint of `model` at the service the settings name. */
export const endpointOf = (model: string, settings: OpenAiSettings): Endpoint => ({
  model,
  settings,
  service: settings.baseUrl,
  url: `${settings.baseUrl}/embeddings`,
  key: settings.apiKey === undefined ? undefined : Redacted.value(settings.apiKey)
})

/** The service's own words, on one line, shortened, and never with the key in them. */
const serviceSays = (endpoint: Endpoint, body: string): string => {
  let said: unknown = body
  try {
    const json: unknown = JSON.parse(body)
    const error = isRecord(json) ? json.error : undefined
    said = isRecord(error) ? error.message : (error ?? (isRecord(json) ? json.message : undefined) ?? body)
  } catch {
    // not JSON: the text itself
  }
  let words = (typeof said === "string" ? said : (JSON.stringify(said) ?? "")).replace(/\s+/g, " ").trim()
  const key = endpoint.key
  if (key !== undefined && key.length > 0) words = words.replaceAll(key, "[the key]")
  return words.length > 300 ? `${words.slice(0, 299)}…` : words
}

/** An answer's status and the service's words, as messages quote them: `HTTP 404: no such model`. */
const status = (endpoint: Endpoint, code: number, body: string) => {
  const said = serviceSays(endpoint, body)
  return `HTTP ${code}${said === "" ? "" : `: ${said}`}`
}

/** 401 or 403: the key is missing, wrong or not allowed; another try cannot help. */
const refused = (endpoint: Endpoint, code: number, http: string): Failed => {
  const { keySource } = endpoint.settings
  const keyNote =
    keySource === undefined
      ? `no key was sent; put one in ${ENV.key} (or ${ENV.openAiKey})`
      : `check the key in ${keySource}`
  return failed(
    false,
    () =>
      new AiError.AuthenticationError({
        kind: keySource === undefined ? "MissingKey" : code === 401 ? "InvalidKey" : "InsufficientPermissions",
        description: `the embedding service at ${endpoint.service} refused the request ${http}: ${keyNote}`
      })
  )
}

/** 404: the service has no such model, or the address is not an embeddings endpoint; the service's words tell which. */
const notFound = (endpoint: Endpoint, body: string, http: string): Failed => {
  const { model, service, url } = endpoint
  const aboutModel = /model/i.test(serviceSays(endpoint, body))
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

/**
 * 429: out of quota ends the run; a rate limit is retried, after at least the wait the service asks for, unless
 * that wait is too long to sit through.
 */
const rateLimited = (
  endpoint: Endpoint,
  response: HttpClientResponse.HttpClientResponse,
  body: string,
  http: string,
  now: number
): Failed => {
  const { service, settings } = endpoint
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

/** 408 or 5xx: the service failed this time; another try may succeed. */
const serverFailed = (
  endpoint: Endpoint,
  response: HttpClientResponse.HttpClientResponse,
  body: string,
  now: number
): Failed => {
  const { service } = endpoint
  const said = status(endpoint, response.status, body)
  return failed(
    true,
    (tries) =>
      new AiError.InternalProviderError({
        description:
          tries === 1
            ? `the embedding service at ${service} failed (${said})`
            : `the embedding service at ${service} failed ${tries} times in a row (last: ${said})`
      }),
    retryAfterMillis(response.headers, now)
  )
}

/** Any other status: the request itself is wrong; when it looks too big, the message says how to send smaller ones. */
const rejected = (endpoint: Endpoint, code: number, body: string, http: string): Failed => {
  const { service, settings } = endpoint
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

/** Classifies an answer that is not a success, by its status. */
export const failedAnswer = (
  endpoint: Endpoint,
  response: HttpClientResponse.HttpClientResponse,
  body: string,
  now: number
): Failed => {
  const code = response.status
  const http = `(${status(endpoint, code, body)})`
  if (code === 401 || code === 403) return refused(endpoint, code, http)
  if (code === 404) return notFound(endpoint, body, http)
  if (code === 429) return rateLimited(endpoint, response, body, http, now)
  if (code === 408 || code >= 500) return serverFailed(endpoint, response, body, now)
  return rejected(endpoint, code, body, http)
}

/** A request that got no answer: nobody listening, an unknown host, or a connection lost. */
export const noAnswer = (endpoint: Endpoint, error: unknown): Failed => {
  const { service, url } = endpoint
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
    network(`the connection to the embedding service at ${service} was lost before it answered${inARow(tries)}${code}`)
  )
}

/** A request whose whole answer did not come within the timeout: retried, and the message says what to loosen. */
export const timedOut = (endpoint: Endpoint): Failed => {
  const { service, settings, url } = endpoint
  return failed(
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
}

/** A success status whose body is not a usable embeddings response: another try would get the same. */
export const unusable = (endpoint: Endpoint, problem: string): Failed =>
  failed(
    false,
    () =>
      new AiError.InvalidOutputError({
        description: `the embedding service at ${endpoint.service} gave an answer that cannot be used: ${problem}`
      })
  )
