/**
 * A chat model of an OpenAI-compatible Chat Completions service (OpenAI, Ollama, llama.cpp's server, vLLM, LM Studio)
 * as `effect/ai`'s `LanguageModel`, on `effect/http`'s HttpClient (the `@effect/ai-openai` betas do not load under
 * effect 4.1). Answers stream over server-sent events. A request is retried, with backoff, on a rate limit (waiting at
 * least what `Retry-After` asks), a server error or a lost connection, until its answer starts; an answer that breaks
 * off midway is not retried (it cannot be resumed). Each failure is a typed `AiError` whose description says what
 * went wrong and where, without the key, which is sent only as a bearer token.
 */

import { Clock, Effect, Layer, Random, Redacted, Result, Schema, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, type Response } from "effect/ai"
import { Sse } from "effect/encoding"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { codesOf, retryAfterMillis } from "./OpenAiFailures.ts"
import { retryDelayMillis } from "./OpenAiRequest.ts"

/** Where a chat model is and how its requests are sent. */
export interface ChatSettings {
  /** The service's address up to `/chat/completions`, e.g. `https://api.openai.com/v1`. */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string> | undefined
  /** How long a request may wait for the service's answer to start, and then again for its first words. */
  readonly timeoutMillis: number
  /** How long a streamed answer may pause between two pieces before it counts as lost. */
  readonly idleMillis: number
  /** The longest `Retry-After` waited for: a service asking more gets its answer at once, as a rate-limit failure. */
  readonly maxRetryAfterMillis: number
  /** How many times a failed request is tried again. */
  readonly retries: number
  readonly backoffMillis: number
  readonly maxBackoffMillis: number
}

export const defaultChatSettings = (baseUrl: string, apiKey?: Redacted.Redacted<string>): ChatSettings => ({
  baseUrl: baseUrl.replace(/\/+$/, ""),
  apiKey,
  timeoutMillis: 120_000,
  idleMillis: 60_000,
  maxRetryAfterMillis: 60_000,
  retries: 3,
  backoffMillis: 500,
  maxBackoffMillis: 20_000
})

const Usage = Schema.Struct({ prompt_tokens: Schema.Number, completion_tokens: Schema.Number })
type Usage = typeof Usage.Type

const Completion = Schema.Struct({
  choices: Schema.Array(Schema.Struct({ message: Schema.Struct({ content: Schema.NullOr(Schema.String) }) })),
  usage: Schema.optional(Schema.NullOr(Usage))
})
const decodeCompletion = Schema.decodeUnknownResult(Schema.fromJsonString(Completion))

const Delta = Schema.Struct({
  choices: Schema.Array(
    Schema.Struct({ delta: Schema.optional(Schema.Struct({ content: Schema.optional(Schema.NullOr(Schema.String)) })) })
  ),
  usage: Schema.optional(Schema.NullOr(Usage))
})
const decodeDelta = Schema.decodeUnknownResult(Schema.fromJsonString(Delta))

const error = (method: string, reason: AiError.AiErrorReason) => AiError.make({ module: "OpenAiChat", method, reason })

/** A service's address as messages show it: without a user name or password written into it. */
export const shownAddress = (url: string): string => url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, "$1")

/** The service's own words from an error body, on one line, shortened, and never with the key in them. */
const saidBy = (body: string, key: string | undefined): string => {
  let said = body
  try {
    const json = JSON.parse(body) as { readonly error?: { readonly message?: unknown } | string }
    const message = typeof json.error === "string" ? json.error : json.error?.message
    if (typeof message === "string") said = message
  } catch {
    // not JSON: the text itself
  }
  let words = said.replace(/\s+/g, " ").trim()
  if (key !== undefined && key !== "") words = words.replaceAll(key, "[the key]")
  return words.length > 300 ? `${words.slice(0, 299)}…` : words
}

/** A try that failed: whether another may help, how long the service asked to wait, and the error if none follows. */
interface Failed {
  readonly retry: boolean
  readonly askedMillis: number | undefined
  readonly reason: (tries: number) => AiError.AiErrorReason
}

