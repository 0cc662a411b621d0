/**
 * What OpenTelemetry costs a server (`npm run bench:telemetry -- --index FILE`): the built CLI serves the index with
 * telemetry off, with every trace exported, and with one trace in ten, to a collector on 127.0.0.1 that takes and
 * drops what it is sent; each setting answers the same lexical queries (a warm-up, then a fixed number), in
 * interleaved rounds, and the server's CPU time a request is read from Linux's /proc; then the load test: each server
 * loaded alone in turn, its answers a second against off's in the same round.
 */

import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { parseArgs } from "node:util"
import autocannon from "autocannon"
import { cliBundle } from "./Child.ts"

const { values } = parseArgs({
  options: {
    index: { type: "string" },
    rounds: { type: "string", default: "40" },
    requests: { type: "string", default: "1000" },
    // Then the load test's throughput: rounds in which each server in turn is loaded alone for this many seconds.
    "load-rounds": { type: "string", default: "10" },
    "load-seconds": { type: "string", default: "3" },
    bundle: { type: "string" },
    // Another build of the CLI, served with the same settings beside this one's (what a change saves, measured at
    // the same moments).
    against: { type: "string" }
  }
})
if (values.index === undefined) {
  console.error(
    "usage: npm run bench:telemetry -- --index FILE [--rounds 40] [--requests 1000] [--bundle PATH] [--against PATH]"
  )
  process.exit(2)
}
const index = values.index
const rounds = Number(values.rounds)
const requests = Number(values.requests)
const loadRounds = Number(values["load-rounds"])
const loadSeconds = Number(values["load-seconds"])
const built = cliBundle()
if (values.bundle === undefined && (built === undefined || built.stale)) {
  console.error("bench:telemetry: the CLI bundle is missing or older than the sources; run npm run build first")
  process.exit(2)
}
const bundle = values.bundle ?? built!.path

// The collector: reads each export and answers 200, so that it costs the shared cores little.
const collector = createServer((request, response) => {
  request.resume()
  request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end("{}"))
})
await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve))
const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`

const SETTINGS: Record<string, Record<string, string>> = {
  off: {},
  "every trace": { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint },
  "one trace in ten": {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: "0.1"
  }
}
const WORDS = ["list files", "git commit", "docker run", "tar extract", "ssh key", "find name", "grep pattern"]

/** A process's CPU time (user and system) in milliseconds, from /proc. */
const cpuMillis = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** A server of one setting, up for the whole run: its pid and its URL. */
interface Served {
  readonly name: string
  readonly pid: number
  readonly url: string
  readonly stop: () => Promise<unknown>
}

/** Serves the index with `env` (the caller's OpenTelemetry variables left out: each setting is only its own). */
const serve = async (name: string, env: Record<string, string>, cli = bundle): Promise<Served> => {
  const own = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("OTEL_")))
  // As the launcher starts it (16 MB semi-spaces).
  const server = spawn(process.execPath, ["--max-semi-space-size=16", cli, "serve", "--index", index, "--port", "0"], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...own, ...env, FUNCPIPE_SERVER_PROCESS: "1" }
  })
  let stderr = ""
  const url = await new Promise<string>((resolve, reject) => {
    server.stderr.on("data", (data: Buffer) => {
      stderr += data.toString()
      const found = /listening on (http:\/\/\S+) /.exec(stderr)
      if (found !== null) resolve(found[1]!)
    })
    server.on("exit", () => reject(new Error(`the server exited: ${stderr}`)))
  })
  const exited = new Promise((resolve) => server.once("exit", resolve))
  return {
    name,
    pid: server.pid!,
    url,
    stop: () => {
      server.kill("SIGTERM")
      return exited
    }
  }
}

let sent = 0
/** Sends queries to a server at 8 connections, `amount` of them or for `seconds`. */
const load = async (server: Served, amount: { amount: number } | { duration: number }) => {
  const result = await autocannon({
    url: `${server.url}/v1/query`,
    connections: 8,
    ...amount,
    method: "POST",
    requests: [
      {
        setupRequest: (request: Record<string, unknown>) => ({
          ...request,
          body: JSON.stringify({ text: WORDS[sent++ % WORDS.length] })
        })
      }
    ]
  })
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${result.errors} errors, ${result.non2xx} non-2xx`)
  return result
}

