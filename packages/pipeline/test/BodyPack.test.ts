/** Bodies packed for storage come back exactly, packs stay near their size, and damaged packs are told apart. */
import { constants, zstdCompressSync } from "node:zlib"
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { type BodyRef, bodyIn, frameContentSize, PACK_BYTES, PackReader, PackWriter } from "../src/index/BodyPack.ts"

// One writer and one reader for the whole file, as a thread keeps them from batch to batch.
const writer = new PackWriter()
const reader = new PackReader()

/** What a body reads back as: its UTF-8 decoded, so a lone surrogate becomes U+FFFD as in any UTF-8 store. */
const stored = (body: string) => Buffer.from(body, "utf8").toString("utf8")

const packsOf = (refs: ReadonlyArray<BodyRef>) => [...new Set(refs.map((r) => r.pack))]

describe("PackWriter and PackReader", () => {
  it("gives back every body, in order, across pack boundaries and lone surrogates at their edges", () => {
    const piece = fc.constantFrom("a", "é", "Σ", "😀", "\ud800", "\udc00", " ", "x".repeat(5000))
    const body = fc.array(piece, { maxLength: 60 }).map((parts) => parts.join(""))
    fc.assert(
      fc.property(fc.array(body, { maxLength: 40 }), (bodies) => {
        const refs = writer.pack(bodies)
        assert.strictEqual(refs.length, bodies.length)
        refs.forEach((ref, i) => {
          assert.strictEqual(reader.bodyOf(ref), stored(bodies[i]!))
          assert.strictEqual(Buffer.from(reader.bodyBytes(ref)).toString("utf8"), stored(bodies[i]!))
        })
      }),
      { numRuns: 200 }
    )
  })

  it("leaves packs uncompressed when asked, and compressing them later gives the very packs made at once", () => {
    const bodies = [...Array.from({ length: 90 }, (_, i) => `body ${i} é 😀 `.repeat(150)), "x".repeat(PACK_BYTES)]
    const compressed = writer.pack(bodies)
    const raw = writer.pack(bodies, true)
    assert.deepStrictEqual(
      raw.map(({ from, to }) => [from, to]),
      compressed.map(({ from, to }) => [from, to])
    )
    const rawPacks = packsOf(raw)
    assert.strictEqual(rawPacks.length, packsOf(compressed).length)
    assert.isAbove(rawPacks.length, 2)
    rawPacks.forEach((pack, i) => {
      // A raw pack is its text, in a buffer of its own (a thread transfers it).
      assert.deepStrictEqual(pack, reader.unpack(packsOf(compressed)[i]!))
      assert.strictEqual(pack.byteLength, pack.buffer.byteLength)
      assert.deepStrictEqual(writer.compress(pack), packsOf(compressed)[i])
    })
  })

  it("fills packs to about PACK_BYTES and gives a larger body a pack of its own", () => {
    const small = Array.from({ length: 100 }, (_, i) => `document ${i} `.repeat(200))
    const large = "y".repeat(3 * PACK_BYTES)
    const refs = writer.pack([...small, large, "tail"])
    const packs = packsOf(refs)
    const sizes = packs.map((p) => reader.unpack(p)!.length)
    // Each full pack closes at PACK_BYTES or one small body past it; the large body closes the last one early.
    for (const size of sizes.slice(0, -3)) assert.isTrue(size >= PACK_BYTES && size < PACK_BYTES + 2600)
    assert.isTrue(sizes.at(-3)! < PACK_BYTES)
    const largeRef = refs[small.length]!
    assert.strictEqual(largeRef.from, 0)
    assert.strictEqual(reader.unpack(largeRef.pack)!.length, large.length)
    assert.strictEqual(refs[small.length + 1]!.pack, packs.at(-1))
    assert.isTrue(packs.length < 10, `${packs.length} packs for 100 small bodies`)
    // The text compresses: a pack is smaller than what it holds (but for the 4-byte tail, which a frame outweighs).
    for (const pack of packs.slice(0, -1)) assert.isTrue(pack.byteLength < reader.unpack(pack)!.byteLength / 10)
  })

  it("makes, through its kept zstd stream, the very bytes of a one-shot compression of each pack", () => {
    assert.isTrue(writer.reusesStream(), "this Node's zstd stream is driven directly")
    // The pack's parameters, as BodyPack sets them: a pack must read back the same whichever way it was made.
    const params = {
      [constants.ZSTD_c_compressionLevel]: 1,
      [constants.ZSTD_c_minMatch]: 7,
      [constants.ZSTD_c_hashLog]: 12,
      [constants.ZSTD_c_checksumFlag]: 1
    }
    let seed = 7
    const noise = (n: number) =>
      Array.from({ length: n }, () =>
        String.fromCharCode(33 + ((seed = (Math.imul(seed, 48271) + 11) >>> 0) % 90))
      ).join("")
    // Small packs, full ones, and one of incompressible text larger than the stream's output buffer (several writes
    // for one frame), each followed by more packs on the same stream.
    const bodies = [
      "tiny",
      ...Array.from({ length: 40 }, (_, i) => `document ${i} `.repeat(150)),
      noise(5 * PACK_BYTES),
      noise(3000),
      "é😀".repeat(9000),
      "tail"
    ]
    const packs = packsOf(writer.pack(bodies))
    assert.isAtLeast(packs.length, 4)
    for (const pack of packs) {
      const text = reader.unpack(pack)!
      assert.deepStrictEqual(pack, new Uint8Array(zstdCompressSync(text, { params })))
    }
    assert.isAbove(Math.max(...packs.map((p) => p.byteLength)), 4 * PACK_BYTES, "a frame took several writes")
  })

  it("is deterministic and packs nothing for no bodies", () => {
    const bodies = ["alpha", "beta", "gamma"]
    assert.deepStrictEqual(writer.pack(bodies), writer.pack(bodies))
    // A writer of its own (another thread's) makes the very same packs.
    assert.deepStrictEqual(new PackWriter().pack(bodies), writer.pack(bodies))
    assert.deepStrictEqual(writer.pack([]), [])
  })
})

