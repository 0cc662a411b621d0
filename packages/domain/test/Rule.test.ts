import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import fc from "fast-check"
import { jsonDeeperThan } from "../src/Decode.ts"
import { joinLabels, labelsOf } from "../src/Document.ts"
import { decodeManifestJson } from "../src/Manifest.ts"
import {
  all,
  anyOf,
  codePoints,
  eq,
  isIn,
  isKeepAll,
  isUnder,
  keepAll,
  lenGt,
  mapPaths,
  matches,
  normalize,
  not,
  printRule,
  Rule,
  type RuleField,
  type RuleSubject,
  ruleJson,
  startsWith,
  under
} from "../src/Rule.ts"
import { parseRule, readRule } from "../src/RuleParser.ts"

// Values over a small alphabet meet the documents' fields often; quotes, backslashes and astral characters stress the
// text form.
const valueText = fc.string({
  unit: fc.constantFrom("a", "b", "A", " ", '"', "'", "\\", "😀", ",", "(", "and"),
  maxLength: 4
})
const field = fc.constantFrom<RuleField>("doc_id", "title", "body", "categories")
const path = fc.constantFrom("/data", "/data/", "/data/a", "/dat", "notes", "C:\\docs")

const rule: fc.Arbitrary<Rule> = fc.letrec<{ rule: Rule }>((tie) => ({
  rule: fc.oneof(
    { maxDepth: 4, depthIdentifier: "rule" },
    fc.tuple(field, valueText).map(([f, v]) => eq(f, v)),
    fc.tuple(field, valueText).map(([f, v]) => startsWith(f, v)),
    fc.tuple(field, fc.array(valueText, { maxLength: 3 })).map(([f, vs]) => isIn(f, vs)),
    fc.tuple(field, fc.integer({ min: 0, max: 4 })).map(([f, n]) => lenGt(f, n)),
    path.map(under),
    fc.array(tie("rule"), { maxLength: 3 }).map(all),
    fc.array(tie("rule"), { maxLength: 3 }).map(anyOf),
    tie("rule").map(not)
  )
})).rule

const subject: fc.Arbitrary<RuleSubject> = fc.record({
  docId: valueText,
  title: valueText,
  body: valueText,
  labels: fc.uniqueArray(valueText, { maxLength: 3 }),
  source: fc.constantFrom("/data/a/x.md", "/data/b.csv", "/data2/c.md", "/other/d.jsonl", "C:\\docs\\e.md")
})

const holds = fc.tuple(rule, subject)

describe("matches: the boolean laws", () => {
  it("double negation", () => fc.assert(fc.property(holds, ([r, s]) => matches(not(not(r)), s) === matches(r, s))))

  it("De Morgan, both ways", () =>
    fc.assert(
      fc.property(fc.array(rule, { maxLength: 4 }), subject, (rs, s) => {
        assert.strictEqual(matches(not(all(rs)), s), matches(anyOf(rs.map(not)), s))
        assert.strictEqual(matches(not(anyOf(rs)), s), matches(all(rs.map(not)), s))
      })
    ))

  it("All and AnyOf: identities, absorbing elements, one rule", () =>
    fc.assert(
      fc.property(holds, ([r, s]) => {
        const yes = matches(r, s)
        assert.isTrue(matches(all([]), s))
        assert.isFalse(matches(anyOf([]), s))
        assert.strictEqual(matches(all([r]), s), yes)
        assert.strictEqual(matches(anyOf([r]), s), yes)
        assert.strictEqual(matches(all([r, keepAll]), s), yes)
        assert.strictEqual(matches(anyOf([r, anyOf([])]), s), yes)
        assert.isFalse(matches(all([r, anyOf([])]), s))
        assert.isTrue(matches(anyOf([r, keepAll]), s))
        assert.isFalse(matches(all([r, not(r)]), s))
        assert.isTrue(matches(anyOf([r, not(r)]), s))
      })
    ))

  it("In is AnyOf of Eq, and normalize changes no answer", () =>
    fc.assert(
      fc.property(field, fc.array(valueText, { maxLength: 4 }), rule, subject, (f, vs, r, s) => {
        assert.strictEqual(matches(isIn(f, vs), s), matches(anyOf(vs.map((v) => eq(f, v))), s))
        assert.strictEqual(matches(normalize(r), s), matches(r, s))
      })
    ))
})

