/**
 * The configuration file, `funcpipe.yaml`: settings for every command, read from the working folder (or `--config`,
 * or `FUNCPIPE_CONFIG`). A top-level setting applies to every command that takes it; a section named after a command
 * applies to that command only and wins:
 *
 * ```yaml
 * index: /var/lib/funcpipe/index.db     # every command's --index
 * serve:
 *   port: 8080
 *   rate-limit: 50
 * ```
 *
 * YAML rather than TOML or JSON: it has comments, its parser (already a dependency, for front matter) gives the line
 * of every value so that errors name it, and a section is plain indentation. Values are read as YAML 1.2 (`no` is the
 * word, not false). Each value is checked by a Schema here, and by its flag's own parser when a command uses it.
 */

import { Result, Schema } from "effect"
import type { Node, Pair } from "yaml"

/** The YAML parser, loaded by the caller only when there is a file to read (start-up does not pay for it). */
export type Yaml = typeof import("yaml")

/** A setting's value as the file gives it: a word, a number, a switch, or a list of them. */
export type SettingValue = string | number | boolean | ReadonlyArray<string | number | boolean>

/** A value from the file, with where it is. */
export interface Located {
  readonly value: SettingValue
  readonly line: number
}

/** What a configuration file holds: its top-level settings, and each command's section. */
export interface ConfigFile {
  readonly path: string
  readonly top: ReadonlyMap<string, Located>
  readonly sections: ReadonlyMap<string, ReadonlyMap<string, Located>>
}

/** A configuration file (or a variable) that cannot be used as it is: where, which setting, and why. */
export class ConfigInvalid extends Schema.TaggedError<ConfigInvalid>()("ConfigInvalid", {
  /** The file (or the environment variable) the value comes from. */
  origin: Schema.String,
  line: Schema.NullOr(Schema.Number),
  setting: Schema.NullOr(Schema.String),
  problem: Schema.String
}) {
  override get message(): string {
    const at = this.line === null ? this.origin : `${this.origin}, line ${this.line}`
    return `${at}: ${this.setting === null ? "" : `${this.setting}: `}${this.problem}`
  }
}

const Scalar = Schema.Union([Schema.String, Schema.Finite, Schema.Boolean])
const decodeValue = Schema.decodeUnknownResult(Schema.Union([Scalar, Schema.Array(Scalar)]))

/** The first line of a parser's message, without its `at line …` (the error gives the line). */
const firstLine = (message: string) => message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")

/**
 * Reads a configuration file's text: `commands` are the names of the commands (whose sections it may have). Fails
 * with `ConfigInvalid` naming the line for text that is not YAML, a duplicate setting, a section for no command, or a
 * value that is not a word, a number, a switch or a list of them.
 */
export const parseConfigFile = (
  yaml: Yaml,
  path: string,
  text: string,
  commands: ReadonlySet<string>
): Result.Result<ConfigFile, ConfigInvalid> => {
  const { isMap, isScalar, isSeq } = yaml
  const lines = new yaml.LineCounter()
  const document = yaml.parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false })
  const lineOf = (node: Node | null | undefined): number | null =>
    node?.range === undefined || node.range === null ? null : lines.linePos(node.range[0]).line
  const invalid = (line: number | null, setting: string | null, problem: string) =>
    Result.fail(new ConfigInvalid({ origin: path, line, setting, problem }))

  const error = document.errors[0]
  if (error !== undefined) return invalid(lines.linePos(error.pos[0]).line, null, firstLine(error.message))
  const top = new Map<string, Located>()
  const sections = new Map<string, Map<string, Located>>()
  if (document.contents === null) return Result.succeed({ path, top, sections })
  if (!isMap(document.contents)) {
    return invalid(lineOf(document.contents), null, "the file must be settings as `name: value` lines")
  }

  /** A pair's setting name, or a failure for a key that is not a word. */
  const keyOf = (pair: Pair, within: string | null): Result.Result<string, ConfigInvalid> => {
    const key = pair.key as Node | null
    if (isScalar(key) && typeof key.value === "string" && key.value !== "") return Result.succeed(key.value)
    return invalid(lineOf(key), within, "a setting's name must be a word, like port or rate-limit")
  }
  /**
   * A value as written: a number keeps its digits as text (`0123`, a token of 23 digits), which its flag reads as it
   * would from the command line; words, switches and lists as YAML reads them.
   */
  const asWritten = (node: Node): unknown => {
    if (isScalar(node) && typeof node.value === "number" && node.range !== null && node.range !== undefined) {
      return text.slice(node.range[0], node.range[1]).trim()
    }
    if (isSeq(node)) return node.items.map((item) => (isScalar(item) || isSeq(item) ? asWritten(item) : item))
    return node.toJSON()
  }
  /** A pair's value, checked by the schema. */
  const settingValue = (pair: Pair, setting: string): Result.Result<Located, ConfigInvalid> => {
    const node = pair.value as Node | null
    const line = lineOf(node) ?? lineOf(pair.key as Node | null)
    if (node === null || (isScalar(node) && node.value === null)) {
      return invalid(line, setting, "has no value (leave the line out for the default)")
    }
    const decoded = decodeValue(asWritten(node))
    if (Result.isFailure(decoded)) {
      return invalid(line, setting, "must be a word, a number, true or false, or a list of them")
    }
    return Result.succeed({ value: decoded.success, line: line ?? 0 })
  }

  for (const pair of document.contents.items) {
    const key = keyOf(pair, null)
    if (Result.isFailure(key)) return Result.fail(key.failure)
    // A section is named after its command, or `funcpipe <command>`: the long name lets a file have both the `index`
    // (or `query`) setting and that command's section, which YAML's one key per name would otherwise forbid.
    const long = /^funcpipe\s+(\S+)$/.exec(key.success)
    const name = long?.[1] ?? key.success
    if (isMap(pair.value) || long !== null) {
      if (!commands.has(name) || !isMap(pair.value)) {
        return invalid(
          lineOf(pair.key as Node),
          key.success,
          commands.has(name)
            ? "a command's section holds its settings, one `name: value` line each, indented below it"
            : `is not a command, so it cannot have a section (commands: ${[...commands].join(", ")})`
        )
      }
      if (sections.has(name)) {
        return invalid(lineOf(pair.key as Node), key.success, `the ${name} section is written twice`)
      }
      const section = new Map<string, Located>()
      for (const inner of pair.value.items) {
        const innerKey = keyOf(inner, name)
        if (Result.isFailure(innerKey)) return Result.fail(innerKey.failure)
        if (isMap(inner.value)) {
          return invalid(lineOf(inner.key as Node), `${name}.${innerKey.success}`, "sections do not nest")
        }
        const value = settingValue(inner, `${name}.${innerKey.success}`)
        if (Result.isFailure(value)) return Result.fail(value.failure)
        section.set(innerKey.success, value.success)
      }
      sections.set(name, section)
    } else {
      const value = settingValue(pair, name)
      if (Result.isFailure(value)) return Result.fail(value.failure)
      top.set(name, value.success)
    }
  }
  return Result.succeed({ path, top, sections })
}
