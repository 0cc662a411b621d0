/**
 * Which segments share a vector graph: as few graphs as `GROUP_BYTES` allows for what a run writes at once, a graph
 * of its own for a small segment (which a later run may merge away), and the groups under half full gathered again
 * once there are more than `MAX_OPEN_GROUPS` of them, so that many small runs do not leave a query many graphs to walk.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { planGraphUpdate, type StoredGraph } from "../src/store/postgres/PgGraphs.ts"
import { groupRowsOf, groupsToBuild, liveGroups, MAX_OPEN_GROUPS, packGroups } from "../src/store/sqlite/Graphs.ts"
import { maxChunksOf, type SegmentRow } from "../src/store/sqlite/Tables.ts"

const D = 384
const FULL = maxChunksOf(D)
const LIMIT = groupRowsOf(D)

/** Segments of these row counts, numbered from 1 in position order. */
const segmentsOf = (counts: ReadonlyArray<number>): Array<SegmentRow> => {
  let base = 0
  return counts.map((count, k) => {
    const segment = { id: k + 1, base, count, live: count, liveLength: count, version: 1, blockRows: 4096 }
    base += count
    return segment
  })
}

const ids = (groups: ReadonlyArray<ReadonlyArray<SegmentRow>>) => groups.map((group) => group.map((s) => s.id))

describe("the groups of segments that share a vector graph", () => {
  it("holds many full segments' rows at 384 dimensions, and fewer rows as vectors grow", () => {
    assert.strictEqual(LIMIT, Math.floor((256 * 1024 * 1024) / (4 * D)))
    assert.isAbove(LIMIT / FULL, 15)
    assert.isAbove(groupRowsOf(100), groupRowsOf(1536))
    // Never fewer rows than a full segment, however long the vectors.
    assert.strictEqual(groupRowsOf(100_000), maxChunksOf(100_000))
  })

  it("packs segments in position order, each group as full as the next segment allows", () => {
    const segments = segmentsOf([FULL, FULL, FULL])
    assert.deepStrictEqual(ids(packGroups(segments, 2 * FULL)), [[1, 2], [3]])
    assert.deepStrictEqual(ids(packGroups(segments, FULL - 1)), [[1], [2], [3]])
    assert.deepStrictEqual(ids(packGroups([], FULL)), [])
  })

  it("gives a run that writes a million rows six graphs, not one per segment", () => {
    const counts = Array.from({ length: Math.ceil(1_000_000 / FULL) }, (_, k) => Math.min(FULL, 1_000_000 - k * FULL))
    const { groups, regrouped } = groupsToBuild(segmentsOf(counts), [], D)
    assert.strictEqual(counts.length, 92)
    assert.strictEqual(groups.length, Math.ceil(1_000_000 / (Math.floor(LIMIT / FULL) * FULL)))
    assert.strictEqual(groups.length, 6)
    assert.deepStrictEqual(regrouped, [])
    // Every segment in exactly one group, in position order, none over the limit.
    assert.deepStrictEqual(
      groups.flat().map((s) => s.id),
      counts.map((_, k) => k + 1)
    )
    for (const group of groups)
      assert.isAtMost(
        group.reduce((sum, s) => sum + s.count, 0),
        LIMIT
      )
  })

  it("gives a small segment a graph of its own, so that merging it never rebuilds a large graph", () => {
    const small = Math.floor(FULL / 8) - 1
    const { groups } = groupsToBuild(segmentsOf([FULL, FULL, small]), [], D)
    assert.deepStrictEqual(ids(groups), [[3], [1, 2]])
  })

  it("builds only the new segments' graphs while few groups are under half full", () => {
    const segments = segmentsOf([FULL, FULL, FULL])
    const grouped = [{ segment: 1, members: [1, 2], config: "hnsw" }]
    const { groups, regrouped } = groupsToBuild(segments, grouped, D)
    assert.deepStrictEqual(ids(groups), [[3]])
    assert.deepStrictEqual(regrouped, [])
  })

  it("gathers the groups under half full with the new segments once there are too many of them", () => {
    const segments = segmentsOf([FULL, FULL, FULL, FULL, 100])
    // Three groups, each under half full; the small segment 5 keeps its own graph and is not counted.
    const grouped = [
      { segment: 1, members: [1], config: "hnsw" },
      { segment: 2, members: [2, 3], config: "hnsw" },
      { segment: 5, members: [5], config: "hnsw" }
    ]
    assert.strictEqual(MAX_OPEN_GROUPS, 2)
    const { groups, regrouped } = groupsToBuild(segments, grouped, D)
    assert.deepStrictEqual(ids(groups), [[1, 2, 3, 4]])
    assert.deepStrictEqual(regrouped, [1, 2])
  })

  it("does not gather the groups under half full for new segments that fill a group of their own", () => {
    const perGroup = Math.ceil(LIMIT / 2 / FULL)
    const segments = segmentsOf([FULL, FULL, ...Array.from({ length: perGroup }, () => FULL)])
    const grouped = [
      { segment: 1, members: [1], config: "hnsw" },
      { segment: 2, members: [2], config: "hnsw" }
    ]
    const { groups, regrouped } = groupsToBuild(segments, grouped, D)
    assert.deepStrictEqual(ids(groups), [Array.from({ length: perGroup }, (_, k) => k + 3)])
    assert.deepStrictEqual(regrouped, [])
  })

  it("leaves a group at least half full alone", () => {
    const perGroup = Math.ceil(LIMIT / 2 / FULL)
    const full = Array.from({ length: perGroup }, () => FULL)
    const segments = segmentsOf([...full, ...full, FULL, FULL])
    const first = Array.from({ length: perGroup }, (_, k) => k + 1)
    const grouped = [
      { segment: 1, members: first, config: "hnsw" },
      { segment: perGroup + 1, members: first.map((k) => k + perGroup), config: "hnsw" },
      { segment: 2 * perGroup + 1, members: [2 * perGroup + 1], config: "hnsw" }
    ]
    const { groups, regrouped } = groupsToBuild(segments, grouped, D)
    // One open group and the new segment: not more than MAX_OPEN_GROUPS, so only the new segment is built.
    assert.deepStrictEqual(ids(groups), [[2 * perGroup + 2]])
    assert.deepStrictEqual(regrouped, [])
  })

  it("does not gather the graphs an index had of one segment each before groups", () => {
    const segments = segmentsOf([FULL, FULL, FULL, FULL])
    const grouped = [1, 2, 3].map((id) => ({ segment: id, members: [id], config: "hnsw", legacy: true }))
    const { groups, regrouped } = groupsToBuild(segments, grouped, D)
    assert.deepStrictEqual(ids(groups), [[4]])
    assert.deepStrictEqual(regrouped, [])
  })

  it("keeps only the stored graphs whose segments are all there, each segment in one graph", () => {
    const present = new Set([1, 2, 3, 4, 6])
    const { kept, dropped } = liveGroups(
      [
        { segment: 1, members: [1, 2], config: "hnsw" },
        // Segment 2 is in the graph before: written by an older FuncPipe over a group's segment.
        { segment: 2, members: [2], config: "hnsw", legacy: true },
        { segment: 3, members: [3, 5], config: "hnsw" },
        { segment: 4, members: [Number.NaN], config: "hnsw" },
        { segment: 6, members: [6], config: "hnsw" }
      ],
      present
    )
    assert.deepStrictEqual(
      kept.map((g) => g.segment),
      [1, 6]
    )
    assert.deepStrictEqual(
      dropped.map((g) => g.segment),
      [2, 3, 4]
    )
  })
})

