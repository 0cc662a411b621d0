/** The test projects: one per workspace package, each configured by its own vitest.config.ts. */
export default ["packages/domain", "packages/pipeline", "packages/server", "packages/cli"]
