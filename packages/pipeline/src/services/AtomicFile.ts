/** Writes a file so that a crash leaves either the old content or the new one, never a mix. */
import { Effect, FileSystem, Path, PlatformError, Random, Schema } from "effect"

/** An output file could not be written; the previous file, if any, is untouched. */
export class OutputFailure extends Schema.TaggedError<OutputFailure>()("OutputFailure", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot write ${this.path}: ${this.reason}`
  }
}

const reasonOf = (error: PlatformError.PlatformError): string =>
  error.reason._tag === "NotFound"
    ? "its directory does not exist"
    : error.reason._tag === "PermissionDenied"
    ? "permission denied"
    : error.reason.description ?? error.reason._tag

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
        Effect.andThen(Effect.fail(new OutputFailure({ path: target, reason: reasonOf(error) })))
      ))
  )
})
