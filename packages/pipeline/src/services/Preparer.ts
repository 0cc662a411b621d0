/** Boundary service: where the per-document stage runs, on the calling thread or on a pool of worker threads. */
import { Context, Effect, Layer } from "effect"
import { availableParallelism } from "node:os"
import { Worker } from "node:worker_threads"
import { type DocText, type PreparedBatch, prepareBatch, type PrepareSettings } from "../stages/Prepare.ts"

export interface Preparer {
  /** How many batches can be prepared at once, so a caller can keep them all busy. */
  readonly concurrency: number
  /** Runs `prepareBatch`; a failure of the stage itself is a defect (a bug), never a user's error. */
  readonly prepare: (docs: ReadonlyArray<DocText>, settings: PrepareSettings) => Effect.Effect<PreparedBatch>
}

interface Reply {
  readonly batch?: PreparedBatch
  readonly error?: string
}

/** Runs the stage on the calling thread. */
export const inlinePreparer: Preparer = {
  concurrency: 1,
  prepare: (docs, settings) => Effect.sync(() => prepareBatch(docs, settings))
}

/** The preparer in use: inline unless a layer installs the worker pool (the CLI does). */
export const Preparer = Context.Reference<Preparer>("pipeline/Preparer", { defaultValue: () => inlinePreparer })

/**
 * A pool of `workers` threads running `script` (the `PrepareWorker` module, as source or bundled), each taking one
 * batch at a time; batches go to the least busy thread. Threads start with the first batch (a command that indexes
 * nothing starts none) and end when the layer is released.
 */
export const layerWorkers = (script: URL, workers = Math.max(1, availableParallelism() - 1)) =>
  Layer.effect(
    Preparer,
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => ({ threads: [] as Array<Worker> })),
        (pool) => Effect.promise(() => Promise.all(pool.threads.map((t) => t.terminate())))
      ),
      (pool): Preparer => {
        let next = 0
        const busy: Array<number> = []
        const pending = new Map<number, { readonly thread: number; readonly done: (reply: Reply) => void }>()
        const start = () => {
          for (let t = 0; t < workers; t++) {
            // A small young generation per thread bounds the memory a pool adds (see the CLI launcher).
            const thread = new Worker(script, { resourceLimits: { maxYoungGenerationSizeMb: 24 } })
            thread.unref()
            thread.on("message", (reply: Reply & { readonly id: number }) => {
              pending.get(reply.id)?.done(reply)
              pending.delete(reply.id)
            })
            // A thread that dies takes its batches with it: they fail rather than wait forever.
            thread.on("error", (error) => {
              for (const [id, request] of pending) {
                if (request.thread !== t) continue
                pending.delete(id)
                request.done({ error: error.stack ?? error.message })
              }
            })
            pool.threads.push(thread)
            busy.push(0)
          }
        }
        return {
          // Enough batches in flight that a thread always has one queued while the caller writes (synchronously).
          concurrency: 16 * workers,
          prepare: (docs, settings) =>
            Effect.callback<PreparedBatch>((resume) => {
              if (pool.threads.length === 0) start()
              const id = next++
              const t = busy.indexOf(Math.min(...busy))
              busy[t]!++
              pending.set(id, {
                thread: t,
                done: (reply) => {
                  busy[t]!--
                  resume(reply.batch !== undefined ? Effect.succeed(reply.batch) : Effect.die(new Error(reply.error)))
                }
              })
              pool.threads[t]!.postMessage({ id, docs, settings })
            })
        }
      }
    )
  )
