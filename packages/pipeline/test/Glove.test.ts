/** The `glove-100d` stages on tiny synthetic vectors: the tar and wink readers, the cache format, the embedding. */

import { gunzipSync } from "node:zlib"
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { concatBytes } from "../src/base/Bytes.ts"
import {
  commonDirections,
  convertVectors,
  embedGlove,
  embedInto,
  GLOVE_100D,
  type GloveModel,
  gloveModel,
  sifWeights
} from "../src/models/glove/Glove.ts"
import { decodeCache, encodeCache } from "../src/models/glove/GloveCache.ts"
import { type WordVectors, winkReader } from "../src/models/glove/WinkVectors.ts"
import { makeWordList, rowOfWord, tableProblem, wordAt } from "../src/models/glove/WordList.ts"
import { tarReader } from "../src/models/Tar.ts"
import { ENTRY, packageOf, tarOf, toyVectors, winkJson } from "./GloveFixture.ts"

const bytes = (text: string) => new TextEncoder().encode(text)

/** Feeds `data` to a reader in pieces of `size` bytes, stopping at the first failure. */
const feed = <E>(push: (piece: Uint8Array) => Result.Result<void, E>, data: Uint8Array, size: number) => {
  for (let at = 0; at < data.length; at += size) {
    const pushed = push(data.slice(at, at + size))
    if (Result.isFailure(pushed)) return pushed
  }
  return Result.void
}

const readWink = (text: string, size = 1 << 16): Result.Result<WordVectors, { readonly reason: string }> => {
  const reader = winkReader()
  const fed = feed(reader.push, bytes(text), size)
  return Result.isFailure(fed) ? Result.fail(fed.failure) : reader.end()
}

const reasonOf = (result: Result.Result<unknown, { readonly reason: string }>): string =>
  Result.isFailure(result) ? result.failure.reason : "success"

const toyModel = (): GloveModel => {
  const read = readWink(winkJson(toyVectors()))
  assert.isTrue(Result.isSuccess(read))
  return gloveModel(convertVectors(Result.getOrThrow(read), "toy"))
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let sum = 0
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!
  return sum
}

describe("tarReader", () => {
  const archive = tarOf([
    ["package/a.txt", bytes("first file")],
    ["package/b.json", bytes("x".repeat(700))]
  ])

  it("hands on the wanted file's bytes, whatever the pieces' sizes", () => {
    for (const size of [1, 7, 512, 100_000]) {
      const chunks: Array<string> = []
      const reader = tarReader("package/b.json", (b) => void chunks.push(new TextDecoder().decode(b)))
      assert.isTrue(Result.isSuccess(feed(reader.push, archive, size)))
      assert.isTrue(Result.isSuccess(reader.end()))
      assert.strictEqual(chunks.join(""), "x".repeat(700))
    }
  })

  it("fails on a damaged header, a truncated archive and a missing file", () => {
    const damaged = archive.slice()
    damaged[3] = 0x41
    const reader = tarReader("package/b.json", () => {})
    assert.match(reasonOf(feed(reader.push, damaged, 512)), /checksum/)
    const cut = tarReader("package/b.json", () => {})
    cut.push(archive.subarray(0, 1200))
    assert.match(reasonOf(cut.end()), /middle of an entry/)
    const missing = tarReader("package/c.json", () => {})
    missing.push(archive)
    assert.match(reasonOf(missing.end()), /no file called package\/c.json/)
  })
})