/** Sends `amount` queries to a server at 8 connections; its CPU µs a query. */
const burst = async (server: Served, amount: number): Promise<number> => {
  const before = cpuMillis(server.pid)
  await load(server, { amount })
  return ((cpuMillis(server.pid) - before) * 1000) / amount
}

// Every setting's server is up for the whole run, warmed alike; then each round sends each the same burst at the same
// time, so that what else the shared machine does (which moves a server's CPU a query by up to half from one minute
// to the next) falls on all settings alike.
const servers: Array<Served> = []
for (const [name, env] of Object.entries(SETTINGS)) servers.push(await serve(name, env))
if (values.against !== undefined)
  for (const [name, env] of Object.entries(SETTINGS))
    if (name !== "off") servers.push(await serve(`${name} (--against)`, env, values.against))
for (const server of servers) await burst(server, 10_000)
const figures = new Map<string, Array<number>>(servers.map((server) => [server.name, []]))
// CPU time, in µs, and requests, each setting's, over all rounds.
const spent = new Map<string, { cpu: number; requests: number }>(servers.map((s) => [s.name, { cpu: 0, requests: 0 }]))
for (let round = 1; round <= rounds; round++) {
  const micros = await Promise.all(servers.map((server) => burst(server, requests)))
  servers.forEach((server, k) => {
    figures.get(server.name)!.push(micros[k]!)
    const total = spent.get(server.name)!
    total.cpu += micros[k]! * requests
    total.requests += requests
  })
  if (round % 10 === 0 || round === rounds)
    console.error(
      `round ${round}: ${servers.map((s) => `${s.name} ${Math.round(figures.get(s.name)!.at(-1)!)} µs`).join(", ")}`
    )
}
// The load test: each server alone at full speed in turn (the order turning each round, so that none is always first
// after a pause); its answers a second, against off's in the same round.
const answered = new Map<string, Array<number>>(servers.map((server) => [server.name, []]))
for (let round = 0; round < loadRounds; round++)
  for (let k = 0; k < servers.length; k++) {
    const server = servers[(round + k) % servers.length]!
    const result = await load(server, { duration: loadSeconds })
    answered.get(server.name)!.push(result.requests.total / loadSeconds)
  }
// Stopped, and their last exports sent, before the collector closes.
await Promise.all(servers.map((server) => server.stop()))
collector.close()
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const off = figures.get("off")!
const offTotal = spent.get("off")!
const percent = (x: number) => `${x >= 1 ? "+" : "−"}${Math.abs(Math.round(100 * (x - 1)))} %`
console.log(
  `| telemetry | server CPU a query, all ${rounds} rounds | against off, all rounds | against off, median of the rounds' ratios |`
)
console.log("| --- | ---: | ---: | ---: |")
for (const [name, xs] of figures) {
  const total = spent.get(name)!
  const mean = total.cpu / total.requests
  const ratio = mean / (offTotal.cpu / offTotal.requests)
  const medianRatio = median(xs.map((x, k) => x / off[k]!))
  console.log(
    `| ${name} | ${Math.round(mean)} µs | ${name === "off" ? "" : percent(ratio)} | ${name === "off" ? "" : percent(medianRatio)} |`
  )
}
const offAnswered = answered.get("off")!
console.log("")
console.log(
  `| telemetry | answers a second, median of ${loadRounds} rounds of ${loadSeconds} s | against off, median of the rounds' ratios |`
)
console.log("| --- | ---: | ---: |")
for (const [name, xs] of answered)
  console.log(
    `| ${name} | ${Math.round(median(xs))} | ${name === "off" ? "" : percent(median(xs.map((x, k) => x / offAnswered[k]!)))} |`
  )