describe("reading a damaged pack", () => {
  const [ref] = writer.pack(["a body that will be damaged"])
  const bytes = ref!.pack

  it("reports bytes that are not a pack, or whose checksum fails, as undefined", () => {
    assert.isUndefined(reader.unpack(new Uint8Array([0xff, 0xff])))
    const changed = bytes.slice()
    changed[changed.length - 1] = changed[changed.length - 1]! ^ 1
    assert.isUndefined(reader.unpack(changed))
    assert.isUndefined(reader.unpack(bytes.subarray(0, bytes.length - 5)))
  })

  it("reads the packs after a damaged one as before, whatever the damage left in the kept zstd stream", () => {
    assert.isTrue(reader.reusesDecoder(), "this Node's zstd stream is driven directly")
    const bodies = ["x".repeat(PACK_BYTES), "y".repeat(70_000), "z"]
    const good = writer.pack(bodies).map((r) => r.pack)
    const truncated = bytes.subarray(0, bytes.length - 5)
    const changed = bytes.slice()
    changed[changed.length - 1] = changed[changed.length - 1]! ^ 1
    // Frames declaring more, or less, than they hold (a small frame's size is the byte after its descriptor).
    const size = frameContentSize(bytes)!
    const larger = bytes.slice()
    larger[5] = larger[5]! + 1
    const smaller = bytes.slice()
    smaller[5] = smaller[5]! - 1
    assert.deepStrictEqual([frameContentSize(larger), frameContentSize(smaller)], [size + 1, size - 1])
    for (const damaged of [truncated, changed, larger, smaller]) {
      assert.isUndefined(reader.unpack(damaged))
      assert.deepStrictEqual(
        good.map((pack) => Buffer.from(reader.unpack(pack)!).toString("utf8")),
        bodies
      )
    }
  })

  it("reads the content size from a frame's header, for each size of the field", () => {
    for (const length of [0, 1, 255, 256, 300, 65_535, 70_000, 200_000]) {
      const text = new Uint8Array(length).fill(97)
      assert.strictEqual(frameContentSize(new Uint8Array(zstdCompressSync(text))), length)
    }
    assert.isUndefined(frameContentSize(new Uint8Array([0x28, 0xb5, 0x2f])))
    assert.isUndefined(frameContentSize(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])))
  })

  it("reports a range outside the pack, or one that cuts a character, as undefined", () => {
    const text = reader.unpack(writer.pack(["é"])[0]!.pack)!
    assert.strictEqual(bodyIn(text, 0, 2), "é")
    assert.isUndefined(bodyIn(text, 0, 3))
    assert.isUndefined(bodyIn(text, 1, 0))
    assert.isUndefined(bodyIn(text, 0, 1))
    assert.isUndefined(bodyIn(text, 0.5, 1))
  })
})
