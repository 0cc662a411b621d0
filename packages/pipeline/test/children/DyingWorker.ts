/** A preparing thread for the pool test: exits at once on a batch whose first body is "exit", else prepares it. */
import { parentPort } from "node:worker_threads"
import { deltaPreparer } from "../../src/index/prepare/Prepare.ts"

const prepare = deltaPreparer()

parentPort?.on("message", (request: { id: number; docs: Array<{ title: string; body: string }>; settings: never }) => {
  if (request.docs[0]?.body === "exit") process.exit(3)
  parentPort!.postMessage({ id: request.id, delta: prepare(request.docs, request.settings) })
})
