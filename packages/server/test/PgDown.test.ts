/**
 * A server over a PostgreSQL index starts while the database is down, answers 503 with the reason, and serves once it
 * is back, as a server over a SQLite file that does not exist yet does. The database "comes back" when a proxy starts
 * forwarding the port the server was given to the test server.
 */
import { createServer, connect as netConnect, type Server, type Socket } from "node:net"
import { NodeServices } from "@effect/platform-node"
import { assert, it } from "@effect/vitest"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { indexPaths } from "@funcpipe/pipeline/programs/IndexRun"
import { DocumentSource } from "@funcpipe/pipeline/read/DocumentSource"
import { layerPostgres } from "@funcpipe/pipeline/store/postgres/PgIndexStore"
import { describePg, freshSchema } from "@funcpipe/test-kit/PgFixture"
import { Effect, Layer, Result, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { layer } from "../src/Server.ts"
import { DOCS, send, testOptions } from "./Fixture.ts"

/** A port nothing listens on (yet). */
const freePort = () =>
  Effect.promise(
    () =>
      new Promise<number>((resolve) => {
        const probe = createServer().listen(0, "127.0.0.1", () => {
          const { port } = probe.address() as { port: number }
          probe.close(() => resolve(port))
        })
      })
  )

/** Forwards `port` on 127.0.0.1 to `target`, until the scope closes (which cuts its connections). */
const proxy = (port: number, target: URL) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ readonly server: Server; readonly sockets: Set<Socket> }>((resolve) => {
          const sockets = new Set<Socket>()
          const server = createServer((client) => {
            const upstream = netConnect(Number(target.port || 5432), target.hostname)
            for (const socket of [client, upstream]) {
              sockets.add(socket)
              socket.on("close", () => sockets.delete(socket))
              socket.on("error", () => {
                client.destroy()
                upstream.destroy()
              })
            }
            client.pipe(upstream).pipe(client)
          })
          server.listen(port, "127.0.0.1", () => resolve({ server, sockets }))
        })
    ),
    ({ server, sockets }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => resolve())
          })
      )
  )

describePg("a server whose PostgreSQL is down", () => {
  it.live(
    "starts, answers 503 with the reason, says so once, and serves when the database is back",
    () =>
      Effect.gen(function* () {
        const { url } = yield* freshSchema
        const source = Layer.succeed(
          DocumentSource,
          DocumentSource.of({
            read: () =>
              Stream.fromIterable(DOCS.map((doc, i) => Result.succeed({ source: "docs.jsonl", line: i + 1, doc }))),
            size: () => Effect.succeed(0)
          })
        )
        yield* indexPaths(["docs.jsonl"]).pipe(
          Effect.provide(Layer.mergeAll(layerPostgres(url), Embedder.layerLocalSha256, source, NodeServices.layer))
        )
        const port = yield* freePort()
        const down = new URL(url)
        const real = new URL(url)
        down.hostname = "127.0.0.1"
        down.port = String(port)
        const lines: Array<string> = []
        const server = Layer.mergeAll(
          layer(testOptions({ pollMillis: 100, report: (line) => Effect.sync(() => void lines.push(line)) })),
          FetchHttpClient.layer
        ).pipe(Layer.provide(Layer.mergeAll(layerPostgres(down.href), Embedder.layerLocalSha256, NodeServices.layer)))
        yield* Effect.gen(function* () {
          const first = yield* send("POST", "/v1/query", { text: "moon" })
          assert.deepStrictEqual([first.status, first.body.reason], [503, "IndexUnreachable"])
          const status = yield* send("GET", "/v1/status")
          assert.strictEqual(status.body.ready, false)
          // Down for a while: polled every 100 ms, reported once.
          yield* Effect.sleep("1500 millis")
          assert.strictEqual(lines.filter((l) => l.includes("cannot")).length, 1, lines.join("\n"))
          // The database is back: within the retry wait (at most 2 s here) the index is served.
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* proxy(port, real)
              let answer = yield* send("POST", "/v1/query", { text: "moon" })
              for (let i = 0; i < 100 && answer.status !== 200; i++) {
                yield* Effect.sleep("100 millis")
                answer = yield* send("POST", "/v1/query", { text: "moon" })
              }
              assert.strictEqual(answer.status, 200)
              assert.strictEqual(answer.body.results[0]?.doc_id, "sky/moon.md")
            })
          )
        }).pipe(Effect.provide(server))
      }).pipe(Effect.scoped),
    20_000
  )
})
