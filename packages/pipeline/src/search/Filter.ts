/**
 * Query filters over a whole index: a rule evaluated once per document (not per chunk) with per-field value indexes,
 * turned into the set of chunk positions the engine may return.
 */
import { labelsOf } from "@funcpipe/domain/Document"
import { codePoints, isUnder, type Rule, type RuleField } from "@funcpipe/domain/Rule"
import type { PositionFilter } from "./IndexView.ts"

/**
 * Where the documents of an index that have chunks are: document `d`'s chunks are at the positions
 * `first[d] … first[d] + chunks[d] - 1` (every one live).
 */
export interface DocumentTable {
  readonly first: Int32Array
  readonly chunks: Int32Array
  /** Stored positions, deleted ones included. */
  readonly positions: number
}

/** A field of the documents as a filter reads it; bodies are not stored, so a query filter cannot read them. */
export type TableColumn = "doc_id" | "title" | "source" | "categories"

/**
 * Reads one column of the documents, in the table's document order (`null` only in `categories`). A filter reads a
 * column when a rule first needs it, through the reader of the caller's snapshot, which must see the same documents.
 */
export type ColumnReader = (column: TableColumn) => ReadonlyArray<string | null>

/** A filter lists its positions when at most this share of the index passes (see `PositionFilter.listed`). */
const LIST_SHARE = 0.25

/** Document numbers by value, for one field. */
type ValueIndex = ReadonlyMap<string, ReadonlyArray<number>>

const indexBy = (count: number, valuesOf: (doc: number) => ReadonlyArray<string>): ValueIndex => {
  const index = new Map<string, Array<number>>()
  for (let doc = 0; doc < count; doc++) {
    for (const value of valuesOf(doc)) {
      let docs = index.get(value)
      if (docs === undefined) index.set(value, (docs = []))
      docs.push(doc)
    }
  }
  return index
}

/**
 * Evaluates rules over the documents of a table. For each field it reads its column and builds, on first use, the map
 * from each value (for `categories`, each label) to the documents that hold it, so `=` and `in` cost a lookup per value
 * and `^=`, `len` and `source under` one test per distinct value rather than per document; a field no rule reads is
 * never read. Rules give the same answers as `matches` on each document (a property test compares them).
 */
export class TableFilter {
  private readonly indexes = new Map<TableColumn, ValueIndex>()
  private labelCounts: Int32Array | undefined
  private order: Int32Array | undefined
  readonly table: DocumentTable
  readonly count: number

  constructor(table: DocumentTable) {
    this.table = table
    this.count = table.first.length
  }

  private column(read: ColumnReader, name: TableColumn): ReadonlyArray<string | null> {
    const values = read(name)
    if (values.length !== this.count) {
      throw new Error(`the ${name} column has ${values.length} values for ${this.count} documents`)
    }
    return values
  }

  private index(field: RuleField | "source", read: ColumnReader): ValueIndex {
    if (field === "body") throw new Error("a query filter cannot read the body")
    let index = this.indexes.get(field)
    if (index !== undefined) return index
    const values = this.column(read, field)
    if (field === "categories") {
      const labels = values.map(labelsOf)
      this.labelCounts = Int32Array.from(labels, (l) => l.length)
      index = indexBy(this.count, (d) => labels[d]!)
    } else {
      index = indexBy(this.count, (d) => [values[d] ?? ""])
    }
    this.indexes.set(field, index)
    return index
  }

  /** Sets the documents of every value `test` accepts. */
  private markValues(
    field: RuleField | "source",
    test: (value: string) => boolean,
    read: ColumnReader,
    out: Uint8Array
  ): Uint8Array {
    for (const [value, docs] of this.index(field, read)) if (test(value)) for (const doc of docs) out[doc] = 1
    return out
  }

  /** The documents that satisfy `rule`: 1 at each passing document's number. */
  documents(rule: Rule, read: ColumnReader): Uint8Array {
    const out = new Uint8Array(this.count)
    switch (rule._tag) {
      case "Eq":
        for (const doc of this.index(rule.field, read).get(rule.value) ?? []) out[doc] = 1
        return out
      case "In": {
        const index = this.index(rule.field, read)
        for (const value of rule.values) for (const doc of index.get(value) ?? []) out[doc] = 1
        return out
      }
      case "StartsWith":
        return this.markValues(rule.field, (value) => value.startsWith(rule.value), read, out)
      case "LenGt":
        if (rule.field === "categories") {
          this.index("categories", read)
          const counts = this.labelCounts!
          for (let doc = 0; doc < this.count; doc++) if (counts[doc]! > rule.value) out[doc] = 1
          return out
        }
        return this.markValues(rule.field, (value) => codePoints(value) > rule.value, read, out)
      case "Under":
        return this.markValues("source", (source) => isUnder(source, rule.path), read, out)
      case "All": {
        out.fill(1)
        for (const r of rule.rules) {
          const part = this.documents(r, read)
          for (let doc = 0; doc < this.count; doc++) out[doc] = out[doc]! & part[doc]!
        }
        return out
      }
      case "AnyOf": {
        for (const r of rule.rules) {
          const part = this.documents(r, read)
          for (let doc = 0; doc < this.count; doc++) out[doc] = out[doc]! | part[doc]!
        }
        return out
      }
      case "Not": {
        const part = this.documents(rule.rule, read)
        for (let doc = 0; doc < this.count; doc++) out[doc] = part[doc]! ^ 1
        return out
      }
    }
  }

  /** The chunk positions of the documents that satisfy `rule`, listed when few (see `PositionFilter`). */
  positions(rule: Rule, read: ColumnReader): PositionFilter {
    const docs = this.documents(rule, read)
    const { chunks, first, positions } = this.table
    const allowed = new Uint8Array(positions)
    let count = 0
    for (let doc = 0; doc < this.count; doc++) {
      if (docs[doc] === 1) {
        allowed.fill(1, first[doc]!, first[doc]! + chunks[doc]!)
        count += chunks[doc]!
      }
    }
    if (count > LIST_SHARE * positions) return { allowed, count, listed: undefined }
    const listed = new Int32Array(count)
    let at = 0
    for (const doc of this.byFirst()) {
      if (docs[doc] !== 1) continue
      for (let c = 0; c < chunks[doc]!; c++) listed[at++] = first[doc]! + c
    }
    return { allowed, count, listed }
  }

  /** The document numbers in the order of their first positions, so listed positions come out ascending. */
  private byFirst(): Int32Array {
    if (this.order !== undefined) return this.order
    const { first } = this.table
    return (this.order = Int32Array.from({ length: this.count }, (_, doc) => doc).sort((a, b) => first[a]! - first[b]!))
  }
}
