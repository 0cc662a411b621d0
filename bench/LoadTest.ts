/**
 * The server's load test (`npm run loadtest`): `funcpipe serve` over a SciFact-sized index on 127.0.0.1, loaded by
 * autocannon with lexical queries, then with lexical and vector queries mixed, then with malformed input (random bodies,
 * wrong types, huge bodies, clients that stall); reports throughput, latency, errors and the server's memory.
 */

import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { cpus, loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import autocannon from "autocannon"
import { cliBundle, cliEntry, REPO_ROOT } from "./Child.ts"
import { prng, syntheticDocs, writeJsonlCorpus } from "./Corpus.ts"

const USAGE = `Usage: npm run loadtest -- [options]
  --index PATH        an existing index to serve (default: generate a corpus of --mb MB and index it)
  --mb N              size of the generated corpus in MB (default 8, about SciFact's size)
  --duration S        seconds of each load phase (default 60)
  --connections N     concurrent connections (default 64)
  --vector-share X    share of vector queries in the mixed phase (default 0.25)
  --malformed S       seconds of the malformed-input phase (default 15)
  --warm-up S         least seconds of warm-up before the measured phases (default 10)
  --seed N            seed of the corpus and the queries (default 42)
  --bundle PATH       serve this CLI bundle (e.g. a copy of packages/cli/dist of an older build, to compare two builds
                      on the same index) in a process of its own, as the launcher does; RSS then leaves out the launcher`

const log = (line: string) => void process.stderr.write(`${line}\n`)

let flags: ReturnType<typeof parse>
function parse() {
  return parseArgs({
    options: {
      help: { type: "boolean", default: false },
      index: { type: "string" },
      mb: { type: "string", default: "8" },
      duration: { type: "string", default: "60" },
      connections: { type: "string", default: "64" },
      "vector-share": { type: "string", default: "0.25" },
      malformed: { type: "string", default: "15" },
      "warm-up": { type: "string", default: "10" },
      seed: { type: "string", default: "42" },
      bundle: { type: "string" }
    }
  }).values
}
try {
  flags = parse()
} catch (error) {
  console.error(`loadtest: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`)
  process.exit(2)
}
if (flags.help) {
  console.log(USAGE)
  process.exit(0)
}
const number = (name: string, value: string, min: number) => {
  const n = Number(value)
  if (!Number.isFinite(n) || n < min) {
    console.error(`loadtest: --${name} must be a number of at least ${min}, not ${JSON.stringify(value)}\n${USAGE}`)
    process.exit(2)
  }
  return n
}
const MB = number("mb", flags.mb, 0.1)
const DURATION = number("duration", flags.duration, 1)
const CONNECTIONS = number("connections", flags.connections, 1)
const VECTOR_SHARE = number("vector-share", flags["vector-share"], 0)
const MALFORMED = number("malformed", flags.malformed, 0)
const WARM_UP_SECONDS = number("warm-up", flags["warm-up"], 0)
const SEED = number("seed", flags.seed, 0)

const bundle = cliBundle()
if (bundle?.stale === true) {
  console.error(
    "loadtest: the CLI bundle is older than the sources, so the server would run old code; run npm run build first"
  )
  process.exit(2)
}

const work = mkdtempSync(join(tmpdir(), "funcpipe-loadtest-"))
const cleanup = () => rmSync(work, { recursive: true, force: true })

/** Runs the CLI to completion, failing on a non-zero exit. */
const runCli = (args: ReadonlyArray<string>) =>
  new Promise<void>((done, fail) => {
    const child = spawn(cliEntry(), args, { cwd: REPO_ROOT, stdio: ["ignore", "ignore", "inherit"] })
    child.on("exit", (code) => (code === 0 ? done() : fail(new Error(`funcpipe ${args[0]} exited with ${code}`))))
  })

/** Starts `funcpipe serve` on a free port and resolves once it listens, with its URL and process id. */
const startServer = (index: string) =>
  new Promise<{ readonly url: string; readonly pid: number; readonly exited: Promise<number | null> }>((done, fail) => {
    // The launcher itself, as `npx funcpipe serve` runs it: its first line sets Node's memory flags.
    const args = ["serve", "--index", index, "--port", "0"]
    const child =
      flags.bundle === undefined
        ? spawn(cliEntry(), args, { cwd: REPO_ROOT, stdio: ["ignore", "ignore", "pipe"] })
        : spawn(process.execPath, ["--max-semi-space-size=16", resolve(flags.bundle), ...args], {
            cwd: REPO_ROOT,
            stdio: ["ignore", "ignore", "pipe"],
            env: { ...process.env, FUNCPIPE_SERVER_PROCESS: "1" }
          })
    const exited = new Promise<number | null>((exit) => child.on("exit", exit))
    let stderr = ""
    child.stderr.on("data", (data: Buffer) => {
      stderr += data.toString()
      const url = /listening on (http:\/\/\S+) /.exec(stderr)?.[1]
      if (url !== undefined) done({ url, pid: child.pid!, exited })
    })
    void exited.then((code) => fail(new Error(`the server exited with ${code} before listening:\n${stderr}`)))
  })

/**
 * Resident set size in MB (Linux /proc) of a process and its descendants: `funcpipe serve` is the launcher and the
 * server process it starts (see packages/cli/bin/funcpipe.mjs), and both count against the machine.
 */
const rssMb = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const own = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim()
  return own + (children === "" ? 0 : children.split(/\s+/).reduce((sum, child) => sum + rssMb(Number(child)), 0))
}

