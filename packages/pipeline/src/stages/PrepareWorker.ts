/** A worker thread that runs `prepareBatch` for the `Preparer` pool: one message in, one prepared batch out. */
import { parentPort } from "node:worker_threads"
import { type DocText, prepareBatch, type PrepareSettings } from "./Prepare.ts"

interface Request {
  readonly id: number
  readonly docs: ReadonlyArray<DocText>
  readonly settings: PrepareSettings
}

parentPort?.on("message", (request: Request) => {
  try {
    const batch = prepareBatch(request.docs, request.settings)
    const transfer = [batch.termIds.buffer, batch.termCounts.buffer, ...batch.docs.map((d) => d.deflatedBody.buffer)]
    parentPort!.postMessage({ id: request.id, batch }, transfer as Array<ArrayBuffer>)
  } catch (error) {
    parentPort!.postMessage({ id: request.id, error: error instanceof Error ? error.stack ?? error.message : String(error) })
  }
})