describe("matches: fields", () => {
  const doc: RuleSubject = {
    docId: "2101.00001",
    title: "Erratum: dark matter 😀",
    body: "abc",
    labels: ["astro-ph.GA", "hep-ph"],
    source: "/data/papers.csv"
  }
  it("categories is a list of labels: = means has the label", () => {
    assert.isTrue(matches(eq("categories", "hep-ph"), doc))
    assert.isFalse(matches(eq("categories", "astro-ph"), doc))
    assert.isTrue(matches(startsWith("categories", "astro-ph"), doc))
    assert.isTrue(matches(isIn("categories", ["x", "astro-ph.GA"]), doc))
    assert.isTrue(matches(lenGt("categories", 1), doc))
    assert.isFalse(matches(lenGt("categories", 2), doc))
  })
  it("strings compare exactly, lengths count code points", () => {
    assert.isTrue(matches(startsWith("title", "Erratum"), doc))
    assert.isFalse(matches(startsWith("title", "erratum"), doc))
    assert.strictEqual(codePoints(doc.title), 22)
    assert.isTrue(matches(lenGt("title", 21), doc))
    assert.isFalse(matches(lenGt("title", 22), doc))
  })
  it("under compares whole path components, with either separator", () => {
    assert.isTrue(isUnder("/data/papers.csv", "/data"))
    assert.isTrue(isUnder("/data/papers.csv", "/data/"))
    assert.isTrue(isUnder("/data/papers.csv", "/data/papers.csv"))
    assert.isFalse(isUnder("/data2/papers.csv", "/data"))
    assert.isFalse(isUnder("/data/papers.csv", "/data/papers"))
    assert.isTrue(isUnder("C:\\docs\\a.md", "C:\\docs"))
    assert.isTrue(isUnder("/a", "/"))
    assert.isTrue(matches(under("/data"), doc))
  })
  it("mapPaths resolves every Under and nothing else", () => {
    const r = all([under("notes"), not(anyOf([under("a"), eq("title", "notes")]))])
    assert.deepStrictEqual(
      mapPaths(r, (p) => `/home/${p}`),
      all([under("/home/notes"), not(anyOf([under("/home/a"), eq("title", "notes")]))])
    )
  })
  it("keep everything: true, and any All of nothing but true", () => {
    assert.isTrue(isKeepAll(keepAll))
    assert.isTrue(isKeepAll(all([all([]), all([])])))
    assert.isFalse(isKeepAll(anyOf([])))
    assert.isFalse(isKeepAll(all([eq("title", "a")])))
  })
})

describe("the text form", () => {
  it("parses what it prints: parseRule(printRule(r)) is normalize(r), and printing again is stable", () =>
    fc.assert(
      fc.property(rule, (r) => {
        const text = printRule(r)
        const parsed = parseRule(text)
        assert.isTrue(Result.isSuccess(parsed), text)
        if (Result.isSuccess(parsed)) {
          assert.deepStrictEqual(parsed.success, normalize(r))
          assert.strictEqual(printRule(parsed.success), text)
        }
      })
    ))

  it("the JSON form round-trips exactly", () =>
    fc.assert(
      fc.property(rule, (r) => {
        const back = readRule(ruleJson(r))
        assert.isTrue(Result.isSuccess(back))
        if (Result.isSuccess(back)) assert.deepStrictEqual(back.success, r)
      })
    ))

  it.each([
    [
      'categories = "astro-ph" and not title ^= "Erratum"',
      all([eq("categories", "astro-ph"), not(startsWith("title", "Erratum"))])
    ],
    ["categories=astro-ph.GA", eq("categories", "astro-ph.GA")],
    ["title = a or title = b and body = c", anyOf([eq("title", "a"), all([eq("title", "b"), eq("body", "c")])])],
    ["(title = a or title = b) and body = c", all([anyOf([eq("title", "a"), eq("title", "b")]), eq("body", "c")])],
    ["not title = a and body = c", all([not(eq("title", "a")), eq("body", "c")])],
    ["doc_id != 'it\\'s'", not(eq("doc_id", "it's"))],
    ['abstract ^= "C:\\notes"', startsWith("body", "C:\\notes")],
    ['doc_id IN (a, "b c") AND NOT len(body) > 100', all([isIn("doc_id", ["a", "b c"]), not(lenGt("body", 100))])],
    ["doc_id in ()", isIn("doc_id", [])],
    ["source under notes/2024", under("notes/2024")],
    ["true", keepAll],
    ["false or title = and", anyOf([anyOf([]), eq("title", "and")])]
  ] as const)("reads %s", (text, expected) => {
    assert.deepStrictEqual(readRule(text), Result.succeed(expected))
  })

  const condition = 'a condition: a field (doc_id, title, body, categories or source), "not", "len(" or "("'
  const andOr = '"and", "or" or the end of the rule'
  it.each([
    ["", 'column 1: expected a rule, such as categories = "cs.AI", found nothing'],
    ["tittle = x", `column 1: expected ${condition}, found the word "tittle"`],
    ["title = ", "column 9: expected a value after = (a word, or text in quotes), found the end of the rule"],
    ['title = "abc', 'column 9: expected a closing " for the text that starts there, found the end of the rule'],
    ["title x", 'column 7: expected an operator after title: =, !=, ^= or in, found the word "x"'],
    ["(title = a", 'column 11: expected "and", "or" or ")", found the end of the rule'],
    ["title = a)", `column 10: expected ${andOr}, found ")"`],
    ["title = a b", `column 11: expected ${andOr}, found the word "b"`],
    ["source = x", 'column 8: expected under after source, as in source under "notes/2024", found "="'],
    ['source under ""', "column 14: expected a file or folder after under, found empty text"],
    ["len(title) > -1", 'column 14: expected a whole number after len(title) >, found the word "-1"'],
    [
      "len(source) > 1",
      'column 5: expected a field of text or labels (doc_id, title, body or categories), found the word "source"'
    ],
    ["doc_id in (a b)", 'column 14: expected "," or ")" in the list of values, found the word "b"'],
    ["😀 title = x", `column 1: expected ${condition}, found the word "😀"`],
    ["title = 😀 x", `column 11: expected ${andOr}, found the word "x"`]
  ] as const)("refuses %s with one line saying where and what", (text, message) => {
    const result = readRule(text)
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) {
      assert.strictEqual(result.failure.message, `invalid rule at ${message}`)
      assert.notInclude(result.failure.message, "\n")
    }
  })

  it("refuses a JSON rule that breaks the schema, saying where", () => {
    const result = readRule(`{"_tag":"Eq","field":"cat","value":"x"}`)
    assert.deepStrictEqual(
      Result.isFailure(result) ? result.failure.message : "",
      'invalid rule in JSON: Expected "doc_id" | "title" | "body" | "categories" at ["field"]'
    )
  })

  it("refuses nesting too deep for the stack instead of crashing", () => {
    const result = parseRule(`${"(".repeat(5000)}title = a${")".repeat(5000)}`)
    assert.isTrue(Result.isFailure(result))
  })
})

