/** Keep rules applied to documents as they are read: which enter an index, a search or a chunk export. */
import { labelsOf, type RawDoc } from "@funcpipe/domain/Document"
import { isKeepAll, matches, normalize, printRule, type Rule } from "@funcpipe/domain/Rule"

/** Whether a rule reads the file a document came from (has a `source under …`). */
const readsSource = (rule: Rule): boolean => {
  switch (rule._tag) {
    case "Under":
      return true
    case "All":
    case "AnyOf":
      return rule.rules.some(readsSource)
    case "Not":
      return readsSource(rule.rule)
    default:
      return false
  }
}

/**
 * The test of a keep rule for documents as read: `(doc, source)` is true when the rule keeps the raw document read
 * from the file `source`. `resolve` makes a source comparable with the rule's `Under` paths (absolute, as the caller
 * made them); it is called only for rules that read the source. A rule that keeps everything costs nothing. Pure.
 */
export const keepTest = (
  rule: Rule,
  resolve: (source: string) => string
): ((doc: RawDoc, source: string) => boolean) => {
  if (isKeepAll(rule)) return () => true
  const withSource = readsSource(rule)
  return (doc, source) =>
    matches(rule, {
      docId: doc.docId,
      title: doc.title,
      body: doc.body,
      labels: labelsOf(doc.categories),
      source: withSource ? resolve(source) : source
    })
}

/** How a stored keep rule changed, in the text form: `undefined` when it did not (absent counts as `true`). */
export const keepChange = (
  stored: Rule | undefined,
  requested: Rule
): { readonly from: string; readonly to: string } | undefined => {
  const from = printRule(normalize(stored ?? { _tag: "All", rules: [] }))
  const to = printRule(normalize(requested))
  return from === to ? undefined : { from, to }
}
