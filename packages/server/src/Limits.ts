/**
 * Load limits of `serve`: a rate per client (a token bucket by remote address; 429 with `Retry-After` past it), and a
 * bound on requests answered at once with a bounded queue behind it (503 at once when the queue is full, rather than
 * an answer that comes ever later). Both are off unless asked for.
 */

import { Clock, Effect, Semaphore } from "effect"

/** A client's allowance: `perSecond` requests a second on average, up to `burst` at once. */
export interface RateLimit {
  readonly perSecond: number
  readonly burst: number
}

/** Requests answered at once, and how many more may wait for a turn. */
export interface ConcurrencyLimit {
  readonly inFlight: number
  readonly queue: number
}

/** Clients remembered at most; past it the longest idle are forgotten (they start again with a full bucket). */
const MAX_CLIENTS = 10_000

/** A refusal: the status, its JSON body and its headers. */
export interface Refusal {
  readonly status: 429 | 503
  readonly body: { readonly _tag: string; readonly message: string }
  readonly headers: Record<string, string>
}

/**
 * The rate limit's buckets. `take(client)` spends one request of the client's allowance, or says how long until it
 * has one again.
 */
export const rateLimiter = (limit: RateLimit) => {
  const buckets = new Map<string, { tokens: number; at: number }>()
  return {
    take: (client: string): Effect.Effect<Refusal | undefined> =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const known = buckets.get(client)
        const bucket = known ?? { tokens: limit.burst, at: now }
        // Refilled for the time since it was last used, up to the burst.
        bucket.tokens = Math.min(limit.burst, bucket.tokens + ((now - bucket.at) / 1000) * limit.perSecond)
        bucket.at = now
        // Most recently used last, so the first in the map are the longest idle.
        buckets.delete(client)
        buckets.set(client, bucket)
        for (const oldest of buckets.keys()) {
          if (buckets.size <= MAX_CLIENTS) break
          buckets.delete(oldest)
        }
        if (bucket.tokens >= 1) {
          bucket.tokens -= 1
          return undefined
        }
        const seconds = Math.max(1, Math.ceil((1 - bucket.tokens) / limit.perSecond))
        return {
          status: 429,
          body: {
            _tag: "RateLimited",
            message:
              `too many requests from this client: this server answers ${limit.perSecond} a second ` +
              `(${limit.burst} at once); try again in ${seconds} s`
          },
          headers: { "retry-after": String(seconds) }
        }
      })
  }
}

/**
 * The concurrency limit: `run(answer, refused)` answers when one of `inFlight` turns is free, waiting behind at most
 * `queue` others; with the queue full it answers `refused(…)` at once.
 */
export const concurrencyLimiter = (limit: ConcurrencyLimit) => {
  const turns = Semaphore.makeUnsafe(limit.inFlight)
  // Requests admitted: answered or waiting for a turn.
  let admitted = 0
  const overloaded: Refusal = {
    status: 503,
    body: {
      _tag: "Overloaded",
      message:
        `the server is answering ${limit.inFlight} requests with ${limit.queue} more waiting, as many as it ` +
        "takes; try again shortly"
    },
    headers: { "retry-after": "1" }
  }
  return <A, E, R>(answer: Effect.Effect<A, E, R>, refused: (refusal: Refusal) => A): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      if (admitted >= limit.inFlight + limit.queue) return Effect.succeed(refused(overloaded))
      admitted++
      return turns
        .withPermits(1)(answer)
        .pipe(Effect.ensuring(Effect.sync(() => admitted--)))
    })
}
