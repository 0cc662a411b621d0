/** Reads a rule from what a user wrote: the text form, by recursive descent over its tokens, or the JSON form. */
import { Effect, Result, Schema, SchemaGetter, SchemaIssue } from "effect"
import {
  all,
  anyOf,
  codePoints,
  eq,
  isIn,
  lenGt,
  not,
  printRule,
  Rule,
  type RuleField,
  startsWith,
  under
} from "./Rule.ts"

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
const SYMBOLS = ["!=", "^=", "=", "(", ")", ",", ">"]

/** A parse in progress: the rule's text, where the scanner is, and the token the parser looks at. */
interface Parsing {
  readonly text: string
  pos: number
  token: Token
}

/** The error at the text's offset `at`, with its column counted in code points as people count characters. */
const syntaxError = (p: Parsing, at: number, expected: string, found: string): RuleSyntaxError =>
  new RuleSyntaxError({ rule: p.text, column: codePoints(p.text.slice(0, at)) + 1, expected, found })

/** The text in the quotes `quote` opening at `at`, with its escapes read; an unclosed quote throws. */
const scanQuoted = (p: Parsing, at: number, quote: string): Token => {
  const text = p.text
  let value = ""
  p.pos++
  for (;;) {
    if (p.pos >= text.length) {
      throw syntaxError(p, at, `a closing ${quote} for the text that starts there`, "the end of the rule")
    }
    const d = text[p.pos]!
    if (d === quote) {
      p.pos++
      return { kind: "string", text: value, at }
    }
    if (d === "\\" && (text[p.pos + 1] === quote || text[p.pos + 1] === "\\")) {
      value += text[p.pos + 1]
      p.pos += 2
    } else {
      value += d
      p.pos++
    }
  }
}

/** Reads the next token from `pos` on, or throws the unterminated-text error. */
const scan = (p: Parsing): Token => {
  const text = p.text
  while (p.pos < text.length && isSpace(text[p.pos]!)) p.pos++
  const at = p.pos
  if (p.pos >= text.length) return { kind: "end", text: "", at }
  const c = text[p.pos]!
  if (c === '"' || c === "'") return scanQuoted(p, at, c)
  for (const symbol of SYMBOLS) {
    if (text.startsWith(symbol, p.pos)) {
      p.pos += symbol.length
      return { kind: "symbol", text: symbol, at }
    }
  }
  if (WORD_STOP.test(c)) {
    p.pos++
    return { kind: "symbol", text: c, at }
  }
  while (p.pos < text.length && !WORD_STOP.test(text[p.pos]!)) p.pos++
  return { kind: "word", text: text.slice(at, p.pos), at }
}

/** Moves on to the next token. */
const advance = (p: Parsing): void => {
  p.token = scan(p)
}

/** The current token's kind, read through a call so that checks made before an `advance` do not narrow it. */
const kind = (p: Parsing): Token["kind"] => p.token.kind

/** A token as an error message names what was found. */
const describeToken = (t: Token): string =>
  t.kind === "end"
    ? "the end of the rule"
    : t.kind === "string"
      ? `the text ${JSON.stringify(t.text)}`
      : t.kind === "word"
        ? `the word ${JSON.stringify(t.text)}`
        : `"${t.text}"`

/** Fails at the current token, which is not the `expected` one. */
const expect = (p: Parsing, expected: string): never => {
  throw syntaxError(p, p.token.at, expected, describeToken(p.token))
}

/** Whether the current token is the keyword `word`, in any case. */
const isKeyword = (p: Parsing, word: string) => p.token.kind === "word" && p.token.text.toLowerCase() === word

/** Whether the current token is `symbol`. */
const isSymbol = (p: Parsing, symbol: string) => p.token.kind === "symbol" && p.token.text === symbol

/** Reads past `symbol`, or fails naming what was `expected`. */
const skipSymbol = (p: Parsing, symbol: string, expected: string): void => {
  if (!isSymbol(p, symbol)) expect(p, expected)
  advance(p)
}

/** A value (a word, or text in quotes) after the operator `after`. */
const value = (p: Parsing, after: string): string => {
  if (p.token.kind !== "string" && p.token.kind !== "word") {
    return expect(p, `a value after ${after} (a word, or text in quotes)`)
  }
  const v = p.token.text
  advance(p)
  return v
}

/** A field of text or labels (`abstract` is `body`'s other name). */
const field = (p: Parsing): RuleField => {
  const name = p.token.kind === "word" ? FIELDS[p.token.text] : undefined
  if (name === undefined) return expect(p, "a field of text or labels (doc_id, title, body or categories)")
  advance(p)
  return name
}