describe("labels", () => {
  it.each([
    ["cs.LG stat.ML", ["cs.LG", "stat.ML"]],
    ["  cs.LG\tstat.ML  cs.LG ", ["cs.LG", "stat.ML"]],
    ["Machine Learning, Physics", ["Machine Learning", "Physics"]],
    ["a, b; c d", ["a, b", "c d"]],
    [" ,, ", []],
    ["", []]
  ] as const)("labelsOf(%j)", (text, labels) => {
    assert.deepStrictEqual(labelsOf(text), labels)
  })
  it("null has no labels", () => assert.deepStrictEqual(labelsOf(null), []))

  it("joinLabels is undone by labelsOf for labels without semicolons", () =>
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.string({ unit: fc.constantFrom("a", "b", " ", ",", "\t", "é"), minLength: 1, maxLength: 4 }),
          { maxLength: 4 }
        ),
        (labels) => {
          const trimmed = [...new Set(labels.map((l) => l.trim()).filter((l) => l !== ""))]
          assert.deepStrictEqual(labelsOf(joinLabels(labels)), trimmed)
        }
      )
    ))

  it("plain labels join with spaces, as arXiv writes them", () => {
    assert.strictEqual(joinLabels(["cs.LG", "stat.ML"]), "cs.LG stat.ML")
    assert.strictEqual(joinLabels(["Machine Learning", "Physics"]), "Machine Learning; Physics")
  })
})

describe("the schema", () => {
  it("rejects a negative length and an empty path", () => {
    assert.isTrue(Result.isFailure(Schema.decodeUnknownResult(Rule)({ _tag: "LenGt", field: "title", value: -1 })))
    assert.isTrue(Result.isFailure(Schema.decodeUnknownResult(Rule)({ _tag: "Under", path: "" })))
  })
})

describe("the parser, fuzzed", () => {
  it("answers every text with a rule or a one-line error, however deep or strange", () => {
    const deep = fc
      .tuple(fc.constantFrom("(", "not ", "not (", "title = a and (", "("), fc.integer({ min: 1, max: 20_000 }))
      .map(([open, n]) => open.repeat(n) + "title = a" + ")".repeat(n))
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: "grapheme", maxLength: 80 }), deep),
        (text) => {
          const read = readRule(text)
          if (Result.isFailure(read)) {
            assert.notInclude(read.failure.message, "\n")
            assert.notInclude(read.failure.message, "Maximum call stack")
          }
        }
      ),
      { numRuns: 400 }
    )
  })

  it("refuses a rule's JSON form nested deeper than any rule the parser makes, without overflowing", () => {
    let json = '{"_tag":"Eq","field":"title","value":"a"}'
    for (let i = 0; i < 5_000; i++) json = `{"_tag":"Not","rule":${json}}`
    assert.isTrue(jsonDeeperThan(json, 512))
    assert.isFalse(jsonDeeperThan('{"a":"[[[[[[[[[[[[[["}', 2), "brackets in strings do not count")
    const manifest = decodeManifestJson(`{"keep":${json}}`)
    assert.deepStrictEqual(manifest, Result.fail("it is nested more than 512 levels deep"))
  })
})
