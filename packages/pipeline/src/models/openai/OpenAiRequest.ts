/** One batch's request to the embeddings service: sent, timed, read, classified, and retried with backoff. */

import { Clock, Effect, Random, Ref, Result } from "effect"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { countEmbeddingRequest, countEmbeddingTokens } from "../../platform/Telemetry.ts"
import type { EmbedUsage } from "../Embedder.ts"
import { type Answer, decodeAnswer } from "./OpenAiBatches.ts"
import { aiError, type Endpoint, type Failed, failedAnswer, noAnswer, timedOut, unusable } from "./OpenAiFailures.ts"
import { ENV, type OpenAiSettings } from "./OpenAiSettings.ts"

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

/** What one model's requests share: how they are sent, where, what vectors to expect, and where to count them. */
export interface Target {
  readonly client: HttpClient.HttpClient
  readonly endpoint: Endpoint
  /** The vector length to expect; undefined: any one length. */
  readonly dimensions: number | undefined
  readonly usage: Ref.Ref<EmbedUsage>
}

/** The end of a wrong-length message when the settings asked for a length, since the model may not support it. */
const lengthNoteOf = (settings: OpenAiSettings): string =>
  settings.dimensions === undefined
    ? ""
    : ` (--dimensions or ${ENV.dimensions} asked for ${settings.dimensions}; not every model can shorten its vectors)`

/** The `POST /embeddings` request for `input`, with the key as a bearer token when there is one. */
const requestOf = (endpoint: Endpoint, input: ReadonlyArray<string>): HttpClientRequest.HttpClientRequest => {
  const { model, settings, url } = endpoint
  const body: Record<string, unknown> = { model, input }
  if (settings.dimensions !== undefined) body.dimensions = settings.dimensions
  const request = HttpClientRequest.post(url).pipe(HttpClientRequest.acceptJson, HttpClientRequest.bodyJsonUnsafe(body))
  return settings.apiKey === undefined ? request : HttpClientRequest.bearerToken(request, settings.apiKey)
}

/** The body as JSON, or undefined when it is not JSON (which the answer's check then reports). */
const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Reads a whole answer to `count` texts: its vectors, or why it failed (by status, or by what is wrong with it). */
const readAnswer = (
  target: Target,
  lengthNote: string,
  response: HttpClientResponse.HttpClientResponse,
  text: string,
  now: number,
  count: number
): Result.Result<Answer, Failed> => {
  if (response.status < 200 || response.status >= 300) {
    return Result.fail(failedAnswer(target.endpoint, response, text, now))
  }
  const json = parseJson(text)
  const answer = decodeAnswer(json, count, target.dimensions, lengthNote)
  if (Result.isSuccess(answer)) return Result.succeed(answer.success)
  return Result.fail(unusable(target.endpoint, json === undefined ? "it is not JSON" : answer.failure))
}

/** Makes the function for one try: send, wait for the whole answer (within the timeout), read it. */
const tryOnce = (target: Target) => {
  const { client, endpoint } = target
  const timeout = timedOut(endpoint)
  const lengthNote = lengthNoteOf(endpoint.settings)
  return (input: ReadonlyArray<string>): Effect.Effect<Answer, Failed> => {
    const request = requestOf(endpoint, input)
    return Effect.gen(function* () {
      // No trace headers (traceparent, b3): the service, often a third party's, has no use for our span ids.
      const response = yield* client
        .execute(request)
        .pipe(Effect.provideService(HttpClient.TracerPropagationEnabled, false))
      const text = yield* response.text
      const now = yield* Clock.currentTimeMillis
      const answer = readAnswer(target, lengthNote, response, text, now, input.length)
      if (Result.isFailure(answer)) return yield* Effect.fail(answer.failure)
      return answer.success
    }).pipe(
      Effect.timeoutOrElse({ duration: endpoint.settings.timeoutMillis, orElse: () => Effect.fail(timeout) }),
      Effect.catchTag("HttpClientError", (error) => Effect.fail(noAnswer(endpoint, error.reason)))
    )
  }
}

/** Makes the function that sends one batch, tried up to `retries + 1` times, counting what the successful try cost. */
export const sender = (target: Target) => {
  const once = tryOnce(target)
  const { settings } = target.endpoint
  const model = `openai:${target.endpoint.model}`
  return Effect.fn("OpenAiEmbeddings.send")(function* (input: ReadonlyArray<string>) {
    yield* Effect.annotateCurrentSpan({ "funcpipe.model": model, "funcpipe.texts": input.length })
    for (let tries = 1; ; tries++) {
      const result = yield* Effect.result(once(input))
      if (Result.isSuccess(result)) {
        const { tokens } = result.success
        yield* Ref.update(target.usage, (u) => ({
          requests: u.requests + 1,
          inputTokens: tokens === undefined ? u.inputTokens : (u.inputTokens ?? 0) + tokens
        }))
        yield* countEmbeddingRequest(model, "ok")
        if (tokens !== undefined) yield* countEmbeddingTokens(model, tokens)
        return result.success
      }
      const { askedMillis, reason, retry } = result.failure
      const last = !retry || tries > settings.retries
      yield* countEmbeddingRequest(model, last ? "failed" : "retried")
      if (last) return yield* aiError(reason(tries))
      yield* Effect.sleep(retryDelayMillis(tries, askedMillis, yield* Random.next, settings))
    }
  })
}