/** What an answer's status means. */
const failedStatus = (
  settings: ChatSettings,
  model: string,
  response: HttpClientResponse.HttpClientResponse,
  body: string,
  now: number
): Failed => {
  const key = settings.apiKey === undefined ? undefined : Redacted.value(settings.apiKey)
  const said = saidBy(body, key)
  const http = `(HTTP ${response.status}${said === "" ? "" : `: ${said}`})`
  const service = shownAddress(settings.baseUrl)
  const code = response.status
  if (code === 401 || code === 403) {
    return {
      retry: false,
      askedMillis: undefined,
      reason: () =>
        new AiError.AuthenticationError({
          kind: key === undefined ? "MissingKey" : code === 401 ? "InvalidKey" : "InsufficientPermissions",
          description: `the chat service at ${service} refused the request ${http}: check its key`
        })
    }
  }
  if (code === 429 && /insufficient_quota|exceeded your current quota/i.test(body)) {
    return {
      retry: false,
      askedMillis: undefined,
      reason: () =>
        new AiError.QuotaExhaustedError({
          metadata: { description: `the chat service at ${service} says the account has no quota left ${http}` }
        })
    }
  }
  const askedMillis = code === 429 ? retryAfterMillis(response.headers, now) : undefined
  if (askedMillis !== undefined && askedMillis > settings.maxRetryAfterMillis) {
    return {
      retry: false,
      askedMillis,
      reason: () =>
        new AiError.RateLimitError({
          metadata: {
            description:
              `the chat service at ${service} asks to wait ${Math.ceil(askedMillis / 1000)} s before the next ` +
              `request, longer than the ${settings.maxRetryAfterMillis / 1000} s FuncPipe waits ${http}`
          }
        })
    }
  }
  if (code === 429) {
    return {
      retry: true,
      askedMillis,
      reason: (tries) =>
        new AiError.RateLimitError({
          metadata: {
            description: `the chat service at ${service} was still limiting requests after ${tries} tries ${http}`
          }
        })
    }
  }
  if (code === 408 || code >= 500) {
    return {
      retry: true,
      askedMillis: retryAfterMillis(response.headers, now),
      reason: (tries) =>
        new AiError.InternalProviderError({
          description: `the chat service at ${service} failed ${tries} tries ${http}; try again later`
        })
    }
  }
  return {
    retry: false,
    askedMillis: undefined,
    reason: () =>
      new AiError.InvalidRequestError({
        ...(code === 404 ? { parameter: "model" } : {}),
        description:
          code === 404
            ? `the chat service at ${service} has no model ${JSON.stringify(model)}, or no /chat/completions ${http}`
            : `the chat service at ${service} did not take the request ${http}`
      })
  }
}

/** The prompt as Chat Completions messages: each message's text (this provider sends no tools or files). */
const messagesOf = (prompt: Prompt.Prompt) =>
  prompt.content.map((message) => ({
    role: message.role,
    content:
      typeof message.content === "string"
        ? message.content
        : message.content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("")
  }))

const usageOf = (usage: Usage | null | undefined) => ({
  inputTokens: { total: usage?.prompt_tokens, uncached: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: usage?.completion_tokens, text: undefined, reasoning: undefined }
})

