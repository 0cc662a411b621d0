/** Boundary service: where the per-document stage runs, on the calling thread or on a pool of worker threads. */

import { availableParallelism } from "node:os"
import type { Worker } from "node:worker_threads"
import { Context, Effect, Layer } from "effect"
import type { GraphJob } from "../../search/GraphBuild.ts"
import { PackWriter } from "../BodyPack.ts"
import {
  type DocText,
  deltaReceiver,
  hashesOf,
  type PreparedBatch,
  type PreparedDelta,
  type PrepareSettings,
  prepareBatch,
  TermNumbering
} from "./Prepare.ts"

export interface Preparer {
  /** How many batches can be prepared at once, so a caller can keep them all busy. */
  readonly concurrency: number
  /** Runs `prepareBatch`; a failure of the stage itself is a defect (a bug), never a user's error. */
  readonly prepare: (docs: ReadonlyArray<DocText>, settings: PrepareSettings) => Effect.Effect<PreparedBatch>
  /**
   * Builds vector graphs on the pool's threads, `threads` at once, while the caller builds others itself: a graph's
   * bytes, or `undefined` when the thread failed (the caller then builds that graph itself). None without threads.
   */
  readonly graphs?: {
    readonly threads: number
    readonly build: (job: GraphJob) => Effect.Effect<Uint8Array | undefined>
  }
}

/** A batch prepared by a thread, or why it could not be. */
interface Result {
  readonly batch?: PreparedBatch | undefined
  readonly error?: string | undefined
}

interface Reply {
  readonly delta?: PreparedDelta
  readonly graph?: Uint8Array
  readonly error?: string
}

/** Runs the stage on the calling thread, with packs made by one writer of its own. */
export const makeInlinePreparer = (): Preparer => {
  const packs = new PackWriter()
  return {
    concurrency: 1,
    prepare: (docs, settings) => Effect.sync(() => prepareBatch(docs, settings, new TermNumbering(), packs))
  }
}

/**
 * Where a launcher leaves a preparing thread it started before the program was loaded: starting one takes ~0.2 s (a
 * new V8 instance, then the stage's modules), which otherwise passes with the writer idle. The CLI launcher starts one
 * for `index`. `failed` is set if the thread errs or exits before a pool takes it.
 */
export const EARLY_WORKER = Symbol.for("funcpipe/early-prepare-worker")

/** What a launcher leaves at `EARLY_WORKER`: the thread, the script it runs, and whether it has failed. */
export interface EarlyWorker {
  readonly script: string
  readonly worker: Worker
  failed: boolean
}

/** The thread a launcher started for `script`, taken once; one for another script, or failed, is ended instead. */
const takeEarlyWorker = (script: URL): Worker | undefined => {
  const holder = globalThis as { [EARLY_WORKER]?: EarlyWorker }
  const early = holder[EARLY_WORKER]
  if (early === undefined) return undefined
  delete holder[EARLY_WORKER]
  if (!early.failed && early.script === script.href) return early.worker
  void early.worker.terminate()
  return undefined
}

/** The preparer in use: inline unless a layer installs the worker pool (the CLI does). */
export const Preparer = Context.Reference<Preparer>("pipeline/Preparer", { defaultValue: makeInlinePreparer })

/**
 * How many batches a thread may have waiting before the caller hashes the documents of its next one itself (for
 * `hashDocs`): a thread with few keeps up with the caller and has time to hash them; with more, it is the slower of
 * the two. Hashing a 210 MB corpus takes about 0.5 s, which neither thread has to spare over a whole run, but the
 * thread runs short of batches now and then (while the caller writes a segment, for one). Sharing the hashing so is
 * slightly faster than always hashing on the caller; limits of 2 to 8 do alike, larger ones worse
 * (docs/decisions/0025-prepare-stage-on-worker-threads.md).
 */
const HASH_BACKLOG = 8

