/** `funcpipe check`: look the index over for damage, as a database's integrity check does. */

import {
  type CheckReport,
  checkIndex,
  DEFAULT_CHECK_QUERIES,
  DEFAULT_CHECK_SAMPLE,
  IndexCheckFailed,
  isSound
} from "@funcpipe/pipeline/programs/CheckIndex"
import { layerIndexStore } from "@funcpipe/pipeline/programs/IndexLocation"
import { layerIndexModel } from "@funcpipe/pipeline/programs/IndexModel"
import { Console, Effect, FileSystem, Layer, Option, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import { indexPath, json, serviceFlags, withServiceFlags } from "../flags/Flags.ts"

/** The report as `check --json` prints it (docs/cli.md names the keys). */
export const checkJson = (report: CheckReport) => ({
  index: report.location,
  ok: isSound(report),
  checks: report.checks.map((c) => ({
    name: c.name,
    ok: c.problems.length === 0,
    covered: c.covered,
    problems: c.problems,
    more: c.more
  })),
  millis: report.millis
})

/** A line per check, and its problems under it. */
const reportLines = (report: CheckReport): Array<string> =>
  report.checks.flatMap((c) => [
    `${c.name.padEnd(10)} ${c.problems.length === 0 ? "ok     " : "BROKEN "} ${c.covered}`,
    ...c.problems.map((p) => `           - ${p}`),
    ...(c.more > 0 ? [`           … and ${c.more} more`] : [])
  ])

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "must be 0 or more" }))

export const check = Command.make(
  "check",
  {
    index: indexPath,
    sample: Flag.Int("sample").pipe(
      Flag.withSchema(Count.check(Schema.isGreaterThanOrEqualTo(1, { message: "must be at least 1" }))),
      Flag.withMetavar("N"),
      Flag.withDescription(
        `How many chunks to analyze again against the postings and vectors (default ${DEFAULT_CHECK_SAMPLE}; all when fewer)`
      ),
      Flag.withDefault(DEFAULT_CHECK_SAMPLE)
    ),
    queries: Flag.Int("queries").pipe(
      Flag.withSchema(Count),
      Flag.withMetavar("N"),
      Flag.withDescription(
        `How many queries (from sampled chunks' words) to check the ranking order of, in each mode (default ${DEFAULT_CHECK_QUERIES}; 0 skips)`
      ),
      Flag.withDefault(DEFAULT_CHECK_QUERIES)
    ),
    queryFile: Flag.String("query-file").pipe(
      Flag.withMetavar("FILE"),
      Flag.withDescription(
        "Queries of your own, one a line, for the ranking-order check and the approximate index's recall, in place of " +
          "sampled chunks"
      ),
      Flag.optional
    ),
    ...serviceFlags,
    json
  },
  Effect.fn("check")(function* (input) {
    const fs = yield* FileSystem.FileSystem
    const queryTexts = Option.isSome(input.queryFile)
      ? (yield* fs.readFileString(input.queryFile.value))
          .split(/\r?\n/)
          .map((line) => line.trim())
          .filter((line) => line !== "")
      : undefined
    const report = yield* checkIndex({
      sample: input.sample,
      queries: input.queries,
      ...(queryTexts === undefined ? {} : { queryTexts })
    }).pipe(Effect.provide(Layer.provideMerge(withServiceFlags(input)(layerIndexModel), layerIndexStore(input.index))))
    yield* Console.log(input.json ? JSON.stringify(checkJson(report)) : reportLines(report).join("\n"))
    if (isSound(report)) {
      if (!input.json) yield* Console.error(`the index at ${report.location} is sound (${report.millis} ms)`)
      return
    }
    const problems = report.checks.reduce((sum, c) => sum + c.problems.length + c.more, 0)
    const first = report.checks.find((c) => c.problems.length > 0)!.problems[0]!
    return yield* new IndexCheckFailed({ location: report.location, problems, first })
  })
).pipe(
  Command.withDescription(
    "Look the index over for damage: storage, manifest, documents, postings, vectors and the ranking order; exits 1 if any"
  ),
  Command.withExamples([
    { command: "funcpipe check", description: "Check .funcpipe/index.db" },
    { command: "funcpipe check --json --index notes.db", description: "The report as JSON, for scripts" }
  ])
)
