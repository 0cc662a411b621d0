/**
 * The approximate search of a snapshot held in memory (a PostgreSQL index, or one shard of it): graphs loaded with
 * their rows' i8 scan codes, each row mapped to its position in the snapshot. A graph's rows outlive its documents (a
 * document deleted or changed since it was built keeps its rows there, to walk through) and a shard holds only some of
 * them, so a row the snapshot does not hold is walked through and never returned; each row found is scored exactly
 * from the snapshot's vectors.
 */

import { type CodeRows, codeDistance } from "../search/CodeKernel.ts"
import { type Graph, isGraphNode, searchGraphBy } from "../search/Hnsw.ts"
import type { AnnFound, DecodedBlock, FloatBlock, PositionFilter } from "../search/IndexView.ts"
import { exactScore, heldRow, NO_WALK, walkQuery } from "../search/Rescore.ts"
import type { Snapshot } from "./IndexStore.ts"
import { IndexCorrupt } from "./StoreErrors.ts"

/** A graph as a store loaded it: the graph, its rows' codes, and each row's position in the snapshot, or -1. */
export interface LoadedGraph {
  readonly graph: Graph
  readonly codes: CodeRows
  readonly positions: Int32Array
}

/**
 * The snapshot's approximate search over `graphs` (`IndexView.annSearch`), with what of it is in no graph
 * (`annMissing`): positions in none (a graph that did not load, say) are scanned, every one a candidate. Throws
 * `IndexCorrupt` where a position is in two graphs.
 */
export const loadedGraphSearch = (
  block: FloatBlock | DecodedBlock,
  d: number,
  positions: number,
  graphs: ReadonlyArray<LoadedGraph>,
  corrupt: (detail: string) => IndexCorrupt
) => {
  const covered = new Uint8Array(positions)
  const whole: Array<boolean> = []
  for (const { positions: at } of graphs) {
    let all = true
    for (let row = 0; row < at.length; row++) {
      const p = at[row]!
      if (p < 0) all = false
      else if (covered[p] === 1) throw corrupt(`chunk ${p} is in two vector graphs`)
      else covered[p] = 1
    }
    whole.push(all)
  }
  const outside: Array<number> = []
  for (let p = 0; p < positions; p++) if (covered[p] === 0) outside.push(p)

  const row64 = new Float64Array(d)
  const magnitude = new Float64Array(1)
  /** A position's vector in float64 with its magnitude, by the operations of the exact scan. */
  const vectorAt = (p: number): Float64Array => {
    const vector = heldRow(block, p, d, row64, magnitude)
    // Only a float32 row can fail to widen.
    if (vector === undefined) throw (block as FloatBlock).damaged()
    return vector
  }

  const annSearch = (query: ArrayLike<number>, ef: number, filter?: PositionFilter): AnnFound => {
    const prepared = walkQuery(query, d)
    if (prepared === undefined) return NO_WALK
    const found: Array<number> = []
    const scores: Array<number> = []
    let cutAt = Number.NEGATIVE_INFINITY
    const take = (p: number) => {
      found.push(p)
      const score = exactScore(prepared, vectorAt(p), magnitude[0]!, d)
      scores.push(score)
      return score
    }
    graphs.forEach(({ codes, graph, positions: at }, g) => {
      // Every row returnable where the graph's rows are all here and nothing is filtered: no test on each step.
      const keep =
        whole[g] === true && filter === undefined
          ? undefined
          : (row: number) => {
              const p = at[row]!
              return p >= 0 && (filter === undefined || filter.allowed[p] === 1)
            }
      const rows = searchGraphBy(graph, codeDistance(codes, prepared.unit), ef, keep).rows
      let nodes = 0
      let lowest = Number.POSITIVE_INFINITY
      for (const row of rows) {
        if (isGraphNode(graph, row)) nodes++
        const score = take(at[row]!)
        if (score < lowest) lowest = score
      }
      // Full: the walk kept as many nodes as asked for, so rows of the lowest score may have been cut.
      if (nodes >= ef && lowest > cutAt) cutAt = lowest
    })
    for (const p of outside) if (filter === undefined || filter.allowed[p] === 1) take(p)
    return { positions: Int32Array.from(found), scores: Float64Array.from(scores), cutAt }
  }

  const annMissing = () =>
    outside.length === 0
      ? undefined
      : `${outside.length} chunk${outside.length === 1 ? " is" : "s are"} in no vector graph although the index names one`

  return { annSearch, annMissing }
}

/**
 * `snapshot` with the approximate search over `graphs` (a snapshot held in memory has one vector block), and what of
 * its graphs did not load (`damage`): then approximate queries fail with it as `IndexCorrupt`, exact ones answer.
 */
export const withGraphs = (
  snapshot: Snapshot,
  graphs: ReadonlyArray<LoadedGraph>,
  damage: ReadonlyArray<string>,
  location: string
): Snapshot => {
  const [block] = snapshot.vectorBlocks()
  if (block === undefined || block.codes !== undefined) throw new Error("withGraphs: not a loaded snapshot")
  const corrupt = (detail: string) => new IndexCorrupt({ location, detail })
  const { annMissing, annSearch } = loadedGraphSearch(block, snapshot.dimensions, snapshot.positions, graphs, corrupt)
  return {
    ...snapshot,
    annSearch: (query, ef, filter) => {
      if (damage.length > 0) throw corrupt(damage[0]!)
      return annSearch(query, ef, filter)
    },
    // A graph that did not load is damage, said once; its chunks are not also counted as in no graph.
    annMissing: () => (damage.length > 0 ? undefined : annMissing()),
    annDamage: () => damage
  }
}
