/**
 * Query filters over a whole index: a rule evaluated once per document (not per chunk) with per-field value indexes,
 * turned into the set of chunk positions the engine may return.
 */
import { labelsOf } from "@funcpipe/domain/Document"
import { codePoints, isUnder, type Rule, type RuleField } from "@funcpipe/domain/Rule"
import type { PositionFilter } from "./Engine.ts"

/**
 * The documents of an index that have chunks, as a filter reads them: document `d`'s fields, and its chunks at the
 * positions `first[d] … first[d] + chunks[d] - 1` (every one live). Bodies are not here: the index keeps only cleaned
 * text, so a query filter cannot read them (`QueryFilterInvalid`).
 */
export interface DocumentTable {
  readonly docIds: ReadonlyArray<string>
  readonly titles: ReadonlyArray<string>
  readonly sources: ReadonlyArray<string>
  readonly categories: ReadonlyArray<string | null>
  readonly first: Int32Array
  readonly chunks: Int32Array
  /** Stored positions, deleted ones included. */
  readonly positions: number
}

/** A filter lists its positions when at most this share of the index passes (see `PositionFilter.listed`). */
const LIST_SHARE = 0.25

/** Document numbers by value, for one field. */
type ValueIndex = ReadonlyMap<string, ReadonlyArray<number>>

const indexBy = (count: number, valuesOf: (doc: number) => ReadonlyArray<string>): ValueIndex => {
  const index = new Map<string, Array<number>>()
  for (let doc = 0; doc < count; doc++) {
    for (const value of valuesOf(doc)) {
      let docs = index.get(value)
      if (docs === undefined) index.set(value, docs = [])
      docs.push(doc)
    }
  }
  return index
}

/**
 * Evaluates rules over a document table. For each field it builds, on first use, the map from each value (for
 * `categories`, each label) to the documents that hold it, so `=` and `in` cost a lookup per value and `^=`, `len`
 * and `source under` one test per distinct value rather than per document. Rules give the same answers as `matches`
 * on each document (a property test compares them).
 */
export class TableFilter {
  private readonly indexes = new Map<RuleField | "source", ValueIndex>()
  private labels: ReadonlyArray<ReadonlyArray<string>> | undefined
  private order: Int32Array | undefined
  readonly table: DocumentTable
  readonly count: number

  constructor(table: DocumentTable) {
    this.table = table
    this.count = table.docIds.length
  }

  private labelsOf(doc: number): ReadonlyArray<string> {
    this.labels ??= this.table.categories.map(labelsOf)
    return this.labels[doc]!
  }

  private index(field: RuleField | "source"): ValueIndex {
    let index = this.indexes.get(field)
    if (index !== undefined) return index
    const { docIds, sources, titles } = this.table
    switch (field) {
      case "doc_id":
        index = indexBy(this.count, (d) => [docIds[d]!])
        break
      case "title":
        index = indexBy(this.count, (d) => [titles[d]!])
        break
      case "source":
        index = indexBy(this.count, (d) => [sources[d]!])
        break
      case "categories":
        index = indexBy(this.count, (d) => this.labelsOf(d))
        break
      case "body":
        throw new Error("a query filter cannot read the body")
    }
    this.indexes.set(field, index)
    return index
  }

  /** Sets the documents of every value `test` accepts. */
  private markValues(field: RuleField | "source", test: (value: string) => boolean, out: Uint8Array): Uint8Array {
    for (const [value, docs] of this.index(field)) if (test(value)) for (const doc of docs) out[doc] = 1
    return out
  }

  /** The documents that satisfy `rule`: 1 at each passing document's number. */
  documents(rule: Rule): Uint8Array {
    const out = new Uint8Array(this.count)
    switch (rule._tag) {
      case "Eq":
        for (const doc of this.index(rule.field).get(rule.value) ?? []) out[doc] = 1
        return out
      case "In": {
        const index = this.index(rule.field)
        for (const value of rule.values) for (const doc of index.get(value) ?? []) out[doc] = 1
        return out
      }
      case "StartsWith":
        return this.markValues(rule.field, (value) => value.startsWith(rule.value), out)
      case "LenGt":
        if (rule.field === "categories") {
          for (let doc = 0; doc < this.count; doc++) if (this.labelsOf(doc).length > rule.value) out[doc] = 1
          return out
        }
        return this.markValues(rule.field, (value) => codePoints(value) > rule.value, out)
      case "Under":
        return this.markValues("source", (source) => isUnder(source, rule.path), out)
      case "All": {
        out.fill(1)
        for (const r of rule.rules) {
          const part = this.documents(r)
          for (let doc = 0; doc < this.count; doc++) out[doc] = out[doc]! & part[doc]!
        }
        return out
      }
      case "AnyOf": {
        for (const r of rule.rules) {
          const part = this.documents(r)
          for (let doc = 0; doc < this.count; doc++) out[doc] = out[doc]! | part[doc]!
        }
        return out
      }
      case "Not": {
        const part = this.documents(rule.rule)
        for (let doc = 0; doc < this.count; doc++) out[doc] = part[doc]! ^ 1
        return out
      }
    }
  }

  /** The chunk positions of the documents that satisfy `rule`, listed when few (see `PositionFilter`). */
  positions(rule: Rule): PositionFilter {
    const docs = this.documents(rule)
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
    return this.order = Int32Array.from({ length: this.count }, (_, doc) => doc).sort((a, b) => first[a]! - first[b]!)
  }
}
