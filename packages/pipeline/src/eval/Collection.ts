/** Reading a test collection's queries (JSON Lines) and relevance judgements (TSV). */
import { Result } from "effect"
import { BadRecord } from "../read/BadRecord.ts"
import type { Judgements } from "./Metrics.ts"

/** A test query. */
export interface EvalQuery {
  readonly id: string
  readonly text: string
}

/** `{"id", "text"}` per line (`_id` is accepted for the id); blank lines are skipped. */
export const parseQueries = (text: string, source: string): Result.Result<ReadonlyArray<EvalQuery>, BadRecord> => {
  const queries: Array<EvalQuery> = []
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() === "") continue
    let value: unknown
    try {
      value = JSON.parse(lines[i]!)
    } catch {
      return Result.fail(new BadRecord({ source, line: i + 1, reason: "not valid JSON" }))
    }
    const record = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>
    const id = record["id"] ?? record["_id"]
    const query = record["text"]
    if ((typeof id !== "string" && typeof id !== "number") || typeof query !== "string") {
      return Result.fail(new BadRecord({ source, line: i + 1, reason: "expected an object with an id and a text" }))
    }
    queries.push({ id: String(id), text: query })
  }
  return Result.succeed(queries)
}

/**
 * `query-id<TAB>doc-id<TAB>grade` per line, after an optional header line; grades are integers (0 and below mean
 * not relevant). Returns each query's judgements.
 */
export const parseQrels = (text: string, source: string): Result.Result<ReadonlyMap<string, Judgements>, BadRecord> => {
  const qrels = new Map<string, Map<string, number>>()
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (line.trim() === "") continue
    const cells = line.split("\t")
    if (i === 0 && !/^-?\d+$/.test(cells[2] ?? "")) continue // the header
    if (cells.length !== 3 || !/^-?\d+$/.test(cells[2]!.trim())) {
      return Result.fail(
        new BadRecord({
          source,
          line: i + 1,
          reason: "expected query-id, doc-id and an integer grade, separated by tabs"
        })
      )
    }
    const [queryId, docId, grade] = cells as [string, string, string]
    let judged = qrels.get(queryId)
    if (judged === undefined) qrels.set(queryId, (judged = new Map()))
    judged.set(docId, Number(grade))
  }
  return Result.succeed(qrels)
}
