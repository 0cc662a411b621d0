/**
 * One graph's build as a job a worker thread can take: the rows (unit float32 vectors, one after another) and the
 * settings in, the graph's stored bytes out. The same job gives the same bytes on any thread (the build is
 * deterministic, and its SIMD products and their JavaScript twin agree to the bit), so graphs built in parallel are
 * the graphs a single thread would build.
 */

import { buildGraph } from "./Hnsw.ts"
import { encodeGraph } from "./HnswBytes.ts"

/** What building one graph takes. */
export interface GraphJob {
  /** `count` rows of `dimensions` components (the array may be longer). */
  readonly rows: Float32Array
  readonly count: number
  readonly dimensions: number
  readonly m: number
  readonly efConstruction: number
}

/** Builds the job's graph; its bytes as stored. */
export const buildGraphBytes = (job: GraphJob): Uint8Array =>
  encodeGraph(
    buildGraph(
      { count: job.count, dimensions: job.dimensions, data: job.rows },
      {
        m: job.m,
        efConstruction: job.efConstruction
      }
    )
  )
