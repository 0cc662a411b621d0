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
 * Why `target` could not be written, in plain words: a missing folder or a file standing where a folder should be is
 * named, since those are what a user mistypes; anything else is the operating system's reason.
 */
const reasonOf = Effect.fn("writeFileAtomic.reasonOf")(function*(target: string, error: PlatformError.PlatformError) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const code = errorCode(error.reason.cause)
  if (error.reason._tag !== "NotFound" && code !== "ENOTDIR") return systemReason(error)
  // The nearest path above the target that exists tells which: a folder further up means the target's folder is
  // missing; a file means it stands where a folder should be.
  const folder = path.dirname(target)
  for (let above = folder; ; above = path.dirname(above)) {
    const info = yield* fs.stat(above).pipe(Effect.option)
    if (info._tag === "Some") {
      if (info.value.type !== "Directory") return `${above} is a file, not a folder`
      return above === folder ? systemReason(error) : `the folder ${folder} does not exist`
    }
    if (path.dirname(above) === above) return systemReason(error)
  }
})

/**
 * Writes `content` to a temporary file beside `target`, then renames it over `target` (an atomic step on POSIX file
 * systems). On failure the temporary file is removed and `target` keeps its old content.
 */
export const writeFileAtomic = Effect.fn("writeFileAtomic")(function*(target: string, content: string) {
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
      ))
  )
})
