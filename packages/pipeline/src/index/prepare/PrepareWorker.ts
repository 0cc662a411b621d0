/** A worker thread that prepares batches for the `Preparer` pool: one message in, one prepared delta out. */
import { parentPort } from "node:worker_threads"
import { buffersOf, type DocText, deltaPreparer, type PrepareSettings } from "./Prepare.ts"

interface Request {
  readonly id: number
  readonly docs: ReadonlyArray<DocText>
  readonly settings: PrepareSettings
}

const prepare = deltaPreparer()

parentPort?.on("message", (request: Request) => {
  try {
    const delta = prepare(request.docs, request.settings)
    const transfer = [delta.termIds.buffer, delta.termCounts.buffer, ...buffersOf(delta.flat)]
    parentPort!.postMessage({ id: request.id, delta }, transfer as Array<ArrayBuffer>)
  } catch (error) {
    parentPort!.postMessage({
      id: request.id,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error)
    })
  }
})