describe("the groups of document rows that share a vector graph in PostgreSQL", () => {
  const rows = (ids: ReadonlyArray<number>, chunks = 10) => ids.map((id) => ({ id, chunks }))
  const CONFIG = "hnsw m=16 efConstruction=100"

  it("builds a graph over new documents, as many as fit, and leaves stored graphs alone", () => {
    const stored = [{ id: 1, config: CONFIG, docs: rows([1, 2, 3]) }]
    const live = rows([1, 2, 3, 4, 5, 6, 7])
    assert.deepStrictEqual(planGraphUpdate(stored, live, CONFIG, 1000), { drop: [], groups: [rows([4, 5, 6, 7])] })
    // At most `limit` rows a graph, a document never split (one larger than the limit gets a graph of its own).
    const plan = planGraphUpdate([], [...rows([1, 2, 3]), { id: 4, chunks: 50 }, ...rows([5])], CONFIG, 25)
    assert.deepStrictEqual(
      plan.groups.map((group) => group.map((doc) => doc.id)),
      [[1, 2], [3], [4], [5]]
    )
    // Nothing new, nothing deleted: nothing to do.
    assert.deepStrictEqual(planGraphUpdate(stored, rows([1, 2, 3]), CONFIG, 1000), { drop: [], groups: [] })
  })

  it("builds again a graph that lost more than half its rows, or was built with other settings", () => {
    const stored = [
      { id: 1, config: CONFIG, docs: rows([1, 2, 3, 4]) },
      { id: 2, config: CONFIG, docs: rows([5, 6, 7, 8]) }
    ]
    // Half of graph 1 gone: kept (its rows are walked through); three quarters of graph 2 gone: built again.
    const plan = planGraphUpdate(stored, rows([1, 2, 8]), CONFIG, 1000)
    assert.deepStrictEqual(plan, { drop: [2], groups: [rows([8])] })
    // Every row of a graph gone: dropped, nothing to build.
    assert.deepStrictEqual(planGraphUpdate(stored, rows([5, 6, 7, 8]), CONFIG, 1000), { drop: [1], groups: [] })
    const other = planGraphUpdate(stored, rows([1, 2, 3, 4, 5, 6, 7, 8]), "hnsw m=8 efConstruction=100", 1000)
    assert.deepStrictEqual(other, { drop: [1, 2], groups: [rows([1, 2, 3, 4, 5, 6, 7, 8])] })
  })

  it("builds the two smallest groups under half full again as one while there are more than MAX_OPEN_GROUPS", () => {
    const stored = Array.from({ length: MAX_OPEN_GROUPS }, (_, k) => ({
      id: k + 1,
      config: CONFIG,
      docs: rows([2 * k + 1, 2 * k + 2])
    }))
    const before = rows(Array.from({ length: 2 * MAX_OPEN_GROUPS }, (_, i) => i + 1))
    // The new group (10 rows) and the smaller stored graph (20 rows; of two the same, the earlier) become one.
    const plan = planGraphUpdate(stored, [...before, ...rows([100])], CONFIG, 1000)
    assert.deepStrictEqual(plan, { drop: [1], groups: [rows([1, 2, 100])] })
    // A full graph is never gathered with them.
    const full = [{ id: 9, config: CONFIG, docs: rows([50, 51, 52, 53, 54, 55]) }, ...stored]
    const again = planGraphUpdate(full, [...before, ...rows([50, 51, 52, 53, 54, 55, 100])], CONFIG, 100)
    assert.deepStrictEqual(again.drop, [1])
  })

  it("rebuilds only small graphs when runs add a document at a time beside a large graph", () => {
    const limit = 100_000
    let stored: Array<StoredGraph> = [
      { id: 1, config: CONFIG, docs: rows(Array.from({ length: 4000 }, (_, i) => i + 1)) }
    ]
    let next = 2
    let rebuilt = 0
    const live = [...stored[0]!.docs]
    for (let run = 0; run < 200; run++) {
      live.push({ id: 10_000 + run, chunks: 10 })
      const plan = planGraphUpdate(stored, live, CONFIG, limit)
      assert.notInclude(plan.drop, 1)
      const dropped = new Set(plan.drop)
      stored = [
        ...stored.filter((g) => !dropped.has(g.id)),
        ...plan.groups.map((docs) => ({ id: next++, config: CONFIG, docs }))
      ]
      for (const docs of plan.groups) rebuilt += docs.reduce((n, doc) => n + doc.chunks, 0)
      assert.isAtMost(stored.length, MAX_OPEN_GROUPS + 1)
    }
    // 200 runs of 10 rows: the small graph is rebuilt each time, never the 40,000-row one (200 × 40,000 rows).
    assert.isBelow(rebuilt, 200 * 2010)
  })

  it("drops a stored graph whose documents do not match the table's, and builds its rows again", () => {
    const live = rows([1, 2, 3, 4])
    const copy = { id: 2, config: CONFIG, docs: rows([1, 2]) }
    const twice = planGraphUpdate([{ id: 1, config: CONFIG, docs: rows([1, 2]) }, copy], live, CONFIG, 1000)
    assert.include(twice.drop, 2)
    assert.notInclude(twice.drop, 1)
    const unsorted = planGraphUpdate([{ id: 1, config: CONFIG, docs: rows([2, 1]) }], live, CONFIG, 1000)
    assert.deepStrictEqual(unsorted, { drop: [1], groups: [live] })
    const empty = planGraphUpdate([{ id: 1, config: CONFIG, docs: rows([1, 2], 0) }], live, CONFIG, 1000)
    assert.deepStrictEqual(empty, { drop: [1], groups: [live] })
    const counted = planGraphUpdate([{ id: 1, config: CONFIG, docs: rows([1, 2], 7) }], live, CONFIG, 1000)
    assert.deepStrictEqual(counted, { drop: [1], groups: [live] })
  })
  it("never builds a group past the limit, whatever the stored graphs hold (a document larger than it alone)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 8 }), { maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 20 }),
        fc.func(fc.boolean()),
        (graphs, added, alive) => {
          const limit = 100
          let id = 1
          const stored = graphs.map((sizes, g) => ({
            id: g + 1,
            config: CONFIG,
            docs: sizes.map((chunks) => ({ id: id++, chunks }))
          }))
          const live = [
            ...stored.flatMap((g) => g.docs).filter((doc) => alive(doc.id)),
            ...added.map((chunks) => ({ id: id++, chunks }))
          ]
          const plan = planGraphUpdate(stored, live, CONFIG, limit)
          const again = planGraphUpdate(stored, live, CONFIG, limit)
          assert.deepStrictEqual(again, plan)
          for (const group of plan.groups) {
            const rows = group.reduce((n, doc) => n + doc.chunks, 0)
            assert.isTrue(rows <= limit || group.length === 1, `a group of ${rows} rows`)
          }
          // Every live document is in exactly one graph: a kept one or one to build.
          const dropped = new Set(plan.drop)
          const held = [
            ...stored.filter((g) => !dropped.has(g.id)).flatMap((g) => g.docs.filter((doc) => alive(doc.id))),
            ...plan.groups.flat()
          ].map((doc) => doc.id)
          assert.deepStrictEqual(
            [...held].sort((a, b) => a - b),
            live.map((doc) => doc.id).sort((a, b) => a - b)
          )
        }
      ),
      { numRuns: 300, seed: 20261202 }
    )
  })
})
