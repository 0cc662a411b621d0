/** Tiny word-vector packages in wink's format, built in memory for the `glove-100d` tests. */

import { createHash } from "node:crypto"
import { gzipSync } from "node:zlib"
import { concatBytes } from "../src/base/Bytes.ts"
import type { VectorSource } from "../src/models/glove/GloveFiles.ts"

/** The JSON of a wink vector file holding `vectors` (word → components), in the given word order. */
export const winkJson = (vectors: ReadonlyArray<readonly [string, ReadonlyArray<number>]>): string => {
  const dimensions = vectors[0]![1].length
  const entries = vectors.map(([word, v], i) => {
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0))
    return `${JSON.stringify(word)}:[${[...v, norm, i].join(",")}]`
  })
  return (
    `{"precision":8,"l2NormIndex":${dimensions},"wordIndex":${dimensions + 1},"size":${vectors.length},` +
    `"dimensions":${dimensions},"words":${JSON.stringify(vectors.map(([w]) => w))},"vectors":{${entries.join(",")}},` +
    `"unkVector":[${new Array(dimensions + 2).fill(0).join(",")}]}`
  )
}

const octal = (value: number, width: number): string => `${value.toString(8).padStart(width - 1, "0")}\0`

/** A ustar archive of the given files, with its two closing zero blocks. */
export const tarOf = (files: ReadonlyArray<readonly [string, Uint8Array]>): Uint8Array => {
  const blocks: Array<Uint8Array> = []
  for (const [name, data] of files) {
    const header = new Uint8Array(512)
    const put = (text: string, at: number) => header.set(new TextEncoder().encode(text), at)
    put(name, 0)
    put(octal(0o644, 8), 100)
    put(octal(0, 8), 108)
    put(octal(0, 8), 116)
    put(octal(data.length, 12), 124)
    put(octal(0, 12), 136)
    put("        ", 148)
    put("0", 156)
    put("ustar\u000000", 257)
    const sum = header.reduce((s, b) => s + b, 0)
    put(`${sum.toString(8).padStart(6, "0")}\0 `, 148)
    blocks.push(header, data, new Uint8Array((512 - (data.length % 512)) % 512))
  }
  blocks.push(new Uint8Array(1024))
  return concatBytes(blocks)
}

/** The vector file's path in the fixture packages, as in wink's. */
export const ENTRY = "package/vectors.json"

/** A gzipped npm-style tarball holding a README and the vector file. */
export const packageOf = (json: string): Uint8Array =>
  new Uint8Array(
    gzipSync(
      tarOf([
        ["package/README.md", new TextEncoder().encode("# test vectors\n")],
        [ENTRY, new TextEncoder().encode(json)]
      ])
    )
  )

/** A source for `bytes` served at `url`, with their real integrity. */
export const sourceOf = (bytes: Uint8Array, url = "http://127.0.0.1/vectors.tgz"): VectorSource => ({
  name: "test-vectors@1.0.0",
  url,
  integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`,
  entry: ENTRY,
  bytes: bytes.length
})

/**
 * A 100-dimensional vocabulary where meaning is a direction: the car words share one, the fruit words another. As in
 * real word vectors, every word also has a large common part (axis 0), a large component that varies from word to
 * word without meaning anything (axis 4, the top principal component), and a small part of its own. Words
 * are in frequency order, filler words first.
 */
export const toyVectors = (): Array<readonly [string, Array<number>]> => {
  const words: Array<readonly [string, number]> = [
    ["the", 3],
    ["of", 3],
    ["and", 3],
    ["is", 3],
    ["was", 3],
    ["car", 1],
    ["automobile", 1],
    ["vehicle", 1],
    ["engine", 1],
    ["drove", 1],
    ["apple", 2],
    ["banana", 2],
    ["fruit", 2],
    ["ripe", 2],
    ["orchard", 2]
  ]
  return words.map(([word, topic], i) => {
    const v = new Array<number>(100).fill(0)
    v[0] = 3
    v[topic] = topic === 3 ? 0.2 : 1
    v[4] = i % 2 === 0 ? 3 : -3
    v[10 + i] = 0.3
    return [word, v] as const
  })
}
