/**
 * The cluster layers of sharded serving: a runner (hosts shard entities, listens for other runners and entry points)
 * and an entry point (sends queries to shards, hosts none), both on `effect/cluster` over TCP with the cluster's
 * runner registry and shard locks in the index's PostgreSQL database, under a prefix of the index's own.
 */
import { NodeClusterSocket } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option } from "effect"
import { MessageStorage, RunnerAddress, ShardingConfig, SqlRunnerStorage } from "effect/cluster"
import { Reactivity } from "effect/reactivity"
import { StoreFailure } from "@funcpipe/pipeline/services/IndexStore"
import { parsePgUrl, scrubUrl } from "@funcpipe/pipeline/services/PgIndexStore"
import { layerShardEntities, PartitionSource } from "@funcpipe/pipeline/services/ShardCluster"

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
}

/** The cluster tables' prefix for `options`. */
export const clusterPrefix = (options: ClusterOptions): string => {
  const parsed = parsePgUrl(options.index)
  return options.prefix ?? `funcpipe_${parsed._tag === "Success" ? parsed.success.schema : "default"}`
}

const shardingConfig = (options: ClusterOptions, clientOnly: boolean): Partial<ShardingConfig.ShardingConfig["Service"]> => {
  const expiration = Duration.fromInputUnsafe(options.lockExpiration ?? "10 seconds")
  return {
    runnerAddress: clientOnly
      ? Option.none()
      : Option.some(RunnerAddress.make(options.host ?? "127.0.0.1", options.port ?? 34431)),
    shardLockExpiration: expiration,
    shardLockRefreshInterval: Duration.divideUnsafe(expiration, 4),
    refreshAssignmentsInterval: Duration.seconds(1),
    runnerHealthCheckInterval: Duration.divideUnsafe(expiration, 2),
    // Shard queries and their replies are volatile (a query asks again rather than replaying).
    entityMessagePollInterval: Duration.seconds(1)
  }
}

/** The cluster's own connection to the index's database, and its runner storage under the deployment's prefix. */
const storage = (options: ClusterOptions, config: Partial<ShardingConfig.ShardingConfig["Service"]>) =>
  Layer.unwrap(Effect.gen(function*() {
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
  }))

const cluster = (options: ClusterOptions, clientOnly: boolean) => {
  const config = shardingConfig(options, clientOnly)
  return NodeClusterSocket.layer({ clientOnly, storage: "byo", shardingConfig: config }).pipe(
    Layer.provide(storage(options, config))
  )
}

/** A runner: hosts shard entities of the index, reading their documents from it. */
export const layerRunner = (options: ClusterOptions) =>
  layerShardEntities.pipe(
    Layer.provide(PartitionSource.layer(options.index)),
    Layer.provide(cluster(options, false))
  )

/** An entry point: `queryShards` needs what this provides (the cluster's client side and the index's pins). */
export const layerEntry = (options: ClusterOptions) =>
  Layer.merge(cluster(options, true), PartitionSource.layer(options.index))

/** Where a cluster lives, as it may be printed (the URL without its password, and the tables' prefix). */
export const showCluster = (options: ClusterOptions): string => `${scrubUrl(options.index)} (${clusterPrefix(options)})`
