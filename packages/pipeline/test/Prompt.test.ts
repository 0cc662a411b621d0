/** Prompt construction: the exact messages for fixed inputs, merged passages, the token budget, and citations. */
import { assert, describe, it } from "@effect/vitest"
import {
  buildPrompt,
  citationsOf,
  DEFAULT_SYSTEM_PROMPT,
  estimateTokens,
  type PromptChunk
} from "../src/analysis/Prompt.ts"

const MOON = "the moon has no light of its own. what we see is sunlight bounced off grey dust and rock."

/** A chunk of `text` (its cleaned text) at `start` in document `docId`. */
const chunk = (docId: string, title: string, start: number, text: string): PromptChunk => ({
  docId,
  title,
  start,
  end: start + Array.from(text).length,
  text
})

/** Ranked best first: two overlapping chunks of the Moon's document around another document's chunk. */
const CHUNKS = [
  chunk("sky/moon.md", "The Moon", 0, MOON.slice(0, 50)),
  chunk("voyager-1", "Voyager 1", 0, "launched in 1977, voyager 1 is now in interstellar space."),
  chunk("sky/moon.md", "The Moon", 40, MOON.slice(40)),
  chunk("notes.txt", "notes.txt", 0, "polaris barely moves during the night.\u0000\u0000")
]

describe("buildPrompt", () => {
  it("gives these exact messages: merged passages numbered in ranking order, with titles and doc ids", () => {
    const prompt = buildPrompt("  How far is the Moon?  ", CHUNKS)
    assert.strictEqual(prompt.system, DEFAULT_SYSTEM_PROMPT)
    assert.strictEqual(
      prompt.user,
      [
        "Sources:",
        "",
        "[1] The Moon (sky/moon.md)",
        MOON,
        "",
        "[2] Voyager 1 (voyager-1)",
        "launched in 1977, voyager 1 is now in interstellar space.",
        "",
        "[3] notes.txt",
        "polaris barely moves during the night.",
        "",
        "Question: How far is the Moon?"
      ].join("\n")
    )
    assert.deepStrictEqual(
      prompt.sources.map((s) => [s.number, s.docId, s.start, s.end, s.cut]),
      [
        [1, "sky/moon.md", 0, MOON.length, false],
        [2, "voyager-1", 0, 57, false],
        [3, "notes.txt", 0, 38, false]
      ]
    )
    assert.deepStrictEqual(
      buildPrompt("  How far is the Moon?  ", CHUNKS),
      prompt,
      "the same inputs, the same messages"
    )
  })

  it("takes a merged span's text as the document has it, and a system message given in place of the default", () => {
    const asked: Array<string> = []
    const prompt = buildPrompt("Why?", CHUNKS.slice(0, 3), {
      system: "Answer in one word.",
      passageOf: (docId, start, end) => {
        asked.push(`${docId} ${start}-${end}`)
        return docId === "sky/moon.md" ? "The Moon has no light of its own." : undefined
      }
    })
    assert.deepStrictEqual(asked, [`sky/moon.md 0-${MOON.length}`, "voyager-1 0-57"])
    assert.strictEqual(prompt.system, "Answer in one word.")
    assert.include(prompt.user, "[1] The Moon (sky/moon.md)\nThe Moon has no light of its own.\n")
    assert.include(prompt.user, "[2] Voyager 1 (voyager-1)\nlaunched in 1977")
  })

  it("fits the sources to the budget, cutting the last one at a word's end, never inside a word", () => {
    const long = chunk("long.md", "Long", 0, Array.from({ length: 400 }, (_, i) => `word${i}`).join(" "))
    const prompt = buildPrompt("What?", [CHUNKS[1]!, long, CHUNKS[3]!], { contextTokens: 200 })
    assert.deepStrictEqual(
      prompt.sources.map((s) => [s.docId, s.cut]),
      [
        ["voyager-1", false],
        ["long.md", true]
      ]
    )
    const cut = prompt.sources[1]!.text
    assert.match(cut, /^word0 word1 .* word\d+ …$/)
    const blocks = prompt.sources.map((s) => `[${s.number}] ${s.title} (${s.docId})\n${s.text}\n\n`)
    assert.isAtMost(estimateTokens(blocks.join("")), 200)
    // A budget with no room for a useful part of the next passage leaves it out.
    const tight = buildPrompt("What?", [CHUNKS[1]!, long], { contextTokens: 40 })
    assert.deepStrictEqual(
      tight.sources.map((s) => s.docId),
      ["voyager-1"]
    )
  })

  it("says when no source was found", () => {
    const prompt = buildPrompt("Anything?", [])
    assert.strictEqual(prompt.user, "No source was found for this question.\n\nQuestion: Anything?")
    assert.deepStrictEqual(prompt.sources, [])
  })
})

describe("estimateTokens", () => {
  it("counts a token per 3 bytes of UTF-8, rounded up (more than a tokenizer gives, so a prompt fits)", () => {
    assert.strictEqual(estimateTokens(""), 0)
    assert.strictEqual(estimateTokens("moon"), 2)
    assert.strictEqual(estimateTokens("月"), 1)
    assert.strictEqual(estimateTokens("😀"), 2)
  })
})

describe("citationsOf", () => {
  it("finds the sources an answer cites in order, and flags a number the prompt did not give", () => {
    const { sources } = buildPrompt("Q?", CHUNKS)
    assert.deepStrictEqual(citationsOf("It has no light [1]. Voyager left [2][1], see [3, 7].", sources), [
      { number: 1, known: true },
      { number: 2, known: true },
      { number: 3, known: true },
      { number: 7, known: false }
    ])
    assert.deepStrictEqual(citationsOf("No citation here.", sources), [])
  })
})