/**
 * CPU seconds (user and system, Linux /proc, at the usual 100 ticks a second) a process and its descendants have used:
 * the server's CPU per request holds steadier than its throughput on a machine other work shares.
 */
const cpuSeconds = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  const own = (Number(fields[11]) + Number(fields[12])) / 100
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim()
  return own + (children === "" ? 0 : children.split(/\s+/).reduce((sum, child) => sum + cpuSeconds(Number(child)), 0))
}

/** Query texts drawn from the corpus: one to three words of a document, as a person would type them. */
const queryTexts = (count: number): Array<string> => {
  const random = prng(SEED + 1)
  const texts: Array<string> = []
  for (const doc of syntheticDocs(SEED, Math.round(MB * 1e6))) {
    const words = doc.body.split(/[^\p{L}]+/u).filter((w) => w.length > 2)
    if (words.length < 3) continue
    const n = 1 + Math.floor(random() * 3)
    const at = Math.floor(random() * (words.length - n))
    texts.push(words.slice(at, at + n).join(" "))
    if (texts.length >= count) break
  }
  return texts
}

interface Phase {
  readonly name: string
  readonly requestsPerSecond: number
  readonly p50: number
  readonly p99: number
  readonly requests: number
  readonly errors: number
  readonly non2xx: number
  /** The server's CPU time (all its processes) over the phase, per request answered. */
  readonly cpuPerRequestUs: number
}

/** One autocannon run posting `bodies` in turn to `/v1/query`. */
const load = async (
  name: string,
  server: { readonly url: string; readonly pid: number },
  bodies: ReadonlyArray<string>,
  seconds: number
): Promise<Phase> => {
  log(`${name}: ${seconds} s at ${CONNECTIONS} connections…`)
  const url = server.url
  const cpuBefore = cpuSeconds(server.pid)
  let next = 0
  const result = await autocannon({
    url: `${url}/v1/query`,
    connections: CONNECTIONS,
    duration: seconds,
    method: "POST",
    headers: { "content-type": "application/json" },
    requests: [
      { setupRequest: (request: Record<string, unknown>) => ({ ...request, body: bodies[next++ % bodies.length] }) }
    ]
  })
  return {
    name,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    cpuPerRequestUs: ((cpuSeconds(server.pid) - cpuBefore) * 1e6) / Math.max(1, result.requests.total)
  }
}

/**
 * Sends each body twice, at the load's concurrency, and goes on for at least `WARM_UP_SECONDS` in all: the server's
 * heap settles into its cycle of collections with time under load, not with the number of distinct queries.
 */
const warmUp = async (url: string, bodies: ReadonlyArray<string>) => {
  log(`warm-up: ${fmt(bodies.length * 2)} requests, and at least ${WARM_UP_SECONDS} s…`)
  const started = performance.now()
  let next = 0
  const options = {
    url: `${url}/v1/query`,
    connections: CONNECTIONS,
    method: "POST",
    headers: { "content-type": "application/json" },
    requests: [
      { setupRequest: (request: Record<string, unknown>) => ({ ...request, body: bodies[next++ % bodies.length] }) }
    ]
  }
  await autocannon({ ...options, amount: bodies.length * 2 })
  const left = WARM_UP_SECONDS - (performance.now() - started) / 1000
  if (left >= 1) await autocannon({ ...options, duration: Math.ceil(left) })
}