describe("winkReader", () => {
  const vectors: Array<readonly [string, Array<number>]> = [
    ["the", [0.5, -0.25, 1e-5]],
    ['"quoted"', [1, 2, 3]],
    ["café", [-0.125, 0.0000001, 123.456]]
  ]

  it("reads words in order and their vectors, in any piece size", () => {
    for (const size of [1, 3, 64, 1 << 16]) {
      const read = Result.getOrThrow(readWink(winkJson(vectors), size))
      assert.deepStrictEqual(read.words, ["the", '"quoted"', "café"])
      assert.strictEqual(read.dimensions, 3)
      assert.deepStrictEqual(
        Array.from(read.vectors),
        vectors.flatMap(([, v]) => v.map(Math.fround))
      )
    }
  })

  it("rejects files that are not in wink's format", () => {
    const good = winkJson(vectors)
    assert.match(reasonOf(readWink(good.replace('"size":3', '"size":4'))), /"words" must come before "vectors"/)
    assert.match(reasonOf(readWink(good.replace("[0.5,", "[0.5,0.5,"))), /has 6 numbers, not 5/)
    assert.match(reasonOf(readWink(good.replace(/,2\]/, ",0]"))), /two vectors have index 0/)
    assert.match(reasonOf(readWink(good.slice(0, 200))), /ends/)
    assert.match(reasonOf(readWink(good.replace("0.5", "0.5x"))), /expected ','/)
    assert.match(reasonOf(readWink("[1,2]")), /expected '\{'/)
    assert.match(reasonOf(readWink(good.replace('"dimensions":3,', ""))), /"dimensions" must come before/)
  })
})

describe("WordList", () => {
  it("finds every word's row, and -1 for a word it lacks", () => {
    const words = ["the", "of", "café", "naïve", "x".repeat(40), "日本"]
    const table = makeWordList(words)
    words.forEach((word, row) => {
      assert.strictEqual(rowOfWord(table, word), row)
      assert.strictEqual(wordAt(table, row), word)
    })
    assert.strictEqual(rowOfWord(table, "cafe"), -1)
    assert.strictEqual(rowOfWord(table, ""), -1)
    assert.strictEqual(tableProblem(table), undefined)
  })

  it("reports a damaged table instead of looping or reading out of bounds", () => {
    const table = makeWordList(["a", "b"])
    assert.match(tableProblem({ ...table, slots: new Uint32Array(4).fill(1) }) ?? "", /full/)
    assert.match(tableProblem({ ...table, slots: new Uint32Array([0, 9, 0, 0]) }) ?? "", /does not exist/)
    assert.match(tableProblem({ ...table, starts: new Uint32Array([0, 1, 1]) }) ?? "", /empty word|add up/)
  })
})

describe("common directions and SIF weights", () => {
  it("leaves the vectors centred and without their top components", () => {
    const rows = toyVectors()
    const vectors = new Float32Array(rows.flatMap(([, v]) => v))
    const { components, mean } = commonDirections(vectors, 100, 2)
    assert.strictEqual(components.length, 2)
    assert.closeTo(dot(components[0]!, components[0]!), 1, 1e-9)
    assert.closeTo(dot(components[0]!, components[1]!), 0, 1e-9)
    // The toy's largest variation is along axis 4 (±3).
    assert.isTrue(Math.abs(components[0]![4]!) > 0.95)
    const processed = rows.map(([, v]) => {
      const x = v.map((c, i) => c - mean[i]!)
      for (const d of components) {
        const p = dot(x, d)
        for (let i = 0; i < 100; i++) x[i]! -= p * d[i]!
      }
      return x
    })
    for (let i = 0; i < 100; i++) assert.closeTo(processed.reduce((s, x) => s + x[i]!, 0) / rows.length, 0, 1e-6)
    for (const x of processed) for (const d of components) assert.closeTo(dot(x, d), 0, 1e-9)
  })

  it("weighs frequent words less, strictly, between 0 and 1", () => {
    const weights = sifWeights(1000, 1e-3)
    for (let r = 1; r < weights.length; r++) assert.isTrue(weights[r]! > weights[r - 1]!)
    assert.isTrue(weights[0]! > 0 && weights[999]! < 1)
  })
})

