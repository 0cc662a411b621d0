/**
 * Rules over documents: one predicate value for what an index keeps (`--keep`) and what a query searches (`--where`),
 * with a text form for people, a JSON form for programs, and a pure evaluator.
 */
import { Effect, Result, Schema, SchemaGetter, SchemaIssue } from "effect"

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
// The text form
//
//   rule       := or
//   or         := and ("or" and)*
//   and        := unary ("and" unary)*
//   unary      := "not" unary | "(" or ")" | "true" | "false" | comparison
//   comparison := field "=" value | field "!=" value | field "^=" value | field "in" "(" [value ("," value)*] ")"
//               | "len" "(" field ")" ">" number | "source" "under" value
//   field      := "doc_id" | "title" | "body" | "abstract" | "categories"
//   value      := "text in double quotes" | 'text in single quotes' | word
//
// Keywords are case-insensitive. A word is a run of characters other than whitespace, quotes, parentheses, commas
// and = ! ^ < >, so labels, ids and paths such as astro-ph.GA, doc-12 or notes/2024 need no quotes. Inside quotes,
// \" (or \') and \\ stand for the quote and the backslash; any other backslash is itself, so C:\notes needs none.

/** A rule's text could not be read: where (a column, counted in code points from 1) and what was expected there. */
export class RuleSyntaxError extends Schema.TaggedError<RuleSyntaxError>()("RuleSyntaxError", {
  rule: Schema.String,
  column: Schema.Int,
  expected: Schema.String,
  found: Schema.String
}) {
  override get message(): string {
    return `invalid rule at column ${this.column}: expected ${this.expected}, found ${this.found}`
  }
}

const FIELDS: Readonly<Record<string, RuleField>> = {
  doc_id: "doc_id",
  title: "title",
  body: "body",
  abstract: "body",
  categories: "categories"
}

const FIELD_LIST = "a field (doc_id, title, body, categories or source)"

/** Nesting deeper than this is refused rather than risking the stack. */
const MAX_DEPTH = 200

type Token =
  | { readonly kind: "word"; readonly text: string; readonly at: number }
  | { readonly kind: "string"; readonly text: string; readonly at: number }
  | { readonly kind: "symbol"; readonly text: string; readonly at: number }
  | { readonly kind: "end"; readonly text: ""; readonly at: number }

