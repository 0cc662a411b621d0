/**
 * A table from words to numbers, looked up by a range of a text rather than by a string: the analyzer finds words as
 * ranges of a lowercased text, and making a string of each only to look it up in a `Map` cost most of the analysis.
 * Open addressing over 32-bit FNV-1a hashes of the UTF-16 units; a hit is confirmed by comparing the units in place.
 */
/** 32-bit FNV-1a's offset basis and prime. */
export const FNV_OFFSET = 0x811c9dc5
export const FNV_PRIME = 0x01000193

export class WordTable {
  private slots = new Int32Array(1 << 12)
  private readonly words: Array<string> = []
  private readonly hashes: Array<number> = []
  private readonly values: Array<number> = []

  /** How many words the table holds. */
  get size(): number {
    return this.words.length
  }

  /** The hash of `text`'s units in `[from, to)`, for `get` and `set`. */
  static hash(text: string, from: number, to: number): number {
    let h = FNV_OFFSET
    for (let i = from; i < to; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME)
    return h
  }

  /** The number of the word `text.slice(from, to)` (whose hash is `hash`), or `undefined`. */
  get(text: string, from: number, to: number, hash: number): number | undefined {
    const mask = this.slots.length - 1
    const length = to - from
    for (let s = hash & mask; ; s = (s + 1) & mask) {
      const entry = this.slots[s]!
      if (entry === 0) return undefined
      const word = this.words[entry - 1]!
      if (this.hashes[entry - 1] === hash && word.length === length && text.startsWith(word, from)) {
        return this.values[entry - 1]
      }
    }
  }

  /** Adds `word` (not in the table yet, with hash `hash`) with its number. */
  set(word: string, hash: number, value: number): void {
    this.words.push(word)
    this.hashes.push(hash)
    this.values.push(value)
    if (this.words.length * 2 > this.slots.length) {
      this.slots = new Int32Array(this.slots.length * 2)
      for (let e = 0; e < this.words.length; e++) this.place(this.hashes[e]!, e + 1)
    } else this.place(hash, this.words.length)
  }

  private place(hash: number, entry: number): void {
    const mask = this.slots.length - 1
    let s = hash & mask
    while (this.slots[s] !== 0) s = (s + 1) & mask
    this.slots[s] = entry
  }
}
