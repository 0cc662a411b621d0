/**
 * What OpenTelemetry costs a server (`npm run bench:telemetry -- --index FILE`): the built CLI serves the index with
 * telemetry off, with every trace exported, and with one trace in ten, to a collector on 127.0.0.1 that takes and
 * drops what it is sent; each setting answers the same lexical queries (a warm-up, then a fixed number), in
 * interleaved rounds, and the server's CPU time a request is read from Linux's /proc.
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
    rounds: { type: "string", default: "3" },
    requests: { type: "string", default: "20000" },
    bundle: { type: "string" }
  }
})
if (values.index === undefined) {
  console.error("usage: npm run bench:telemetry -- --index FILE [--rounds 3] [--requests 20000] [--bundle PATH]")
  process.exit(2)
}
const index = values.index
const rounds = Number(values.rounds)
const requests = Number(values.requests)
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

/** Serves the index with `env`, sends `amount` queries after a warm-up; the server's CPU µs a query. */
const measure = async (env: Record<string, string>): Promise<number> => {
  // The caller's OpenTelemetry variables are left out: each setting is only its own. The server runs as the launcher
  // starts it (16 MB semi-spaces).
  const own = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("OTEL_")))
  const server = spawn(
    process.execPath,
    ["--max-semi-space-size=16", bundle, "serve", "--index", index, "--port", "0"],
    {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...own, ...env, FUNCPIPE_SERVER_PROCESS: "1" }
    }
  )
  let stderr = ""
  const url = await new Promise<string>((resolve, reject) => {
    server.stderr.on("data", (data: Buffer) => {
      stderr += data.toString()
      const found = /listening on (http:\/\/\S+) /.exec(stderr)
      if (found !== null) resolve(found[1]!)
    })
    server.on("exit", () => reject(new Error(`the server exited: ${stderr}`)))
  })
  let i = 0
  const load = (amount: number) =>
    autocannon({
      url: `${url}/v1/query`,
      connections: 16,
      amount,
      method: "POST",
      requests: [
        {
          setupRequest: (request: Record<string, unknown>) => ({
            ...request,
            body: JSON.stringify({ text: WORDS[i++ % WORDS.length] })
          })
        }
      ]
    })
  await load(Math.ceil(requests / 2))
  const before = cpuMillis(server.pid!)
  const result = await load(requests)
  const after = cpuMillis(server.pid!)
  // Stopped, and its last export sent, before the next setting starts.
  const exited = new Promise((resolve) => server.once("exit", resolve))
  server.kill("SIGTERM")
  await exited
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${result.errors} errors, ${result.non2xx} non-2xx`)
  return ((after - before) * 1000) / requests
}

const figures = new Map<string, Array<number>>()
for (let round = 1; round <= rounds; round++) {
  for (const [name, env] of Object.entries(SETTINGS)) {
    const micros = await measure(env)
    figures.set(name, [...(figures.get(name) ?? []), micros])
    console.error(`round ${round}, ${name}: ${Math.round(micros)} µs a query`)
  }
}
collector.close()
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
// The least of the rounds too: on a shared machine, what other work adds only ever raises a round's figure.
const off = figures.get("off")!
const percent = (x: number, base: number) => `${x >= base ? "+" : ""}${Math.round((100 * (x - base)) / base)} %`
console.log("| telemetry | server CPU a query (each round) | median | least | against off (median, least) |")
console.log("| --- | --- | ---: | ---: | ---: |")
for (const [name, xs] of figures) {
  const m = median(xs)
  const least = Math.min(...xs)
  const change = name === "off" ? "" : `${percent(m, median(off))}, ${percent(least, Math.min(...off))}`
  console.log(
    `| ${name} | ${xs.map((x) => `${Math.round(x)} µs`).join(" · ")} | ${Math.round(m)} µs | ${Math.round(least)} µs | ${change} |`
  )
}
