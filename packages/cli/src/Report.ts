/** How failures reach the user: one line on stderr, never a stack trace for a mistake the user can fix. */
import { Cause, Console, Effect, Option } from "effect"
import { CliError, CliOutput } from "effect/cli"

/** Leaves out the schema report's path lines (`at ["overlap"]`): the message already names the field. */
const tidy = (message: string): string =>
  message.split("\n").map((line) => line.trim()).filter((line) => line.length > 0 && !line.startsWith("at [")).join(" ")

/** Shows a bad invocation as one line per problem with a pointer to the help, instead of the whole help text. */
export const presenter: CliOutput.Presenter = {
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.forEach(event.errors, (error) =>
        Console.error(`funcpipe: ${tidy(error.message)} (see: ${[...event.commandPath, "--help"].join(" ")})`), { discard: true })
      : CliOutput.defaultPresenter.present(event)
}

/**
 * Prints a failed run: a typed failure as `funcpipe: <its message>`; a bug (a defect) with its details, since those
 * are needed to fix it. Help and parse errors were already shown by the presenter, and an interrupt prints nothing.
 */
export const reportFailure = (cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  const error = Cause.findErrorOption(cause)
  if (Option.isSome(error)) {
    const e = error.value
    if (CliError.isCliError(e)) return Effect.void
    const message = e instanceof Error ? e.message : String(e)
    return Console.error(`funcpipe: ${tidy(message)}`)
  }
  if (Cause.hasDies(cause)) return Console.error(`funcpipe: internal error, please report it:\n${Cause.pretty(cause)}`)
  return Effect.void
}
