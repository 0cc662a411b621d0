/** The settings of the `openai:` models: where the service is, its key, and how hard to push it, read and checked. */

import { Config, Context, Redacted, Result } from "effect"

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
