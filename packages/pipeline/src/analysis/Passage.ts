/**
 * Passages for display: the part of a result's text, of about a given width, that shows the most of its matches,
 * cut at word boundaries.
 */

/** A passage of a text: its code points `[start, end)`, and the matched spans inside it, counted from its start. */
export interface Passage {
  readonly start: number
  readonly end: number
  readonly spans: ReadonlyArray<readonly [number, number]>
}

/** How far a cut may move to reach a word boundary, in code points: past that, the cut stays inside the word. */
const BOUNDARY_REACH = 12

/** Whether a code point separates words for a cut (white space or punctuation that ends a phrase). */
const isBreak = (point: string): boolean => /[\s,.;:!?)\]}»"”]/u.test(point)

/**
 * The passage of `points` (a text's code points) at most `width` code points long that holds the most of the matched
 * `spans` (code points, in text order, not overlapping), each counted by its `weights` entry (1 without), with its
 * matches in the middle; the earliest such window when several hold as much, and the text's start when there is no
 * span. Its edges then move inwards, at most
 * `BOUNDARY_REACH` code points and never into a match, to the nearest word boundary, so that a passage starts and ends
 * on whole words where it can.
 */
export const passageOf = (
  points: ReadonlyArray<string>,
  spans: ReadonlyArray<readonly [number, number]>,
  width: number,
  weights?: ReadonlyArray<number>
): Passage => {
  const length = points.length
  if (length <= width) return { start: 0, end: length, spans }
  let start = 0
  let best = 0
  let bestLast = 0
  // The window starting at each span's start: the weight of the spans that end inside it (two pointers over the
  // sorted spans, the running sum kept as they enter and leave).
  const weightOf = (i: number) => weights?.[i] ?? 1
  let last = 0
  let sum = 0
  for (let first = 0; first < spans.length; first++) {
    const from = spans[first]![0]
    if (last < first) {
      last = first
      sum = 0
    }
    while (last < spans.length && spans[last]![1] <= from + width) sum += weightOf(last++)
    if (last > first && sum > best) {
      best = sum
      bestLast = last - 1
      start = from
    }
    if (last > first) sum -= weightOf(first)
  }
  // The matches of the chosen window, centred: the room they leave is shared before and after them.
  const keepFrom = best > 0 ? start : 0
  const keepTo = best > 0 ? spans[bestLast]![1] : 0
  if (best > 0) start = Math.max(0, Math.min(keepFrom - Math.floor((width - (keepTo - keepFrom)) / 2), length - width))
  let end = Math.min(length, start + width)
  // The start moves forward to the beginning of a word, and the end back to the end of one, within reach.
  for (let p = start; start > 0 && p < start + BOUNDARY_REACH && p <= keepFrom; p++) {
    if (isBreak(points[p - 1]!)) {
      start = p
      break
    }
  }
  for (let q = end; end < length && q > end - BOUNDARY_REACH && q >= keepTo && q > start; q--) {
    if (isBreak(points[q]!)) {
      end = q
      break
    }
  }
  const inside = spans.filter(([s, e]) => s >= start && e <= end).map(([s, e]) => [s - start, e - start] as const)
  return { start, end, spans: inside }
}

/**
 * Each span's weight in choosing a passage: one over the square of how often its word occurs in the text, so that a
 * word the text holds once outweighs a cluster of a word it repeats (the rarer word tells more about why the text
 * matched): the n occurrences of a word weigh 1/n together.
 */
export const rarityWeights = (text: string, spans: ReadonlyArray<readonly [number, number]>): Array<number> => {
  const points = Array.from(text)
  const words = spans.map(([start, end]) => points.slice(start, end).join("").toLowerCase())
  const counts = new Map<string, number>()
  for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1)
  return words.map((word) => 1 / counts.get(word)! ** 2)
}

/** A text cut to a passage: `…` where text is left out, and the matched spans counted in it. */
export interface CutPassage {
  readonly text: string
  readonly spans: ReadonlyArray<readonly [number, number]>
}

/**
 * `text` cut to the passage of at most `width` code points (plus the `…` marks) that shows the most of its matched
 * `spans` (`passageOf`, the rarer words weighing more), with `…` where text is left out; line breaks and tabs become
 * spaces. A text that fits is kept whole.
 */
export const cutPassage = (
  text: string,
  spans: ReadonlyArray<readonly [number, number]>,
  width: number
): CutPassage => {
  // One space per line break or tab, so that code point offsets stay as they are.
  const points = Array.from(text.replace(/[\r\n\t]/g, " "))
  const passage = passageOf(points, spans, width, rarityWeights(text, spans))
  const before = passage.start > 0 ? "…" : ""
  const after = passage.end < points.length ? "…" : ""
  const shift = before.length
  return {
    text: before + points.slice(passage.start, passage.end).join("") + after,
    spans: passage.spans.map(([s, e]) => [s + shift, e + shift] as const)
  }
}