describe("embedGlove", () => {
  const model = toyModel()

  it("gives unit vectors labelled glove-100d", () => {
    const embedding = embedGlove(model, "The car drove")
    assert.strictEqual(embedding.model, GLOVE_100D)
    assert.strictEqual(embedding.vector.length, 100)
    assert.closeTo(dot(embedding.vector, embedding.vector), 1, 1e-12)
  })

  it("finds a text that shares no word with the query by its meaning", () => {
    const query = embedGlove(model, "automobile").vector
    const car = embedGlove(model, "The vehicle and the engine").vector
    const fruit = embedGlove(model, "The ripe banana of the orchard").vector
    assert.isTrue(dot(query, car) > 0.5)
    assert.isTrue(dot(query, car) > dot(query, fruit) + 0.5)
  })

  it("ignores case and punctuation, and weighs a word by its rarity", () => {
    assert.deepStrictEqual(embedGlove(model, "CAR, drove!").vector, embedGlove(model, "car drove").vector)
    // "the" is the most frequent word: it moves a text's vector less than a rare word does.
    const base = embedGlove(model, "car").vector
    assert.isTrue(dot(base, embedGlove(model, "car the").vector) > dot(base, embedGlove(model, "car orchard").vector))
  })

  it("gives a word the vectors lack a vector of its own, so it matches itself", () => {
    const a = embedGlove(model, "zyxwv").vector
    assert.closeTo(dot(a, embedGlove(model, "ZYXWV zyxwv").vector), 1, 1e-12)
    assert.isTrue(Math.abs(dot(a, embedGlove(model, "qwerty").vector)) < 0.5)
  })

  it("gives the zero vector to a text with no word that counts", () => {
    const out = new Float64Array(100)
    assert.isFalse(embedInto(model, "12 34, x y? …", out))
    assert.isTrue(out.every((x) => x === 0))
    assert.isTrue(embedGlove(model, "").vector.every((x) => x === 0))
  })
})

describe("the vector cache", () => {
  const content = convertVectors(Result.getOrThrow(readWink(winkJson(toyVectors()))), "toy recipe")
  const file = concatBytes(encodeCache(content))

  it("holds each word's vector scaled to length 1, in half precision", () => {
    toyVectors().forEach(([, v], row) => {
      const norm = Math.sqrt(dot(v, v))
      for (let i = 0; i < 100; i++) {
        assert.strictEqual(content.vectors[row * 100 + i], Math.f16round(Math.fround(v[i]!) / norm))
      }
    })
  })

  it("reads back what was written, aligned or not", () => {
    const shifted = new Uint8Array(file.length + 1).subarray(1)
    shifted.set(file)
    for (const bytes of [file, shifted]) {
      const read = Result.getOrThrow(decodeCache(bytes, "toy recipe"))
      assert.deepStrictEqual(Array.from(read.vectors), Array.from(content.vectors))
      assert.deepStrictEqual(Array.from(read.mean), Array.from(content.mean))
      assert.deepStrictEqual(
        read.components.map((c) => Array.from(c)),
        content.components.map((c) => Array.from(c))
      )
      assert.strictEqual(rowOfWord(read.words, "automobile"), 6)
    }
  })

  it("refuses a truncated, foreign or outdated file", () => {
    assert.match(reasonOf(decodeCache(file.subarray(0, file.length - 10), "toy recipe")), /truncated/)
    assert.match(
      reasonOf(decodeCache(bytes("hello, world, this is not a cache at all"), "toy recipe")),
      /not a FuncPipe/
    )
    assert.match(reasonOf(decodeCache(file, "another recipe")), /another FuncPipe version/)
    const otherVersion = file.slice()
    otherVersion[8] = 9
    assert.match(reasonOf(decodeCache(otherVersion, "toy recipe")), /format version 9/)
  })
})

describe("the fixture package", () => {
  it("is a gzipped tarball holding the vector file", () => {
    const chunks: Array<Uint8Array> = []
    const reader = tarReader(ENTRY, (b) => void chunks.push(b.slice()))
    assert.isTrue(Result.isSuccess(reader.push(new Uint8Array(gunzipSync(packageOf("{}"))))))
    assert.strictEqual(new TextDecoder().decode(chunks[0]), "{}")
  })
})