/** Holds `count` connections that send a request's headers a byte at a time and never finish. */
const stallingClients = (url: string, count: number) => {
  const { hostname, port } = new URL(url)
  const head = "POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n"
  const sockets: Array<Socket> = []
  const timers: Array<ReturnType<typeof setInterval>> = []
  for (let i = 0; i < count; i++) {
    const socket = connect(Number(port), hostname)
    socket.on("error", () => {})
    let at = 0
    timers.push(
      setInterval(() => {
        if (at < head.length && !socket.destroyed) socket.write(head[at++]!)
      }, 200)
    )
    sockets.push(socket)
  }
  return () => {
    for (const timer of timers) clearInterval(timer)
    for (const socket of sockets) socket.destroy()
  }
}

/** Malformed requests: random bytes, wrong types, unknown fields, unknown routes, and bodies over the limit. */
const malformedRequests = (): Array<Record<string, unknown>> => {
  const random = prng(SEED + 2)
  const requests: Array<Record<string, unknown>> = []
  const bytes = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(random() * 256))).join("")
  for (let i = 0; i < 50; i++)
    requests.push({ method: "POST", path: "/v1/query", body: bytes(1 + Math.floor(random() * 400)) })
  const wrong = [
    { text: 42 },
    { text: "moon", top_k: "ten" },
    { text: "moon", top_k: -1 },
    { text: "moon", top_k: 1e9 },
    { text: "", mode: "sideways" },
    { text: ["a"], explain: "yes" },
    { queries: "all" },
    null,
    [],
    { text: "moon", extra: { deeply: { nested: [1, 2, 3] } } }
  ]
  for (const body of wrong) requests.push({ method: "POST", path: "/v1/query", body: JSON.stringify(body) })
  requests.push({
    method: "POST",
    path: "/v1/query/batch",
    body: JSON.stringify({ queries: Array(500).fill({ text: "x" }) })
  })
  requests.push({ method: "GET", path: "/v1/documents/%E0%A4%A" })
  requests.push({ method: "DELETE", path: "/v1/documents/x" })
  requests.push({ method: "GET", path: "/../../etc/passwd" })
  const huge = JSON.stringify({ text: "a".repeat(2 * 1024 * 1024) })
  for (let i = 0; i < 5; i++) requests.push({ method: "POST", path: "/v1/query", body: huge })
  return requests
}

const fmt = (x: number, digits = 0) =>
  x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

