/**
 * A worker thread of the `Preparer` pool: one message in, one reply out. It prepares batches (a prepared delta out)
 * and, at the end of a run of an index with an approximate vector index, builds vector graphs (their bytes out).
 */
import { parentPort } from "node:worker_threads"
import type { GraphJob } from "../../search/GraphBuild.ts"
import { buffersOf, type DocText, deltaPreparer, type PrepareSettings } from "./Prepare.ts"

interface Request {
  readonly id: number
  readonly docs: ReadonlyArray<DocText>
  readonly settings: PrepareSettings
}

interface GraphRequest {
  readonly id: number
  readonly graph: GraphJob
}

const prepare = deltaPreparer()

/** The graph builder, loaded by the first graph asked for (most runs build none). */
let graphs: Promise<typeof import("../../search/GraphBuild.ts")> | undefined

const buildGraph = async ({ graph, id }: GraphRequest) => {
  try {
    graphs ??= import("../../search/GraphBuild.ts")
    const bytes = (await graphs).buildGraphBytes(graph)
    parentPort!.postMessage({ id, graph: bytes }, [bytes.buffer as ArrayBuffer])
  } catch (error) {
    parentPort!.postMessage({ id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
  }
}

parentPort?.on("message", (request: Request | GraphRequest) => {
  if ("graph" in request) return void buildGraph(request)
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
