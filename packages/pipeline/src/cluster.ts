/** Sharded serving, an entry point of its own: the shard protocol and entities, and the sharded query program. */
export * from "./cluster/PgPartition.ts"
export * from "./cluster/Protocol.ts"
export * from "./cluster/ShardEntity.ts"
export * from "./cluster/Shards.ts"
export * from "./programs/ShardedQuery.ts"