/**
 * How many batches a thread may have waiting before it is asked to leave the packs of the next one uncompressed, for
 * the caller to compress as they come back (`rawPacks`): with that many, the thread is the slower of the two by far.
 * The caller is the slower in the first half of a run (it touches most of its memory for the first time then), and
 * without this would wait for the thread a third of the time in the second half. Limits of 16 to 56 do alike
 * (docs/decisions/0025-prepare-stage-on-worker-threads.md).
 */
const PACK_BACKLOG = 32

/** A delta with its packs compressed by `packs`, if the thread left them uncompressed. */
const compressed = (packs: PackWriter, delta: PreparedDelta): PreparedDelta =>
  delta.flat.rawPacks === true
    ? {
        ...delta,
        flat: { ...delta.flat, packs: delta.flat.packs.map((pack) => packs.compress(pack)), rawPacks: false }
      }
    : delta

/**
 * A pool of `workers` threads running `script` (the `PrepareWorker` module, as source or bundled), each taking batches
 * in order; a batch goes to the least busy thread. Two jobs go to the caller when the thread is behind: hashing a
 * batch's documents (`hashDocs`) once `backlogs.hash` batches or more wait for the thread, and compressing its packs
 * once `backlogs.pack` do (see `HASH_BACKLOG` and `PACK_BACKLOG`, the defaults; tests set both low). Threads start with
 * the first batch (a command that indexes nothing starts none; the first may have been started early by a launcher,
 * see `EARLY_WORKER`) and end when the layer is released. A thread that fails or exits fails the batches it held (as
 * defects) and is replaced for later batches.
 */
