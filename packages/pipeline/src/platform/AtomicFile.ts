/** Writes a file so that a crash leaves either the old content or the new one, never a mix. */
import { Effect, FileSystem, Path, type PlatformError, Random, Schema } from "effect"
import { errorCode, systemReason } from "./SystemReason.ts"

/** An output file could not be written; the previous file, if any, is untouched. */
export class OutputFailure extends Schema.TaggedError<OutputFailure>()("OutputFailure", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot write ${this.path}: ${this.reason}`
  }
}

/**
 * What stops `target` from being written, if its folder is the problem: the folder does not exist, or a file stands
 * where a folder should be. `undefined` when the folder is there.
 */
const folderProblem = Effect.fn("folderProblem")(function* (target: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  // The nearest path above the target that exists tells which: a folder further up means the target's folder is
  // missing; a file means it stands where a folder should be.
  const folder = path.dirname(target)
  for (let above = folder; ; above = path.dirname(above)) {
    const info = yield* fs.stat(above).pipe(Effect.option)
    if (info._tag === "Some") {
      if (info.value.type !== "Directory") return `${above} is a file, not a folder`
      return above === folder ? undefined : `the folder ${folder} does not exist`
    }
    if (path.dirname(above) === above) return undefined
  }
})

/** Why `target` could not be written, in plain words: its folder's problem if it has one, else the system's reason. */
const reasonOf = (target: string, error: PlatformError.PlatformError) =>
  error.reason._tag === "NotFound" || errorCode(error.reason.cause) === "ENOTDIR"
    ? Effect.map(folderProblem(target), (problem) => problem ?? systemReason(error))
    : Effect.succeed(systemReason(error))

/**
 * Fails with `OutputFailure` at once if `target`'s folder does not exist or is a file, so that a long run does not
 * find out at its end. Other problems (permissions, a full disk) show when the file is written.
 */
export const checkOutputFolder = Effect.fn("checkOutputFolder")(function* (target: string) {
  const problem = yield* folderProblem(target)
  if (problem !== undefined) return yield* new OutputFailure({ path: target, reason: problem })
})

/**
 * Writes `content` to a temporary file beside `target`, then renames it over `target` (an atomic step on POSIX file
 * systems). On failure the temporary file is removed and `target` keeps its old content.
 */
export const writeFileAtomic = Effect.fn("writeFileAtomic")(function* (target: string, content: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const suffix = (yield* Random.nextInt).toString(36).replace("-", "")
  const temporary = path.join(path.dirname(target), `.${path.basename(target)}.${suffix}.tmp`)
  yield* fs.writeFileString(temporary, content).pipe(
    Effect.andThen(fs.rename(temporary, target)),
    Effect.catchTag("PlatformError", (error) =>
      fs.remove(temporary, { force: true }).pipe(
        Effect.ignore,
        Effect.andThen(reasonOf(target, error)),
        Effect.flatMap((reason) => Effect.fail(new OutputFailure({ path: target, reason })))
      )
    )
  )
})
