/**
 * Rules over documents: one predicate value for what an index keeps (`--keep`) and what a query searches (`--where`),
 * with a text form for people, a JSON form for programs, and a pure evaluator.
 */
import { Schema } from "effect"

/** The document fields a comparison reads: `body` is the reference's `abstract`; `categories` is a list of labels. */
export const RuleField = Schema.Literals(["doc_id", "title", "body", "categories"])
export type RuleField = typeof RuleField.Type

/** The field has exactly this value (for `categories`: the document has this label). */
export interface Eq {
  readonly _tag: "Eq"
  readonly field: RuleField
  readonly value: string
}

/** The field starts with this text (for `categories`: some label does). */
export interface StartsWith {
  readonly _tag: "StartsWith"
  readonly field: RuleField
  readonly value: string
}

/** The field is one of these values (for `categories`: some label is). */
export interface In {
  readonly _tag: "In"
  readonly field: RuleField
  readonly values: ReadonlyArray<string>
}

/** The field is longer than `value` code points (for `categories`: has more than `value` labels). */
export interface LenGt {
  readonly _tag: "LenGt"
  readonly field: RuleField
  readonly value: number
}

/** The document was read from the file `path` or from a file under the folder `path`. */
export interface Under {
  readonly _tag: "Under"
  readonly path: string
}

/** Every rule holds (`true` when there are none). */
export interface All {
  readonly _tag: "All"
  readonly rules: ReadonlyArray<Rule>
}

/** Some rule holds (`false` when there are none). */
export interface AnyOf {
  readonly _tag: "AnyOf"
  readonly rules: ReadonlyArray<Rule>
}

/** The rule does not hold. */
export interface Not {
  readonly _tag: "Not"
  readonly rule: Rule
}

/** A predicate over a document, as the Python reference's keep rules, plus `In` and `Under`. */
export type Rule = Eq | StartsWith | In | LenGt | Under | All | AnyOf | Not

const rule = Schema.suspend((): Schema.Codec<Rule> => Rule)

/**
 * The schema of a rule, and its JSON form: objects tagged by `_tag`, for example
 * `{"_tag":"All","rules":[{"_tag":"Eq","field":"categories","value":"astro-ph"},{"_tag":"Not","rule":…}]}`.
 */
export const Rule: Schema.Codec<Rule> = Schema.Union([
  Schema.TaggedStruct("Eq", { field: RuleField, value: Schema.String }),
  Schema.TaggedStruct("StartsWith", { field: RuleField, value: Schema.String }),
  Schema.TaggedStruct("In", { field: RuleField, values: Schema.Array(Schema.String) }),
  Schema.TaggedStruct("LenGt", {
    field: RuleField,
    value: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "a length is a whole number of 0 or more" }))
  }),
  Schema.TaggedStruct("Under", {
    path: Schema.String.check(Schema.isNonEmpty({ message: "a path must not be empty" }))
  }),
  Schema.TaggedStruct("All", { rules: Schema.Array(rule) }),
  Schema.TaggedStruct("AnyOf", { rules: Schema.Array(rule) }),
  Schema.TaggedStruct("Not", { rule })
])

/** The rule that keeps every document: the reference's default, `All(())`, written `true`. */
export const keepAll: Rule = { _tag: "All", rules: [] }

export const eq = (field: RuleField, value: string): Rule => ({ _tag: "Eq", field, value })
export const startsWith = (field: RuleField, value: string): Rule => ({ _tag: "StartsWith", field, value })
export const isIn = (field: RuleField, values: ReadonlyArray<string>): Rule => ({ _tag: "In", field, values })
export const lenGt = (field: RuleField, value: number): Rule => ({ _tag: "LenGt", field, value })
export const under = (path: string): Rule => ({ _tag: "Under", path })
export const all = (rules: ReadonlyArray<Rule>): Rule => ({ _tag: "All", rules })
export const anyOf = (rules: ReadonlyArray<Rule>): Rule => ({ _tag: "AnyOf", rules })
export const not = (r: Rule): Rule => ({ _tag: "Not", rule: r })

/** Whether a rule keeps every document whatever it holds, as written (`true`, `true and true`, …). */
export const isKeepAll = (r: Rule): boolean => r._tag === "All" && r.rules.every(isKeepAll)

// ---------------------------------------------------------------------------------------------------------------
// Evaluation

/** What a rule reads of a document: its fields, its category labels (see `labelsOf`) and the file it came from. */
export interface RuleSubject {
  readonly docId: string
  readonly title: string
  readonly body: string
  readonly labels: ReadonlyArray<string>
  readonly source: string
}

/** The number of Unicode code points of `text` (Python's `len`). */
export const codePoints = (text: string): number => {
  let n = text.length
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n--
      i++
    }
  }
  return n
}

/**
 * Whether the file `source` is `path` or lies under the folder `path`, by whole path components (`notes` does not
 * hold `notes2/a.md`); `/` and `\` both separate components, and trailing separators of `path` are ignored.
 */
export const isUnder = (source: string, path: string): boolean => {
  const folder = path.replace(/[\\/]+$/, "")
  if (folder === "") return source.startsWith(path)
  if (!source.startsWith(folder)) return false
  const next = source.charCodeAt(folder.length)
  return Number.isNaN(next) || next === 0x2f || next === 0x5c
}