/** `len(field) > n`, after `len`. */
const lengthAbove = (p: Parsing): Rule => {
  skipSymbol(p, "(", '"(" after len, as in len(title) > 10')
  const f = field(p)
  skipSymbol(p, ")", `")" after len(${f}`)
  skipSymbol(p, ">", `">" after len(${f}), as in len(${f}) > 10`)
  const token = p.token
  if (token.kind !== "word" || !/^\d+$/.test(token.text)) return expect(p, `a whole number after len(${f}) >`)
  const n = Number(token.text)
  if (!Number.isSafeInteger(n)) return expect(p, `a whole number below 2^53 after len(${f}) >`)
  advance(p)
  return lenGt(f, n)
}

/** `under path`, after `source`; the path must not be empty. */
const sourceUnder = (p: Parsing): Rule => {
  if (!isKeyword(p, "under")) return expect(p, 'under after source, as in source under "notes/2024"')
  advance(p)
  const at = p.token.at
  const path = value(p, "under")
  if (path === "") throw syntaxError(p, at, "a file or folder after under", "empty text")
  return under(path)
}

/** `("a", "b", …)`, after `in`: the values, none or more. */
const valueList = (p: Parsing): Array<string> => {
  skipSymbol(p, "(", '"(" after in, as in in ("a", "b")')
  const values: Array<string> = []
  if (!isSymbol(p, ")")) {
    values.push(value(p, '"("'))
    while (isSymbol(p, ",")) {
      advance(p)
      values.push(value(p, '","'))
    }
  }
  skipSymbol(p, ")", '"," or ")" in the list of values')
  return values
}

/** A field's operator and what it compares with: `=`, `!=`, `^=` or `in`. */
const fieldComparison = (p: Parsing, f: RuleField): Rule => {
  if (isSymbol(p, "=")) {
    advance(p)
    return eq(f, value(p, "="))
  }
  if (isSymbol(p, "!=")) {
    advance(p)
    return not(eq(f, value(p, "!=")))
  }
  if (isSymbol(p, "^=")) {
    advance(p)
    return startsWith(f, value(p, "^="))
  }
  if (isKeyword(p, "in")) {
    advance(p)
    return isIn(f, valueList(p))
  }
  return expect(p, `an operator after ${f}: =, !=, ^= or in`)
}

/** A comparison: a length, a source folder, or a field compared with values. */
const parseComparison = (p: Parsing): Rule => {
  if (isKeyword(p, "len")) {
    advance(p)
    return lengthAbove(p)
  }
  if (p.token.kind === "word" && p.token.text === "source") {
    advance(p)
    return sourceUnder(p)
  }
  if (p.token.kind !== "word" || FIELDS[p.token.text] === undefined) {
    return expect(p, `a condition: ${FIELD_LIST}, "not", "len(" or "("`)
  }
  return fieldComparison(p, field(p))
}

/** `not` a rule, a rule in parentheses, `true`, `false` or a comparison; `depth` counts nesting to bound it. */
const parseUnary = (p: Parsing, depth: number): Rule => {
  if (depth > MAX_DEPTH) return expect(p, `a rule nested at most ${MAX_DEPTH} levels deep`)
  if (isKeyword(p, "not")) {
    advance(p)
    return not(parseUnary(p, depth + 1))
  }
  if (isSymbol(p, "(")) {
    advance(p)
    const inner = parseOr(p, depth + 1)
    skipSymbol(p, ")", '"and", "or" or ")"')
    return inner
  }
  if (isKeyword(p, "true")) {
    advance(p)
    return all([])
  }
  if (isKeyword(p, "false")) {
    advance(p)
    return anyOf([])
  }
  return parseComparison(p)
}

/** Rules joined by `and`, which binds tighter than `or`. */
const parseAnd = (p: Parsing, depth: number): Rule => {
  const rules = [parseUnary(p, depth)]
  while (isKeyword(p, "and")) {
    advance(p)
    rules.push(parseUnary(p, depth))
  }
  return rules.length === 1 ? rules[0]! : all(rules)
}

/** Rules joined by `or`: a whole rule. */
const parseOr = (p: Parsing, depth: number): Rule => {
  const rules = [parseAnd(p, depth)]
  while (isKeyword(p, "or")) {
    advance(p)
    rules.push(parseAnd(p, depth))
  }
  return rules.length === 1 ? rules[0]! : anyOf(rules)
}

/** Reads a rule in the text form (see the grammar above); a failure says where and what was expected. */
export const parseRule = (text: string): Result.Result<Rule, RuleSyntaxError> => {
  const p: Parsing = { text, pos: 0, token: { kind: "end", text: "", at: 0 } }
  try {
    advance(p)
    if (kind(p) === "end") {
      return Result.fail(syntaxError(p, p.token.at, 'a rule, such as categories = "cs.AI"', "nothing"))
    }
    const parsed = parseOr(p, 0)
    if (kind(p) !== "end") expect(p, '"and", "or" or the end of the rule')
    return Result.succeed(parsed)
  } catch (error) {
    if (error instanceof RuleSyntaxError) return Result.fail(error)
    throw error
  }
}

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
