/**
 * The cluster layers of sharded serving: a runner (hosts shard entities, listens for other runners and entry points)
 * and an entry point (sends queries to shards, hosts none), both on `effect/cluster` over TCP with the cluster's
 * runner registry and shard locks in the index's PostgreSQL database, under a prefix of the index's own.
 */
import { NodeSocket, NodeSocketServer } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { PartitionSource } from "@funcpipe/pipeline/cluster/Protocol"
import { layerShardEntities } from "@funcpipe/pipeline/cluster/ShardEntity"
import { parsePgUrl, scrubUrl } from "@funcpipe/pipeline/store/postgres/PgUrl"
import { StoreFailure } from "@funcpipe/pipeline/store/StoreErrors"
import { Duration, Effect, Layer, Option } from "effect"
import {
  MessageStorage,
  RunnerAddress,
  RunnerHealth,
  Runners,
  ShardingConfig,
  SocketRunner,
  SqlRunnerStorage
} from "effect/cluster"
import { Reactivity } from "effect/reactivity"
import { RpcClient, RpcSerialization } from "effect/rpc"
import { Socket } from "effect/socket"

/** Where a cluster lives and how fast it notices a lost runner. */
export interface ClusterOptions {
  /** The index: a `postgres://` URL (its `schema` parameter names the index's schema). */
  readonly index: string
  /** This runner's address, as other processes reach it (unused by an entry point). */
  readonly host?: string
  readonly port?: number
  /**
   * The cluster tables' prefix: one per deployment, so two clusters on one database never share runners or locks.
   * Default `funcpipe_<schema>`.
   */
  readonly prefix?: string
  /**
   * How long a dead runner's shard locks outlive it (default 10 s): the bound on how long queries to its shards wait
   * before another runner takes them. Shorter notices sooner but risks a busy runner losing its shards.
   */
  readonly lockExpiration?: Duration.Input
  /** This runner's share of shards relative to the others' (default 1): a bigger machine can take more. */
  readonly shardWeight?: number
}

/** The cluster tables' prefix for `options`. */
export const clusterPrefix = (options: ClusterOptions): string => {
  const parsed = parsePgUrl(options.index)
  return options.prefix ?? `funcpipe_${parsed._tag === "Success" ? parsed.success.schema : "default"}`
}

type ShardingOptions = Partial<ShardingConfig.ShardingConfig["Service"]>

const shardingConfig = (options: ClusterOptions, clientOnly: boolean): ShardingOptions => {
  const expiration = Duration.fromInputUnsafe(options.lockExpiration ?? "10 seconds")
  return {
    runnerAddress: clientOnly
      ? Option.none()
      : Option.some(RunnerAddress.make(options.host ?? "127.0.0.1", options.port ?? 34431)),
    runnerShardWeight: options.shardWeight ?? 1,
    shardLockExpiration: expiration,
    shardLockRefreshInterval: Duration.divideUnsafe(expiration, 4),
    refreshAssignmentsInterval: Duration.seconds(1),
    runnerHealthCheckInterval: Duration.divideUnsafe(expiration, 2),
    // Shard queries and their replies are volatile (a query asks again rather than replaying).
    entityMessagePollInterval: Duration.seconds(1)
  }
}

/** The cluster's own connection to the index's database, and its runner storage under the deployment's prefix. */
const storage = (options: ClusterOptions, config: ShardingOptions) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const target = yield* Effect.fromResult(parsePgUrl(options.index)).pipe(
        Effect.mapError((reason) => new StoreFailure({ location: scrubUrl(options.index), reason }))
      )
      const sql = PgClient.layer({ url: target.url, maxConnections: 4, applicationName: "funcpipe-cluster" }).pipe(
        Layer.provide(Reactivity.layer)
      )
      return Layer.mergeAll(
        MessageStorage.layerNoop,
        SqlRunnerStorage.layerWith({ prefix: clusterPrefix(options) }).pipe(
          Layer.provide(sql),
          Layer.provide(ShardingConfig.layer(config))
        )
      )
    })
  )

/**
 * Connections to runners, with Nagle's algorithm off: a shard request or reply is one small write, and with it on each
 * waits for the peer's delayed acknowledgement (about 40 ms per call on Linux, which makes 8 shards 20 times slower).
 */
const clientProtocol = Layer.effect(
  Runners.RpcClientProtocol,
  Effect.gen(function* () {
    const serialization = yield* RpcSerialization.RpcSerialization
    return {
      codecFor: serialization.codecFor,
      make: Effect.fnUntraced(function* (address: RunnerAddress.RunnerAddress) {
        const socket = yield* NodeSocket.makeNet({
          openTimeout: 1000,
          // A runner loading a large shard can be silent for seconds; a dead one is found by the health checks.
          timeout: 60_000,
          host: address.host,
          port: address.port,
          noDelay: true
        })
        return yield* RpcClient.makeProtocolSocket().pipe(
          Effect.provideService(Socket.Socket, socket),
          Effect.provideService(RpcSerialization.RpcSerialization, serialization)
        )
      }, Effect.orDie)
    }
  })
)

/**
 * The cluster over TCP, as `NodeClusterSocket.layer` composes it (socket runner, ping health checks, binary
 * serialization) but with the sockets above and the listening socket's connections also without Nagle.
 */
const cluster = (options: ClusterOptions, clientOnly: boolean) => {
  const config = shardingConfig(options, clientOnly)
  const address = Option.getOrUndefined(config.runnerAddress ?? Option.none())
  const runner =
    clientOnly || address === undefined
      ? Layer.provide(SocketRunner.layerClientOnly, clientProtocol)
      : Layer.provide(SocketRunner.layer, [
          NodeSocketServer.layer({ host: address.host, port: address.port, noDelay: true }),
          clientProtocol,
          RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clientProtocol))
        ])
  return runner.pipe(
    Layer.provide(storage(options, config)),
    Layer.provide(ShardingConfig.layer(config)),
    Layer.provide(RpcSerialization.layerSchemaBinary())
  )
}

/** A runner: hosts shard entities of the index, reading their documents from it. */
export const layerRunner = (options: ClusterOptions) =>
  layerShardEntities.pipe(Layer.provide(PartitionSource.layer(options.index)), Layer.provide(cluster(options, false)))

/** An entry point: `queryShards` needs what this provides (the cluster's client side and the index's pins). */
export const layerEntry = (options: ClusterOptions) =>
  Layer.merge(cluster(options, true), PartitionSource.layer(options.index))

/** Where a cluster lives, as it may be printed (the URL without its password, and the tables' prefix). */
export const showCluster = (options: ClusterOptions): string => `${scrubUrl(options.index)} (${clusterPrefix(options)})`
