import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { chunkViewer, displayText, headingPath, markupOf, prepareDisplay, wholeWords } from "../src/analysis/Display.ts"

const whole = (text: string) => {
  const doc = prepareDisplay(text, "markdown")
  return displayText(doc, 0, text.length)
}

describe("displayText", () => {
  it("removes Markdown and HTML markup around the words", () => {
    const text = [
      "---",
      "title: Moon",
      "---",
      "# The *Moon* <!-- old headings. do not remove -->",
      "",
      '> Earth\'s **only** natural [satellite](https://example.org/moon "x").',
      "",
      "- It is about 384,000 km away.",
      "1. See ![a crater](crater.png) and <https://nasa.gov>.",
      "Use `rustc --version` and <kbd>Ctrl</kbd>-C; keep snake_case, 2 * 3 and Vec<T>.",
      "AT&amp;T &#x2014; \\*literal\\*",
      "",
      "[satellite]: https://example.org"
    ].join("\n")
    assert.strictEqual(
      whole(text),
      "The Moon Earth's only natural satellite. It is about 384,000 km away. See a crater and https://nasa.gov. " +
        "Use rustc --version and Ctrl-C; keep snake_case, 2 * 3 and Vec<T>. AT&T — *literal*"
    )
  })

  it("keeps text that only looks like markup: comparisons, generics, unpaired stars, parentheses in links", () => {
    assert.strictEqual(whole("if a<b and c>d then"), "if a<b and c>d then")
    assert.strictEqual(
      whole("Vec<u8>, Box<dyn Error> and std::vector<int>"),
      "Vec<u8>, Box<dyn Error> and std::vector<int>"
    )
    assert.strictEqual(whole("def f(*args, **kwargs): 2 * 3"), "def f(*args, **kwargs): 2 * 3")
    assert.strictEqual(whole("[Foo](https://e.org/Foo_(bar)) and *this*"), "Foo and this")
    assert.strictEqual(whole('<a href="x">link</a> <span class=k>k</span>'), "link k")
  })

  it("closes a fence with a longer one, and does not open one on a line of inline code", () => {
    assert.strictEqual(whole("```js```\n# Heading\n*a*"), "js Heading a")
    assert.strictEqual(whole("```\ncode *x*\n`````\n**after**"), "code *x* after")
  })

  it("stays linear on text crafted to make pattern matching backtrack", { timeout: 60_000 }, () => {
    // Each of these took seconds to minutes at a few hundred kilobytes with backtracking patterns; linear, they take
    // milliseconds, so the timeout is a bound no busy machine comes near.
    const crafted = [
      "`".repeat(2_000) + "x".repeat(400_000),
      "# a" + " ".repeat(400_000) + "b",
      "~".repeat(400_000),
      "[".repeat(400_000),
      "**".repeat(200_000),
      "*a ".repeat(130_000),
      "<div ".repeat(80_000)
    ]
    for (const text of crafted) {
      const doc = prepareDisplay(text, "markdown")
      assert.isAtMost(displayText(doc, 0, Math.min(text.length, 100)).length, 100)
      headingPath(doc, text.length)
    }
  })

  it("keeps code blocks as written, fences out", () => {
    const text = "Before\n\n```rust,ignore\nlet x = *ptr; // a_b_\n```\n\nAfter **bold**"
    assert.strictEqual(whole(text), "Before let x = *ptr; // a_b_ After bold")
  })

  it("leaves out a hidden part cut by the span's edges", () => {
    const text = "one <!-- a comment --> two"
    const doc = prepareDisplay(text, "markdown")
    assert.strictEqual(displayText(doc, 10, text.length), "two")
    assert.strictEqual(displayText(doc, 0, 9), "one")
  })

  it("shows plain text as written, whitespace collapsed", () => {
    const doc = prepareDisplay("a *b*  <i>c</i>\n d", "plain")
    assert.strictEqual(displayText(doc, 0, doc.original.length), "a *b* <i>c</i> d")
    assert.strictEqual(markupOf("/notes/moon.md"), "markdown")
    assert.strictEqual(markupOf("/data/records.jsonl"), "plain")
  })

  it("never throws and never shows more than the span, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 80 }), fc.nat(), fc.nat(), (text, a, b) => {
        const from = Math.min(a, b) % (text.length + 1)
        const to = Math.max(from, Math.max(a, b) % (text.length + 1))
        const shown = displayText(prepareDisplay(text, "markdown"), from, to)
        assert.isAtMost(shown.length, to - from + 8)
      }),
      { numRuns: 500 }
    )
  })
})

describe("wholeWords", () => {
  it("moves a span's edges out to the ends of the words they cut", () => {
    const text = "the moon orbits the earth"
    assert.deepStrictEqual(wholeWords(text, 6, 12), [4, 15])
    assert.deepStrictEqual(wholeWords(text, 4, 8), [4, 8])
  })
})

describe("headingPath", () => {
  it("names the headings a position is under, outermost first", () => {
    const text = [
      "# Guide",
      "intro",
      "## Ownership",
      "text A",
      "### Borrowing `&T`",
      "text B",
      "## Lifetimes",
      "text C",
      "```",
      "# not a heading",
      "```",
      "Setext",
      "------",
      "text D"
    ].join("\n")
    const doc = prepareDisplay(text, "markdown")
    assert.deepStrictEqual(headingPath(doc, text.indexOf("intro")), ["Guide"])
    assert.deepStrictEqual(headingPath(doc, text.indexOf("text B")), ["Guide", "Ownership", "Borrowing &T"])
    assert.deepStrictEqual(headingPath(doc, text.indexOf("text C")), ["Guide", "Lifetimes"])
    assert.deepStrictEqual(headingPath(doc, text.indexOf("text D")), ["Guide", "Setext"])
    assert.deepStrictEqual(headingPath(prepareDisplay(text, "plain"), text.length), [])
  })
})

describe("chunkViewer", () => {
  it("shows each chunk as a fresh viewer would, and makes a chunk it has shown once only once", () => {
    const original =
      "# Moons\n\nThe *Moon* is Earth's only natural satellite.\n\n## Mars\n\nPhobos and Deimos orbit Mars."
    const text = { source: "moons.md", cleaned: original.replace(/\s+/g, " "), original }
    const viewer = chunkViewer(text, { rules: [] })
    const phobos = text.cleaned.indexOf("Phobos")
    const spans = [
      [0, 20],
      [10, 40],
      [phobos, phobos + 20],
      [0, 20]
    ] as const
    const shown = spans.map(([start, end]) => viewer(start, end))
    spans.forEach(([start, end], i) => {
      assert.deepStrictEqual(shown[i], chunkViewer(text, { rules: [] })(start, end))
    })
    assert.strictEqual(shown[3], shown[0], "the same chunk again: the same object, not made again")
    assert.notStrictEqual(shown[1], shown[0])
    assert.deepStrictEqual(shown[2]!.section, ["Moons", "Mars"])
  })
})