const isSpace = (c: string) => /\s/.test(c)
const WORD_STOP = /[\s"'(),=!^<>]/

/** Reads a rule in the text form (see the grammar above); a failure says where and what was expected. */
export const parseRule = (text: string): Result.Result<Rule, RuleSyntaxError> => {
  const column = (at: number) => codePoints(text.slice(0, at)) + 1
  const fail = (at: number, expected: string, found: string) =>
    new RuleSyntaxError({ rule: text, column: column(at), expected, found })

  let pos = 0
  /** Reads the next token from `pos` on, or throws the unterminated-text error. */
  const scan = (): Token => {
    while (pos < text.length && isSpace(text[pos]!)) pos++
    const at = pos
    if (pos >= text.length) return { kind: "end", text: "", at }
    const c = text[pos]!
    if (c === '"' || c === "'") {
      let value = ""
      pos++
      for (;;) {
        if (pos >= text.length) throw fail(at, `a closing ${c} for the text that starts there`, "the end of the rule")
        const d = text[pos]!
        if (d === c) {
          pos++
          return { kind: "string", text: value, at }
        }
        if (d === "\\" && (text[pos + 1] === c || text[pos + 1] === "\\")) {
          value += text[pos + 1]
          pos += 2
        } else {
          value += d
          pos++
        }
      }
    }
    for (const symbol of ["!=", "^=", "=", "(", ")", ",", ">"]) {
      if (text.startsWith(symbol, pos)) {
        pos += symbol.length
        return { kind: "symbol", text: symbol, at }
      }
    }
    if (WORD_STOP.test(c)) {
      pos++
      return { kind: "symbol", text: c, at }
    }
    while (pos < text.length && !WORD_STOP.test(text[pos]!)) pos++
    return { kind: "word", text: text.slice(at, pos), at }
  }

  let token: Token = { kind: "end", text: "", at: 0 }
  const advance = () => {
    token = scan()
  }
  /** The current token's kind, read through a call so that checks made before an `advance` do not narrow it. */
  const kind = (): Token["kind"] => token.kind
  const describeToken = (t: Token): string =>
    t.kind === "end"
      ? "the end of the rule"
      : t.kind === "string"
        ? `the text ${JSON.stringify(t.text)}`
        : t.kind === "word"
          ? `the word ${JSON.stringify(t.text)}`
          : `"${t.text}"`
  const expect = (expected: string): never => {
    throw fail(token.at, expected, describeToken(token))
  }
  const isKeyword = (word: string) => token.kind === "word" && token.text.toLowerCase() === word
  const isSymbol = (symbol: string) => token.kind === "symbol" && token.text === symbol
  const skipSymbol = (symbol: string, expected: string) => {
    if (!isSymbol(symbol)) expect(expected)
    advance()
  }

  const value = (after: string): string => {
    if (token.kind !== "string" && token.kind !== "word") {
      return expect(`a value after ${after} (a word, or text in quotes)`)
    }
    const v = token.text
    advance()
    return v
  }

  const field = (): RuleField => {
    const name = token.kind === "word" ? FIELDS[token.text] : undefined
    if (name === undefined) return expect("a field of text or labels (doc_id, title, body or categories)")
    advance()
    return name
  }

  const comparison = (): Rule => {
    if (isKeyword("len")) {
      advance()
      skipSymbol("(", '"(" after len, as in len(title) > 10')
      const f = field()
      skipSymbol(")", `")" after len(${f}`)
      skipSymbol(">", `">" after len(${f}), as in len(${f}) > 10`)
      if (token.kind !== "word" || !/^\d+$/.test(token.text)) return expect(`a whole number after len(${f}) >`)
      const n = Number(token.text)
      if (!Number.isSafeInteger(n)) return expect(`a whole number below 2^53 after len(${f}) >`)
      advance()
      return lenGt(f, n)
    }
    if (token.kind === "word" && token.text === "source") {
      advance()
      if (!isKeyword("under")) return expect('under after source, as in source under "notes/2024"')
      advance()
      const at = token.at
      const path = value("under")
      if (path === "") throw fail(at, "a file or folder after under", "empty text")
      return under(path)
    }
    if (token.kind !== "word" || FIELDS[token.text] === undefined) {
      return expect(`a condition: ${FIELD_LIST}, "not", "len(" or "("`)
    }
    const f = field()
    if (isSymbol("=")) {
      advance()
      return eq(f, value("="))
    }
    if (isSymbol("!=")) {
      advance()
      return not(eq(f, value("!=")))
    }
    if (isSymbol("^=")) {
      advance()
      return startsWith(f, value("^="))
    }
    if (isKeyword("in")) {
      advance()
      skipSymbol("(", '"(" after in, as in in ("a", "b")')
      const values: Array<string> = []
      if (!isSymbol(")")) {
        values.push(value('"("'))
        while (isSymbol(",")) {
          advance()
          values.push(value('","'))
        }
      }
      skipSymbol(")", '"," or ")" in the list of values')
      return isIn(f, values)
    }
    return expect(`an operator after ${f}: =, !=, ^= or in`)
  }

  const unary = (depth: number): Rule => {
    if (depth > MAX_DEPTH) return expect(`a rule nested at most ${MAX_DEPTH} levels deep`)
    if (isKeyword("not")) {
      advance()
      return not(unary(depth + 1))
    }
    if (isSymbol("(")) {
      advance()
      const inner = or(depth + 1)
      skipSymbol(")", '"and", "or" or ")"')
      return inner
    }
    if (isKeyword("true")) {
      advance()
      return all([])
    }
    if (isKeyword("false")) {
      advance()
      return anyOf([])
    }
    return comparison()
  }

  const and = (depth: number): Rule => {
    const rules = [unary(depth)]
    while (isKeyword("and")) {
      advance()
      rules.push(unary(depth))
    }
    return rules.length === 1 ? rules[0]! : all(rules)
  }

  const or = (depth: number): Rule => {
    const rules = [and(depth)]
    while (isKeyword("or")) {
      advance()
      rules.push(and(depth))
    }
    return rules.length === 1 ? rules[0]! : anyOf(rules)
  }

  try {
    advance()
    if (kind() === "end") return Result.fail(fail(token.at, 'a rule, such as categories = "cs.AI"', "nothing"))
    const parsed = or(0)
    if (kind() !== "end") expect('"and", "or" or the end of the rule')
    return Result.succeed(parsed)
  } catch (error) {
    if (error instanceof RuleSyntaxError) return Result.fail(error)
    throw error
  }
}

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

const decodeJson = Schema.decodeUnknownResult(Schema.fromJsonString(Rule))

/** A rule could not be read from its JSON form. */
export class RuleJsonInvalid extends Schema.TaggedError<RuleJsonInvalid>()("RuleJsonInvalid", {
  detail: Schema.String
}) {
  override get message(): string {
    return `invalid rule in JSON: ${this.detail}`
  }
}

/**
 * Reads a rule from what a user wrote: the JSON form when the text starts with `{`, the text form otherwise.
 */
export const readRule = (text: string): Result.Result<Rule, RuleSyntaxError | RuleJsonInvalid> =>
  text.trimStart().startsWith("{")
    ? Result.mapError(
        decodeJson(text),
        (error) =>
          new RuleJsonInvalid({
            detail: error.message
              .split("\n")
              .map((line) => line.trim())
              .filter((line) => line !== "")
              .join(" ")
          })
      )
    : parseRule(text)

/** The JSON form of a rule. */
export const ruleJson: (rule: Rule) => string = Schema.encodeSync(Schema.fromJsonString(Rule))

/**
 * A rule as a user writes it (the text form, or the JSON form when it starts with `{`), decoded to a `Rule`; a
 * failure carries the reader's one-line message. Encodes to the text form.
 */
export const RuleFromText = Schema.String.pipe(
  Schema.decodeTo(Rule, {
    decode: SchemaGetter.transformEffect((text: string, options) => {
      const read = readRule(text)
      return Result.isSuccess(read)
        ? Effect.succeed(read.success)
        : Effect.fail(new SchemaIssue.InvalidValue({ message: read.failure.message }, text, options))
    }),
    encode: SchemaGetter.transform(printRule)
  })
)
