/**
 * A real runner process for the sharding tests: hosts shard entities of the index at a `postgres://` URL, listening on
 * 127.0.0.1:<port>; prints "ready" once it has joined the cluster and runs until killed.
 * Usage: node -C @funcpipe/source ShardRunner.ts <index-url> <port> <lock-expiration-seconds> [<shard-weight>]
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Duration, Effect, Layer } from "effect"
import { layerRunner } from "../../src/Cluster.ts"

const [index, port, expiration, weight = "1"] = process.argv.slice(2) as [string, string, string, string?]

Effect.gen(function* () {
  yield* Layer.build(
    layerRunner({
      index,
      host: "127.0.0.1",
      port: Number(port),
      lockExpiration: Duration.seconds(Number(expiration)),
      shardWeight: Number(weight)
    })
  )
  yield* Console.log("ready")
  return yield* Effect.never
}).pipe(Effect.scoped, NodeRuntime.runMain)
