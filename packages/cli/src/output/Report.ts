/** How failures reach the user: one line on stderr, never a stack trace for a mistake the user can fix. */
import { Cause, Console, Effect, Option } from "effect"
import { CliError, CliOutput } from "effect/cli"

/** Leaves out the schema report's path lines (`at ["overlap"]`): the message already names the field. */
const tidy = (message: string): string =>
  message
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !line.startsWith("at ["))
    .join(" ")

/** What a flag or argument accepts, from the parser's wording (`Expected: Schema validation failed: …`, `"a" | "b"`). */
const accepted = (expected: string): string => {
  const text = expected.replace(/^Expected:? */, "").replace(/^Schema validation failed: */, "")
  const bound = /^Expected a value (greater|less) than or equal to (\S+)$/.exec(text)
  if (bound !== null) return `it must be ${bound[1] === "greater" ? "at least" : "at most"} ${bound[2]}`
  if (/^"[^"]*"( \| "[^"]*")+$/.test(text)) {
    return `it must be one of ${text.replaceAll('"', "").split(" | ").join(", ")}`
  }
  switch (text) {
    case "a string representing a finite number":
    case "number":
      return "it must be a number"
    case "an integer":
    case "integer":
    case "N":
      return "it must be a whole number"
    case "NUMBER":
      return "it must be a number"
    case "PATH":
    case "FILE":
      return "give a file's path"
    default:
      // Another flag's placeholder (MODE, URL, TEXT, …), as --help shows it.
      return /^[A-Z]+$/.test(text) ? `give a ${text.toLowerCase()}` : text
  }
}

/** One problem with the command line, in words: which flag or argument, what was given, what it accepts. */
const problem = (error: CliError.CliError): string => {
  if (error._tag !== "InvalidValue") return tidy(error.message)
  const name = error.kind === "argument" ? `<${error.option}>` : `--${error.option}`
  return error.value.length === 0 && error.kind === "flag"
    ? `${name} needs a value: ${accepted(error.expected)}`
    : `invalid value for ${name}: "${shortened(error.value)}": ${tidy(accepted(error.expected))}`
}

/** A value given on the command line, as an error line quotes it: its first 60 characters and how long it was. */
const shortened = (value: string): string => {
  const points = Array.from(value)
  return points.length <= 80 ? value : `${points.slice(0, 60).join("")}… (${points.length} characters)`
}

/** Shows a bad invocation as one line per problem with a pointer to the help, instead of the whole help text. */
export const presenter: CliOutput.Presenter = {
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.forEach(
          event.errors,
          (error) => Console.error(`funcpipe: ${problem(error)} (see: ${[...event.commandPath, "--help"].join(" ")})`),
          { discard: true }
        )
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
