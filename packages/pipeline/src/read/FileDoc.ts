/** Turns a Markdown or plain-text file into a document. */

import { decodeAs } from "@funcpipe/domain/Decode"
import { joinLabels, labelsOf, RawDoc } from "@funcpipe/domain/Document"
import { Effect, Result } from "effect"
import { BadRecord } from "./BadRecord.ts"

const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/m
const decodeDoc = decodeAs(RawDoc, "document")

/** A `---` line, the YAML, and a closing `---` or `...` line, at the very start of a file. */
const FRONT_MATTER = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/

/** A block whose first line is `key:` was meant as front matter, so its YAML errors are reported, not ignored. */
const LOOKS_LIKE_YAML = /^(?:[ \t]*(?:#.*)?\r?\n)*[A-Za-z_][\w .-]*:(?:[ \t]|\r?\n|$)/

/** The `yaml` package's `parse`. */
type ParseYaml = (text: string, options: { readonly prettyErrors: boolean }) => unknown

let parseYaml: ParseYaml | undefined

/**
 * Loads the YAML parser, once: about a fifth of the CLI's start-up code, which only Markdown files with front matter
 * need, so no command loads it before reading one (see `needsYaml`). `fileDoc` needs it loaded for such a file.
 */
export const loadYaml: Effect.Effect<void> = Effect.suspend(() =>
  parseYaml !== undefined
    ? Effect.void
    : Effect.map(
        Effect.promise(() => import("yaml")),
        (yaml) => void (parseYaml = yaml.parse)
      )
)

/** Whether `fileDoc` needs the YAML parser for this file: a Markdown file that starts with a front matter block. */
export const needsYaml = (relativePath: string, text: string): boolean =>
  MARKDOWN.test(relativePath) && FRONT_MATTER.test(text)

const MARKDOWN = /\.(md|markdown)$/i

/** The keys of the front matter that fill a document's categories, in this order. */
const LABEL_KEYS = ["categories", "tags"] as const

/** How deep front matter may nest (lists in lists, or indented blocks): far more than any title or labels need. */
const MAX_YAML_DEPTH = 64

/**
 * The line (from 0) where `yaml` first nests deeper than `MAX_YAML_DEPTH`, by brackets or by indentation (two spaces
 * a level), or `undefined`: the parser recurses per level, so deeper input would overflow its stack.
 */
const tooDeep = (yaml: string): number | undefined => {
  let depth = 0
  let line = 0
  let indent = 0
  let atStart = true
  for (let i = 0; i < yaml.length; i++) {
    const c = yaml.charCodeAt(i)
    if (c === 0x0a) {
      line++
      indent = 0
      atStart = true
      continue
    }
    if (atStart && c === 0x20) {
      if (++indent > 2 * MAX_YAML_DEPTH) return line
      continue
    }
    atStart = false
    if (c === 0x22) {
      // A double-quoted scalar's brackets are text: skip to its closing quote (on this line).
      for (i++; i < yaml.length && yaml.charCodeAt(i) !== 0x22 && yaml.charCodeAt(i) !== 0x0a; i++) {
        if (yaml.charCodeAt(i) === 0x5c) i++
      }
      continue
    }
    if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_YAML_DEPTH) return line
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--
  }
  return undefined
}

/** Describes a YAML value that is not a word, for a message. */
const kindOf = (value: unknown): string =>
  Array.isArray(value)
    ? "a list"
    : value instanceof Uint8Array
      ? "binary data"
      : typeof value === "object"
        ? "a mapping"
        : String(value)

/** What a Markdown file's front matter gives: the body without it, and its category labels. */
interface FrontMatter {
  readonly body: string
  readonly labels: ReadonlyArray<string>
}

/**
 * Reads the YAML front matter of a Markdown file (a block between `---` lines at its start, as Jekyll and Hugo
 * write it): its `categories` and `tags` (each a list, or a string split as `labelsOf` splits) become the document's
 * labels, and the block is left out of the body. A block that is not a YAML mapping is ordinary text (a thematic
 * break); one meant as front matter (its first line is `key:`) that is not valid YAML is a `BadRecord` naming the
 * line. `undefined` when the file has no front matter.
 */
export const frontMatter = (source: string, text: string): Result.Result<FrontMatter, BadRecord> | undefined => {
  const block = FRONT_MATTER.exec(text)
  if (block === null) return undefined
  const yaml = block[1] ?? ""
  const bad = (line: number, reason: string) => Result.fail(new BadRecord({ source, line, reason }))
  const deep = tooDeep(yaml)
  if (deep !== undefined) {
    return bad(
      2 + deep,
      `the front matter (the --- block at the top) is nested more than ${MAX_YAML_DEPTH} levels deep; ` +
        `front matter holds a title and labels, which need two`
    )
  }
  // A defect, not a bad file: the reader loads the parser before it reads such a file.
  if (parseYaml === undefined) throw new Error("the YAML parser is not loaded (see loadYaml)")
  let value: unknown
  try {
    value = parseYaml(yaml, { prettyErrors: false })
  } catch (error) {
    if (!LOOKS_LIKE_YAML.test(yaml)) return undefined
    // Nesting the count above does not see (explicit keys, `? ? ? …`) overflows the parser: the same clear reason.
    if (error instanceof RangeError) {
      return bad(2, `the front matter (the --- block at the top) is nested more than ${MAX_YAML_DEPTH} levels deep`)
    }
    const message = error instanceof Error ? error.message : String(error)
    const offset =
      typeof error === "object" && error !== null && "pos" in error && Array.isArray(error.pos)
        ? Number(error.pos[0])
        : 0
    // The YAML starts on the file's second line.
    const line = 2 + (yaml.slice(0, offset).match(/\n/g)?.length ?? 0)
    return bad(line, `the front matter (the --- block at the top) is not valid YAML: ${message}`)
  }
  if (value !== null && (typeof value !== "object" || Array.isArray(value))) return undefined
  const labels: Array<string> = []
  for (const key of LABEL_KEYS) {
    const entry = value === null ? undefined : (value as Record<string, unknown>)[key]
    if (entry === undefined || entry === null) continue
    const items = Array.isArray(entry) ? entry : [entry]
    for (const item of items) {
      if (item === null) continue
      if (typeof item === "object") {
        const what = Array.isArray(entry) ? `a list holding ${kindOf(item)}` : kindOf(item)
        return bad(1, `"${key}" in the front matter must be a word, a list of words or a string of them, not ${what}`)
      }
      const words = Array.isArray(entry) ? [String(item).trim()] : labelsOf(String(item))
      for (const word of words) if (word !== "" && !labels.includes(word)) labels.push(word)
    }
  }
  return Result.succeed({ body: text.slice(block[0].length), labels })
}

/**
 * The document for the file at `relativePath` (its doc id, with `/` separators): the title is the first Markdown
 * heading of a `.md` file, otherwise the file name; the body is the whole text. A Markdown file's front matter (see
 * `frontMatter`) gives its categories and is not part of the body; other files have no categories. For a file that
 * `needsYaml`, `loadYaml` must have run.
 */
export const fileDoc = (relativePath: string, text: string): Result.Result<RawDoc, BadRecord> => {
  const name = relativePath.slice(relativePath.lastIndexOf("/") + 1)
  const markdown = MARKDOWN.test(relativePath)
  const front = markdown ? frontMatter(relativePath, text) : undefined
  if (front !== undefined && Result.isFailure(front)) return Result.fail(front.failure)
  const body = front === undefined ? text : front.success.body
  const categories = front === undefined || front.success.labels.length === 0 ? null : joinLabels(front.success.labels)
  const match = relativePath.toLowerCase().endsWith(".md") ? heading.exec(body) : null
  const title = match?.[1]?.trim() || name
  return Result.mapError(
    decodeDoc({ docId: relativePath, title, body, categories }),
    (error) => new BadRecord({ source: relativePath, line: 0, reason: error.message })
  )
}

/**
 * The document of a file read through a converter (HTML, Word, EPUB; see `Formats.ts`), its text already Markdown:
 * the title is the file's own (its metadata, else its first heading), else the file name. A file with no text is a
 * skip: nothing of it could be found.
 */
export const convertedDoc = (
  relativePath: string,
  page: { readonly text: string; readonly title: string | undefined }
): Result.Result<RawDoc, BadRecord> => {
  const bad = (reason: string) => Result.fail(new BadRecord({ source: relativePath, line: 0, reason }))
  if (page.text.trim() === "") return bad("it has no text to index (only images, scripts or an empty page)")
  const name = relativePath.slice(relativePath.lastIndexOf("/") + 1)
  return Result.mapError(
    decodeDoc({ docId: relativePath, title: page.title?.trim() || name, body: page.text, categories: null }),
    (error) => new BadRecord({ source: relativePath, line: 0, reason: error.message })
  )
}

/**
 * The labels that keep the doc ids of several paths apart, from each path's components (`/a/x/docs` is
 * `["a", "x", "docs"]`): with one path, none (`undefined`); with several, each path's shortest ending that no other
 * path shares (`docs`, or `x/docs` when `/b/y/docs` is given too). A text file under a labelled directory gets the
 * doc id `label/relative path`; a text file named directly gets its label as doc id. The labels depend only on the
 * paths, so the same command gives the same doc ids every run.
 */
export const rootLabels = (paths: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<string | undefined> => {
  if (paths.length < 2) return paths.map(() => undefined)
  const ending = (parts: ReadonlyArray<string>, n: number) => parts.slice(Math.max(0, parts.length - n)).join("/")
  return paths.map((parts, i) => {
    let n = 1
    while (n < parts.length && paths.some((other, j) => j !== i && ending(other, n) === ending(parts, n))) n++
    return ending(parts, n) || "/"
  })
}