export const layerWorkers = (
  script: URL,
  workers = Math.max(1, availableParallelism() - 1),
  backlogs: { readonly hash?: number; readonly pack?: number } = {}
) =>
  Layer.effect(
    Preparer,
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => ({ threads: [] as Array<Worker | undefined> })),
        (pool) => Effect.promise(() => Promise.all(pool.threads.map((t) => t?.terminate())))
      ),
      (pool): Preparer => {
        let next = 0
        // Compresses the packs threads leave raw when they are behind (on this thread).
        const packs = new PackWriter()
        const busy: Array<number> = []
        const pending = new Map<number, { readonly thread: number; readonly done: (result: Result) => void }>()
        const graphsPending = new Map<
          number,
          { readonly thread: number; readonly done: (graph: Uint8Array | undefined) => void }
        >()
        /** Fails every batch held by thread `t` and takes the thread out, so the next batch starts a new one. */
        const lose = (t: number, worker: Worker, reason: string) => {
          if (pool.threads[t] !== worker) return
          pool.threads[t] = undefined
          busy[t] = 0
          const held = [...pending].filter(([, request]) => request.thread === t)
          for (const [id] of held) pending.delete(id)
          for (const [, request] of held) request.done({ error: reason })
          const building = [...graphsPending].filter(([, request]) => request.thread === t)
          for (const [id] of building) graphsPending.delete(id)
          for (const [, request] of building) request.done(undefined)
        }
        const spawn = (t: number): Worker => {
          const early = t === 0 ? takeEarlyWorker(script) : undefined
          const worker =
            early ??
            // A small young generation per thread bounds the memory a pool adds (see the CLI launcher, which starts
            // its early thread with the same limit). Loaded by the first batch, not at every start of the CLI (~5 ms).
            new (process.getBuiltinModule("node:worker_threads").Worker)(script, {
              resourceLimits: { maxYoungGenerationSizeMb: 24 }
            })
          worker.unref()
          // Every delta is received, even one whose batch was forgotten, so the thread's vocabulary stays whole.
          const receive = deltaReceiver()
          worker.on("message", (reply: Reply & { readonly id: number }) => {
            const building = graphsPending.get(reply.id)
            if (building !== undefined) {
              graphsPending.delete(reply.id)
              return building.done(reply.graph)
            }
            const batch = reply.delta === undefined ? undefined : receive(compressed(packs, reply.delta))
            const request = pending.get(reply.id)
            if (request === undefined) return
            pending.delete(reply.id)
            busy[t] = Math.max(0, busy[t]! - 1)
            request.done(
              batch !== undefined || reply.delta === undefined
                ? { batch, error: reply.error }
                : { error: "a preparing thread skipped part of its term numbering" }
            )
          })
          worker.on("error", (error) => lose(t, worker, error.stack ?? error.message))
          worker.on("exit", (code) => lose(t, worker, `a preparing thread exited with code ${code}`))
          pool.threads[t] = worker
          busy[t] = 0
          return worker
        }
        /** How many graphs thread `t` is building. */
        const graphsOn = (t: number) => [...graphsPending.values()].filter((request) => request.thread === t).length
        return {
          // Enough batches in flight that a thread keeps working while the caller writes (synchronously): writing a
          // full segment holds the caller for a few tenths of a second, and 64 batches of 64 documents let the thread
          // work through it (a 210 MB run: 0.4-1.0 s faster than with 16, for 14-21 MB more peak memory).
          concurrency: 64 * workers,
          graphs: {
            // At most three: each graph a thread builds holds two copies of its rows (up to 256 MB each, a full group's).
            threads: Math.min(workers, 3),
            build: (job) =>
              Effect.callback<Uint8Array | undefined>((resume) => {
                let t = 0
                for (let i = 1; i < workers; i++) if (graphsOn(i) < graphsOn(t)) t = i
                const worker = pool.threads[t] ?? spawn(t)
                const id = next++
                // The rows are the thread's once sent (see `GraphBuilder.build`).
                try {
                  worker.postMessage({ id, graph: job }, [job.rows.buffer as ArrayBuffer])
                } catch {
                  return void resume(Effect.succeed(undefined))
                }
                graphsPending.set(id, { thread: t, done: (graph) => resume(Effect.succeed(graph)) })
                return Effect.sync(() => void graphsPending.delete(id))
              })
          },
          prepare: (given, settings) => {
            // Handed over once posted (the thread has a copy), so a batch waiting for its reply holds no bodies.
            const box: { docs: ReadonlyArray<DocText> | undefined } = { docs: given }
            return Effect.callback<PreparedBatch>((resume) => {
              const docs = box.docs
              if (docs === undefined) return void resume(Effect.die(new Error("a batch was sent to prepare twice")))
              box.docs = undefined
              let t = 0
              for (let i = 1; i < workers; i++) if ((busy[i] ?? 0) < (busy[t] ?? 0)) t = i
              const worker = pool.threads[t] ?? spawn(t)
              const id = next++
              // The documents are hashed here when the thread is behind, and its packs compressed here when it is well
              // behind (see `HASH_BACKLOG` and `PACK_BACKLOG`).
              const behind = busy[t] ?? 0
              const hashes =
                settings.hashDocs === true && behind >= (backlogs.hash ?? HASH_BACKLOG) ? hashesOf(docs) : undefined
              const rawPacks = behind >= (backlogs.pack ?? PACK_BACKLOG)
              const sent =
                hashes === undefined && !rawPacks
                  ? settings
                  : { ...settings, hashDocs: settings.hashDocs === true && hashes === undefined, rawPacks }
              busy[t] = behind + 1
              pending.set(id, {
                thread: t,
                done: ({ batch, error }) =>
                  resume(
                    batch === undefined
                      ? Effect.die(new Error(error))
                      : Effect.succeed(hashes === undefined ? batch : { ...batch, flat: { ...batch.flat, hashes } })
                  )
              })
              worker.postMessage({ id, docs, settings: sent })
              // Interrupted: forget the batch (its reply, if any, is dropped).
              return Effect.sync(() => {
                if (pending.delete(id)) busy[t] = Math.max(0, busy[t]! - 1)
              })
            })
          }
        }
      }
    )
  )
