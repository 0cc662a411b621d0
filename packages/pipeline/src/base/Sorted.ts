/** Searches in sorted arrays. */

/** How many values of `sorted` (ascending) are below `value`: where `value` would go, before any equal to it. */
export const countBelow = (sorted: ArrayLike<number>, value: number): number => {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (sorted[mid]! < value) lo = mid + 1
    else hi = mid
  }
  return lo
}
