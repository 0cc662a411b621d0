/** Documents' bodies as a snapshot keeps them between reads: as stored and cleaned, bounded in characters. */
import type { CleanerConfig } from "@funcpipe/domain/Config"
import { cleanText } from "../analysis/Clean.ts"
import type { DocumentText } from "../analysis/Display.ts"

/**
 * A document's body as a cache keeps it: as stored, cleaned (the same string when stored cleaned), and the texts
 * `documentText` gave for it, the same object for as long as the entry is kept (callers key their display work on it).
 */
export interface BodyEntry {
  readonly stored: string
  readonly cleaned: string
  shown?: DocumentText
}

/** How much document text a cache keeps, in UTF-16 units of stored and cleaned text (at most 64 MB; see decision 0083). */
export const BODY_CACHE_CHARS = 32 * 1024 * 1024

/** What an entry counts against the budget: its stored text, and its cleaned text when that differs. */
const charsOf = (entry: BodyEntry): number =>
  entry.stored.length + (entry.cleaned === entry.stored ? 0 : entry.cleaned.length)

/**
 * Bodies by key, oldest first, up to `budget` characters: results of successive queries often share documents, and
 * decompressing and cleaning a body costs more than scoring a query. The entry just read stays, however large, until
 * the next is read.
 */
export class BodyCache<K> {
  private readonly entries = new Map<K, BodyEntry>()
  private chars = 0
  private readonly budget: number

  constructor(budget: number = BODY_CACHE_CHARS) {
    this.budget = budget
  }

  /**
   * The entry of `key`; when not kept, `read` gives the body as stored and `cleaner` (absent: stored cleaned) makes
   * the cleaned one.
   */
  entry(key: K, read: () => string, cleaner: Pick<CleanerConfig, "rules"> | undefined): BodyEntry {
    let entry = this.entries.get(key)
    if (entry !== undefined) return entry
    const stored = read()
    entry = { stored, cleaned: cleaner === undefined ? stored : cleanText(stored, cleaner) }
    this.entries.set(key, entry)
    this.chars += charsOf(entry)
    for (const [old, kept] of this.entries) {
      if (this.chars <= this.budget || old === key) break
      this.entries.delete(old)
      this.chars -= charsOf(kept)
    }
    return entry
  }
}