/** The chat model `model` at the service `settings` names; needs an `HttpClient`. */
export const makeChatModel = Effect.fn("OpenAiChat.make")(function* (model: string, settings: ChatSettings) {
  const client = yield* HttpClient.HttpClient
  const url = `${settings.baseUrl}/chat/completions`
  const service = shownAddress(settings.baseUrl)
  const lost = (description: string) =>
    new AiError.NetworkError({
      reason: "TransportError",
      method: "POST",
      url: `${service}/chat/completions`,
      description: `the chat service at ${service} ${description}`
    })

  /** One try: the response, once its status says the answer is coming; or why not. */
  const once = (prompt: Prompt.Prompt, stream: boolean) =>
    Effect.gen(function* () {
      const base = HttpClientRequest.post(url).pipe(
        HttpClientRequest.bodyJsonUnsafe({
          model,
          messages: messagesOf(prompt),
          stream,
          ...(stream ? { stream_options: { include_usage: true } } : {})
        })
      )
      const request = settings.apiKey === undefined ? base : HttpClientRequest.bearerToken(base, settings.apiKey)
      const response = yield* client
        .execute(request)
        .pipe(Effect.provideService(HttpClient.TracerPropagationEnabled, false))
      if (response.status >= 200 && response.status < 300) return Result.succeed(response)
      const body = yield* response.text
      return Result.fail(failedStatus(settings, model, response, body, yield* Clock.currentTimeMillis))
    }).pipe(
      Effect.timeoutOrElse({
        duration: settings.timeoutMillis,
        orElse: () =>
          Effect.succeed(
            Result.fail<Failed>({
              retry: true,
              askedMillis: undefined,
              reason: (tries) => lost(`began no answer within ${settings.timeoutMillis / 1000} s (${tries} tries)`)
            })
          )
      }),
      Effect.catchTag("HttpClientError", (e) => {
        const codes = codesOf(e)
        // Nobody listening, or no such host: another try would meet the same.
        const unreachable = codes.includes("ECONNREFUSED")
          ? "has nothing answering (connection refused). Is the service running, and is --llm-url right?"
          : codes.includes("ENOTFOUND") || codes.includes("EAI_AGAIN")
            ? "names a host that could not be found (DNS lookup failed). Check --llm-url"
            : undefined
        return Effect.succeed(
          Result.fail<Failed>(
            unreachable === undefined
              ? {
                  retry: true,
                  askedMillis: undefined,
                  reason: (tries) =>
                    lost(`could not be reached${codes.length === 0 ? "" : ` (${codes[0]})`} (${tries} tries)`)
                }
              : { retry: false, askedMillis: undefined, reason: () => lost(unreachable) }
          )
        )
      })
    )

  /** The response of the first try whose answer starts, after backoff between tries. */
  const send = (prompt: Prompt.Prompt, stream: boolean, method: string) =>
    Effect.gen(function* () {
      for (let tries = 1; ; tries++) {
        const result = yield* once(prompt, stream)
        if (Result.isSuccess(result)) return result.success
        const { askedMillis, reason, retry } = result.failure
        if (!retry || tries > settings.retries) return yield* Effect.fail(error(method, reason(tries)))
        yield* Effect.sleep(retryDelayMillis(tries, askedMillis, yield* Random.next, settings))
      }
    })

  const invalid = (method: string, description: string) =>
    error(method, new AiError.InvalidOutputError({ description: `the chat service at ${service} ${description}` }))

  return yield* LanguageModel.make({
    generateText: (options) =>
      Effect.gen(function* () {
        const response = yield* send(options.prompt, false, "generateText")
        const text = yield* response.text.pipe(
          Effect.mapError(() => error("generateText", lost("broke off its answer")))
        )
        const answer = decodeCompletion(text)
        if (Result.isFailure(answer)) return yield* Effect.fail(invalid("generateText", "answered with no completion"))
        const parts: Array<Response.PartEncoded> = [
          { type: "text", text: answer.success.choices[0]?.message.content ?? "" },
          { type: "finish", reason: "stop", usage: usageOf(answer.success.usage) }
        ]
        return parts
      }),
    streamText: (options) =>
      Stream.unwrap(
        Effect.map(send(options.prompt, true, "streamText"), (response) =>
          response.stream.pipe(
            // Its first words must come within the start limit (a service may send its headers before it has read the
            // prompt), and then no pause may last longer than the idle limit.
            (body) =>
              withinLimits(
                body,
                settings.timeoutMillis,
                settings.idleMillis,
                () => error("streamText", lost(`began no answer within ${settings.timeoutMillis / 1000} s`)),
                () => error("streamText", lost(`stopped answering for ${settings.idleMillis / 1000} s in mid-answer`))
              ),
            Stream.decodeText(),
            Stream.pipeThroughChannel(Sse.decode()),
            Stream.mapError((e) =>
              e._tag === "AiError"
                ? e
                : e._tag === "HttpClientError"
                  ? error("streamText", lost("broke off its answer"))
                  : invalid("streamText", `sent events that do not decode (${String(e)})`)
            ),
            Stream.takeWhile((event) => event.data !== "[DONE]"),
            Stream.mapEffect((event) => {
              const delta = decodeDelta(event.data)
              return Result.isSuccess(delta)
                ? Effect.succeed(delta.success)
                : Effect.fail(
                    invalid("streamText", `sent an event that is not a completion chunk: ${event.data.slice(0, 80)}`)
                  )
            })
          )
        )
      ).pipe(
        Stream.mapAccum(
          (): Usage | null | undefined => undefined,
          (usage, chunk: typeof Delta.Type) => {
            const delta = chunk.choices[0]?.delta?.content
            const parts: Array<Response.StreamPartEncoded> =
              delta === undefined || delta === null || delta === "" ? [] : [{ type: "text-delta", id: "0", delta }]
            return [chunk.usage ?? usage, parts] as const
          },
          {
            onHalt: (usage): Array<Response.StreamPartEncoded> => [
              { type: "text-end", id: "0" },
              { type: "finish", reason: "stop", usage: usageOf(usage) }
            ]
          }
        ),
        Stream.prepend<Response.StreamPartEncoded>([{ type: "text-start", id: "0" }])
      )
  })
})

/**
 * `self`, failing with `first()` when its first piece takes longer than `firstMillis`, and with `idle()` when any later
 * one takes longer than `idleMillis` after the one before.
 */
const withinLimits = <A, E, R, E2>(
  self: Stream.Stream<A, E, R>,
  firstMillis: number,
  idleMillis: number,
  first: () => E2,
  idle: () => E2
): Stream.Stream<A, E | E2, R> =>
  Stream.transformPull(self, (pull) =>
    Effect.sync(() => {
      let started = false
      return Effect.suspend(() =>
        pull.pipe(
          Effect.timeoutOrElse({
            duration: started ? idleMillis : firstMillis,
            orElse: () => Effect.fail(started ? idle() : first())
          }),
          Effect.tap(() => Effect.sync(() => void (started = true)))
        )
      )
    })
  )

/** `LanguageModel` for `model` at the service `settings` names; needs an `HttpClient`. */
export const layerChatModel = (model: string, settings: ChatSettings) =>
  Layer.effect(LanguageModel.LanguageModel, makeChatModel(model, settings))