try {
  let index = flags.index === undefined ? undefined : resolve(flags.index)
  if (index === undefined) {
    const corpus = join(work, "corpus.jsonl")
    const written = await writeJsonlCorpus(corpus, Math.round(MB * 1e6), SEED)
    log(`generated ${fmt(written.docs)} documents (${fmt(written.bytes / 1e6, 1)} MB); indexing…`)
    index = join(work, "index.db")
    await runCli(["index", corpus, "--index", index])
  }
  const server = await startServer(index)
  const crashed = server.exited.then((code) => `the server exited with ${code} during the test`)
  const rssReady = rssMb(server.pid)

  const texts = queryTexts(2000)
  const lexical = texts.map((text, i) => JSON.stringify({ text, top_k: 10 + (i % 3) * 5 }))
  const mixed = texts.map((text, i) =>
    JSON.stringify({ text, top_k: 10, mode: (i * 0.6180339887) % 1 < VECTOR_SHARE ? "vector" : "lexical" })
  )
  const before = await (await fetch(`${server.url}/v1/query`, { method: "POST", body: lexical[0]! })).text()

  // The warm-up sends every query of both phases twice and lasts at least --warm-up seconds, so the server's caches
  // (decoded postings and chunks, document texts, compiled code) hold what the measured phases use and its heap has
  // settled into its cycle of collections: growth after it is what a long run would add.
  await warmUp(server.url, [...lexical, ...mixed])
  const rssWarm = rssMb(server.pid)
  // RSS once a second during the measured phases, to tell a leak (steady growth) from a heap settling.
  const samples: Array<number> = []
  const sampler = setInterval(() => samples.push(rssMb(server.pid)), 1000)
  const phases = [
    await load("lexical", server, lexical, DURATION),
    await load(`mixed (${Math.round(VECTOR_SHARE * 100)} % vector)`, server, mixed, DURATION)
  ]
  clearInterval(sampler)
  const rssEnd = rssMb(server.pid)
  const half = Math.floor(samples.length / 2)
  const rssPeakFirstHalf = Math.max(...samples.slice(0, half))
  const rssPeakSecondHalf = Math.max(...samples.slice(half))

  // Malformed input while stalled connections hold sockets open; then the server must still answer correctly.
  let malformed: { requests: number; byStatus: Record<string, number>; errors: number } | undefined
  if (MALFORMED > 0) {
    log(`malformed input: ${MALFORMED} s, with 200 connections that stall mid-request…`)
    const release = stallingClients(server.url, 200)
    const byStatus: Record<string, number> = {}
    const result = await new Promise<autocannon.Result>((done, fail) => {
      const instance = autocannon(
        {
          url: server.url,
          connections: 16,
          duration: MALFORMED,
          headers: { "content-type": "application/json" },
          requests: malformedRequests()
        },
        (error, result) => (error === null ? done(result) : fail(error))
      )
      instance.on("response", (_client, status) => {
        byStatus[status] = (byStatus[status] ?? 0) + 1
      })
    })
    release()
    malformed = { requests: result.requests.total, byStatus, errors: result.errors }
  }
  const after = await Promise.race([
    fetch(`${server.url}/v1/query`, { method: "POST", body: lexical[0]! }).then((r) => r.text()),
    crashed
  ])
  const healthy = after === before
  const rssFinal = rssMb(server.pid)
  process.kill(server.pid, "SIGTERM")
  const exitCode = await server.exited

  const lines = [
    `| phase | requests/s | p50 ms | p99 ms | server CPU µs/request | requests | errors | non-2xx |`,
    `| --- | --- | --- | --- | --- | --- | --- | --- |`,
    ...phases.map(
      (p) =>
        `| ${p.name} | ${fmt(p.requestsPerSecond)} | ${p.p50} | ${p.p99} | ${fmt(p.cpuPerRequestUs)} | ` +
        `${fmt(p.requests)} | ${p.errors} | ${p.non2xx} |`
    ),
    "",
    `server RSS (${flags.bundle === undefined ? "the launcher and the server process" : "the server process"}): ${fmt(rssReady)} MB when ready, ${fmt(rssWarm)} MB after the warm-up, ${fmt(rssEnd)} MB after the load ` +
      `(${fmt(((rssEnd - rssWarm) / rssWarm) * 100, 1)} % since the warm-up; peak ${fmt(rssPeakFirstHalf)} MB in the first ` +
      `half of the load, ${fmt(rssPeakSecondHalf)} MB in the second), ${fmt(rssFinal)} MB after the malformed input`,
    `machine: ${cpus().length} cores, load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")} at the end (the load generator runs on the same cores)`,
    ...(malformed === undefined
      ? []
      : [
          `malformed input: ${fmt(malformed.requests)} requests, answers ${Object.entries(malformed.byStatus)
            .map(([status, n]) => `${status} ×${fmt(n)}`)
            .join(", ")}, ${malformed.errors} connection errors`
        ]),
    `after it all the server ${healthy ? "answered the first query exactly as before" : `answered differently: ${after.slice(0, 200)}`}` +
      ` and stopped with exit code ${exitCode}`
  ]
  console.log(lines.join("\n"))
  const lexicalPhase = phases[0]!
  const failures = [
    ...phases
      .filter((p) => p.errors > 0 || p.non2xx > 0)
      .map((p) => `${p.name}: ${p.errors} errors, ${p.non2xx} non-2xx answers`),
    ...(malformed !== undefined && Object.keys(malformed.byStatus).some((s) => s.startsWith("5"))
      ? ["malformed input got a 5xx answer"]
      : []),
    ...(healthy ? [] : ["the server did not answer correctly after the malformed input"]),
    ...(exitCode === 0 ? [] : [`the server stopped with exit code ${exitCode}`])
  ]
  const targets = [
    `lexical ≥ 2,000 requests/s: ${lexicalPhase.requestsPerSecond >= 2000 ? "met" : "missed"}`,
    `lexical p99 ≤ 50 ms: ${lexicalPhase.p99 <= 50 ? "met" : "missed"}`,
    `RSS growth ≤ 10 % over the load: ${(rssEnd - rssWarm) / rssWarm <= 0.1 ? "met" : "missed"}`
  ]
  console.log(`targets: ${targets.join("; ")}`)
  cleanup()
  if (failures.length > 0) {
    console.error(`loadtest: ${failures.join("; ")}`)
    process.exit(1)
  }
} catch (error) {
  cleanup()
  console.error(`loadtest: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
}
