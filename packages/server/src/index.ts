/** The HTTP server as a library: its layer and options, and the entry point and runners of sharded serving. */
export * from "./Cluster.ts"
export * from "./Server.ts"
