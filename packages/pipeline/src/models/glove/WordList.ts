/**
 * A word list with a hash table over it, in three typed arrays that can be stored in a file and used straight from
 * its bytes: looking a word up needs no decoding and no `Map` to build.
 */

/** Words by row, and an open-addressing hash table from word to row. */
export interface WordList {
  /** Row `r`'s word is `units[starts[r]] … units[starts[r + 1] - 1]` (UTF-16 code units); `rows + 1` entries. */
  readonly starts: Uint32Array
  readonly units: Uint16Array
  /** Power-of-two many slots; each holds `row + 1` of a word, or 0 when empty. Linear probing from `wordHash`. */
  readonly slots: Uint32Array
}

/** FNV-1a over a string's UTF-16 code units: a 32-bit hash, the same on every platform. */
export const wordHash = (word: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), 0x01000193) >>> 0
  return hash
}

/** How many rows the table holds. */
export const tableRows = (table: WordList): number => table.starts.length - 1

/**
 * The table of `words`, row `r` for `words[r]`, with at least twice as many slots as words (so probes stay short).
 * When a word repeats, lookups find its first row.
 */
export const makeWordList = (words: ReadonlyArray<string>): WordList => {
  const starts = new Uint32Array(words.length + 1)
  for (let r = 0; r < words.length; r++) starts[r + 1] = starts[r]! + words[r]!.length
  const units = new Uint16Array(starts[words.length]!)
  for (let r = 0; r < words.length; r++) {
    const word = words[r]!
    for (let i = 0; i < word.length; i++) units[starts[r]! + i] = word.charCodeAt(i)
  }
  let size = 1
  while (size < 2 * words.length) size *= 2
  const slots = new Uint32Array(size)
  const table = { starts, units, slots }
  for (let r = 0; r < words.length; r++) {
    const word = words[r]!
    let slot = wordHash(word) & (size - 1)
    for (; slots[slot] !== 0; slot = (slot + 1) & (size - 1)) if (sameWord(table, slots[slot]! - 1, word)) break
    if (slots[slot] === 0) slots[slot] = r + 1
  }
  return table
}

const sameWord = (table: WordList, row: number, word: string): boolean => {
  const start = table.starts[row]!
  if (table.starts[row + 1]! - start !== word.length) return false
  for (let i = 0; i < word.length; i++) if (table.units[start + i] !== word.charCodeAt(i)) return false
  return true
}

/** The row of `word`, or -1 when the table does not hold it. */
export const rowOfWord = (table: WordList, word: string): number => {
  const mask = table.slots.length - 1
  for (let slot = wordHash(word) & mask; ; slot = (slot + 1) & mask) {
    const entry = table.slots[slot]!
    if (entry === 0) return -1
    if (sameWord(table, entry - 1, word)) return entry - 1
  }
}

/** The word of `row`. */
export const wordAt = (table: WordList, row: number): string =>
  String.fromCharCode(...table.units.subarray(table.starts[row]!, table.starts[row + 1]!))

/**
 * Why the arrays are not a usable table, or `undefined` when they are: starts that begin at 0, never decrease and
 * end at the number of units; a power-of-two slot count with at least one empty slot (so every probe ends); slots
 * that name rows that exist. A damaged file cannot then send a lookup out of bounds or into an endless loop.
 */
export const tableProblem = (table: WordList): string | undefined => {
  const { starts, units, slots } = table
  if (starts.length < 2 || starts[0] !== 0 || starts[starts.length - 1] !== units.length) {
    return "its word list does not add up"
  }
  for (let r = 1; r < starts.length; r++) if (starts[r]! <= starts[r - 1]!) return "it holds an empty word"
  if (slots.length === 0 || (slots.length & (slots.length - 1)) !== 0) return "its word index has a bad size"
  const rows = starts.length - 1
  let empty = 0
  for (let i = 0; i < slots.length; i++) {
    const entry = slots[i]!
    if (entry === 0) empty++
    else if (entry > rows) return "its word index names a word that does not exist"
  }
  return empty === 0 ? "its word index is full" : undefined
}
