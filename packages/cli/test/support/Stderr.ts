/** A child process's stderr in a test, as it comes, with a way to wait for a line of it. */

import type { ChildProcess } from "node:child_process"
import { Effect } from "effect"

/**
 * What `child` writes on stderr: `text()` so far, and `waitFor(pattern, from)`, which waits until the text from
 * position `from` on (a `text().length` taken before an action, so that only what came after counts) matches
 * `pattern`. No deadline of its own: the test's applies.
 */
export const stderrOf = (child: ChildProcess) => {
  let text = ""
  const waiters: Array<() => void> = []
  child.stderr!.on("data", (data: Buffer) => {
    text += data.toString()
    for (const wake of waiters.splice(0)) wake()
  })
  return {
    text: () => text,
    waitFor: (pattern: RegExp, from = 0) =>
      Effect.promise(async () => {
        for (;;) {
          const match = pattern.exec(text.slice(from))
          if (match !== null) return match
          await new Promise<void>((wake) => waiters.push(wake))
        }
      })
  }
}
