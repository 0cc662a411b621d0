/**
 * A table from words to numbers, looked up by a range of a text rather than by a string: the analyzer finds words as
 * ranges of a lowercased text, and making a string of each only to look it up in a `Map` would cost most of the
 * analysis.
 * Open addressing over 32-bit FNV-1a hashes of the UTF-16 units; a hit is confirmed by comparing the units in place.
 *
 * A lookup reads at places that depend on the word, so the layout keeps them few: a slot holds the word's hash, its
 * number and where its units are in one array of all the words' units. A hit reads the slot and those units: two
 * places, where a slot pointing into arrays of words, hashes and numbers would read four.
 */
/** 32-bit FNV-1a's offset basis and prime. */
export const FNV_OFFSET = 0x811c9dc5
export const FNV_PRIME = 0x01000193

/** A slot's fields, `SLOT` numbers per slot: hash, value, units' offset and 1 + their length (0: an empty slot). */
const SLOT = 4
const HASH = 0
const VALUE = 1
const OFFSET = 2
const LENGTH = 3

export class WordTable {
  private slots = new Int32Array(SLOT << 12)
  private units = new Uint16Array(1 << 14)
  private used = 0
  private count = 0

  /** How many words the table holds. */
  get size(): number {
    return this.count
  }

  /** The hash of `text`'s units in `[from, to)`, for `get` and `set`. */
  static hash(text: string, from: number, to: number): number {
    let h = FNV_OFFSET
    for (let i = from; i < to; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME)
    return h
  }

  /** The number of the word `text.slice(from, to)` (whose hash is `hash`), or `undefined`. */
  get(text: string, from: number, to: number, hash: number): number | undefined {
    const slots = this.slots
    const mask = (slots.length >> 2) - 1
    const length = to - from
    for (let s = hash & mask; ; s = (s + 1) & mask) {
      const at = s * SLOT
      const slotLength = slots[at + LENGTH]!
      if (slotLength === 0) return undefined
      if (
        slots[at + HASH] === hash &&
        slotLength === length + 1 &&
        this.same(text, from, slots[at + OFFSET]!, length)
      ) {
        return slots[at + VALUE]
      }
    }
  }

  private same(text: string, from: number, offset: number, length: number): boolean {
    const units = this.units
    for (let k = 0; k < length; k++) if (units[offset + k] !== text.charCodeAt(from + k)) return false
    return true
  }

  /** Adds `word` (not in the table yet, with hash `hash`) with its number (a 32-bit integer). */
  set(word: string, hash: number, value: number): void {
    if (this.used + word.length > this.units.length) {
      const grown = new Uint16Array(Math.max(2 * this.units.length, this.used + word.length))
      grown.set(this.units.subarray(0, this.used))
      this.units = grown
    }
    const offset = this.used
    for (let k = 0; k < word.length; k++) this.units[offset + k] = word.charCodeAt(k)
    this.used += word.length
    this.count++
    if (this.count * 2 > this.slots.length / SLOT) {
      const old = this.slots
      this.slots = new Int32Array(old.length * 2)
      for (let at = 0; at < old.length; at += SLOT) {
        if (old[at + LENGTH] !== 0)
          this.place(old[at + HASH]!, old[at + VALUE]!, old[at + OFFSET]!, old[at + LENGTH]! - 1)
      }
    }
    this.place(hash, value, offset, word.length)
  }

  private place(hash: number, value: number, offset: number, length: number): void {
    const slots = this.slots
    const mask = (slots.length >> 2) - 1
    let s = hash & mask
    while (slots[s * SLOT + LENGTH] !== 0) s = (s + 1) & mask
    const at = s * SLOT
    slots[at + HASH] = hash
    slots[at + VALUE] = value
    slots[at + OFFSET] = offset
    slots[at + LENGTH] = length + 1
  }
}
