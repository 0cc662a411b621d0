/** A test's HTTP server on 127.0.0.1, on a free port, closed (with its connections) when the test's scope ends. */
import type { Server } from "node:http"
import { Effect } from "effect"

/** Starts `server` listening on a free loopback port for the scope; gives the port. */
export const listenOnLoopback = (server: Server) =>
  Effect.gen(function* () {
    yield* Effect.acquireRelease(
      Effect.callback<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
      () =>
        Effect.sync(() => {
          server.closeAllConnections()
          server.close()
        })
    )
    return (server.address() as { readonly port: number }).port
  })
