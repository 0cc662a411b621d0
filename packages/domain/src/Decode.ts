/** Decoding untrusted values into domain values, with failures as one readable typed error. */
import { Result, Schema } from "effect"

/** A value from outside (a flag, a file, a row) that does not satisfy its schema. */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  subject: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `invalid ${this.subject}: ${this.detail}`
  }
}

/**
 * Flattens a schema failure's multi-line report into one line a user can read, leaving out the path lines
 * (`at ["overlap"]`) since each message already names its field.
 */
export const oneLine = (report: string): string =>
  report
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !line.startsWith("at ["))
    .join(" ")

/** Decodes `input` with `schema`; a failure names `subject` (e.g. "--top-k") and says what was wrong. */
export const decodeAs = <S extends Schema.ConstraintDecoder<unknown>>(schema: S, subject: string) => {
  const decode = Schema.decodeUnknownResult(schema)
  return (input: unknown): Result.Result<S["Type"], InvalidInput> =>
    Result.mapError(decode(input), (error) => new InvalidInput({ subject, detail: oneLine(error.message) }))
}

/**
 * Whether JSON text nests arrays and objects deeper than `limit` (brackets inside strings do not count). Decoders
 * recurse once a level, so input from outside is measured first, without recursion, and refused when too deep.
 */
export const jsonDeeperThan = (json: string, limit: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}