/** A text field's value, or the labels of `categories`. */
const fieldOf = (subject: RuleSubject, field: RuleField): string | ReadonlyArray<string> => {
  switch (field) {
    case "doc_id":
      return subject.docId
    case "title":
      return subject.title
    case "body":
      return subject.body
    case "categories":
      return subject.labels
  }
}

/**
 * Whether `subject` satisfies `rule`. Strings compare exactly (case and all); lengths count code points, as Python's
 * `len` does; `categories` is a list: `Eq` means "has this label", `StartsWith` and `In` hold when some label does,
 * `LenGt` counts labels. `All` of nothing holds and `AnyOf` of nothing does not, as Python's `all` and `any`. Pure.
 */
export const matches = (rule: Rule, subject: RuleSubject): boolean => {
  switch (rule._tag) {
    case "Eq": {
      const value = fieldOf(subject, rule.field)
      return typeof value === "string" ? value === rule.value : value.includes(rule.value)
    }
    case "StartsWith": {
      const value = fieldOf(subject, rule.field)
      return typeof value === "string"
        ? value.startsWith(rule.value)
        : value.some((label) => label.startsWith(rule.value))
    }
    case "In": {
      const value = fieldOf(subject, rule.field)
      return typeof value === "string"
        ? rule.values.includes(value)
        : value.some((label) => rule.values.includes(label))
    }
    case "LenGt": {
      const value = fieldOf(subject, rule.field)
      return (typeof value === "string" ? codePoints(value) : value.length) > rule.value
    }
    case "Under":
      return isUnder(subject.source, rule.path)
    case "All":
      return rule.rules.every((r) => matches(r, subject))
    case "AnyOf":
      return rule.rules.some((r) => matches(r, subject))
    case "Not":
      return !matches(rule.rule, subject)
  }
}

/** Whether the rule reads `field` anywhere. */
export const reads = (rule: Rule, field: RuleField): boolean => {
  switch (rule._tag) {
    case "Eq":
    case "StartsWith":
    case "In":
    case "LenGt":
      return rule.field === field
    case "Under":
      return false
    case "All":
    case "AnyOf":
      return rule.rules.some((r) => reads(r, field))
    case "Not":
      return reads(rule.rule, field)
  }
}

/** The rule with every `Under` path passed through `resolve` (say, made absolute against the working directory). */
export const mapPaths = (rule: Rule, resolve: (path: string) => string): Rule => {
  switch (rule._tag) {
    case "Under":
      return under(resolve(rule.path))
    case "All":
      return all(rule.rules.map((r) => mapPaths(r, resolve)))
    case "AnyOf":
      return anyOf(rule.rules.map((r) => mapPaths(r, resolve)))
    case "Not":
      return not(mapPaths(rule.rule, resolve))
    default:
      return rule
  }
}

/**
 * The rule with every `All` or `AnyOf` of one rule replaced by that rule, which the text form cannot tell apart.
 * It holds for exactly the documents the rule holds for, and `parseRule(printRule(r))` gives `normalize(r)`.
 */
export const normalize = (rule: Rule): Rule => {
  switch (rule._tag) {
    case "All":
    case "AnyOf":
      return rule.rules.length === 1 ? normalize(rule.rules[0]!) : { _tag: rule._tag, rules: rule.rules.map(normalize) }
    case "Not":
      return not(normalize(rule.rule))
    default:
      return rule
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The text form, printed (RuleParser.ts has its grammar and reads it back)

/** A value in double quotes, with `"` and `\` escaped by a backslash. */
const quote = (value: string): string => `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`

/** Binding strength: `or` 1, `and` 2, `not` 3, a comparison or constant 4. */
const printAt = (rule: Rule, minimum: number): string => {
  const wrap = (strength: number, text: string) => (strength < minimum ? `(${text})` : text)
  switch (rule._tag) {
    case "Eq":
      return `${rule.field} = ${quote(rule.value)}`
    case "StartsWith":
      return `${rule.field} ^= ${quote(rule.value)}`
    case "In":
      return `${rule.field} in (${rule.values.map(quote).join(", ")})`
    case "LenGt":
      return `len(${rule.field}) > ${rule.value}`
    case "Under":
      return `source under ${quote(rule.path)}`
    case "All":
      if (rule.rules.length === 0) return "true"
      if (rule.rules.length === 1) return printAt(rule.rules[0]!, minimum)
      return wrap(2, rule.rules.map((r) => printAt(r, 3)).join(" and "))
    case "AnyOf":
      if (rule.rules.length === 0) return "false"
      if (rule.rules.length === 1) return printAt(rule.rules[0]!, minimum)
      return wrap(1, rule.rules.map((r) => printAt(r, 2)).join(" or "))
    case "Not": {
      const inner = unwrapped(rule.rule)
      return inner._tag === "Eq" ? `${inner.field} != ${quote(inner.value)}` : wrap(3, `not ${printAt(inner, 3)}`)
    }
  }
}

/** The rule inside any `All` or `AnyOf` of one rule, which print as that rule. */
const unwrapped = (rule: Rule): Rule =>
  (rule._tag === "All" || rule._tag === "AnyOf") && rule.rules.length === 1 ? unwrapped(rule.rules[0]!) : rule

/**
 * The text form of a rule, with the fewest parentheses that keep its structure: `parseRule(printRule(r))` is
 * `normalize(r)`. Values are always quoted.
 */
export const printRule = (rule: Rule): string => printAt(rule, 0)

/** The JSON form of a rule. */
export const ruleJson: (rule: Rule) => string = Schema.encodeSync(Schema.fromJsonString(Rule))
