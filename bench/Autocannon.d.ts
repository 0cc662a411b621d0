/** The part of autocannon's API the load test uses (the package ships no types). */
declare module "autocannon" {
  interface Histogram {
    readonly average: number
    readonly total: number
    readonly p50: number
    readonly p99: number
  }
  interface Result {
    readonly requests: Histogram
    readonly latency: Histogram
    readonly errors: number
    readonly timeouts: number
    readonly non2xx: number
  }
  interface Options {
    readonly url: string
    readonly connections?: number
    readonly duration?: number
    readonly amount?: number
    readonly method?: string
    readonly headers?: Record<string, string>
    readonly requests?: ReadonlyArray<Record<string, unknown>>
  }
  interface Instance {
    on(event: "response", listener: (client: unknown, status: number) => void): Instance
  }
  function autocannon(options: Options): Promise<Result>
  function autocannon(options: Options, callback: (error: Error | null, result: Result) => void): Instance
  namespace autocannon {
    export type { Result }
  }
  export default autocannon
}
