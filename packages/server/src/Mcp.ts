/**
 * FuncPipe as an MCP server for agents: the `search`, `read` and `status` tools (and `ask`, given a chat model) over
 * the `LiveIndex`, registered on `effect/ai`'s `McpServer`, served over stdio (`funcpipe mcp`) or at `/mcp` on
 * `serve` (streamable HTTP). Over stdio, stdout carries the protocol alone: reports go to stderr.
 */

import { answerJson, manifestJson } from "@funcpipe/domain/Answer"
import { askJson } from "@funcpipe/domain/Ask"
import { AskTools, FuncPipeTools, MAX_READ_CHARS, type ReadResponse, ToolFailure } from "@funcpipe/domain/http/Tools"
import { chunkViewer } from "@funcpipe/pipeline/analysis/Display"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { describe } from "@funcpipe/pipeline/models/openai/OpenAiFailures"
import { completeAnswer } from "@funcpipe/pipeline/programs/Answer"
import { querySnapshot } from "@funcpipe/pipeline/programs/QueryIndex"
import { readSnapshot, type Snapshot } from "@funcpipe/pipeline/store/IndexStore"
import { Clock, Effect, Layer, Path, Result } from "effect"
import { LanguageModel, McpProtocol, McpServer } from "effect/ai"
import { questionPreparer } from "./AskHandlers.ts"
import { LiveIndex } from "./LiveIndex.ts"

/** The protocol revisions offered: those of current desktop agents and the official SDK. */
const protocols = [McpProtocol.v2025_06_18, McpProtocol.v2025_11_25] as const

/** How many chunks `search` gives unless asked. */
const DEFAULT_TOOL_TOP_K = 5

const failure = (error: { readonly _tag: string; readonly message: string }) =>
  new ToolFailure({ message: error.message, reason: error._tag })

/** What the `read` tool is asked. */
interface ReadParams {
  readonly doc_id: string
  readonly start?: number
  readonly end?: number
  readonly neighbours?: number
}

/** The `read` tool's answer from a snapshot, or why there is none; whole documents only when `whole` allows. */
const readDocument = (
  snapshot: Snapshot,
  params: ReadParams,
  whole: boolean
): Result.Result<typeof ReadResponse.Type, ToolFailure> => {
  const stored = snapshot.document(params.doc_id)
  const text = snapshot.documentText(params.doc_id)
  if (stored === undefined || text === undefined) {
    return Result.fail(
      new ToolFailure({
        message: `there is no document ${JSON.stringify(params.doc_id)} in the index; search gives the ids it holds`,
        reason: "DocumentNotFound"
      })
    )
  }
  const head = {
    doc_id: stored.doc.docId,
    title: stored.doc.title,
    source: stored.doc.source,
    categories: stored.doc.categories,
    chunk_count: stored.chunks.length
  }
  if (params.start === undefined && params.end === undefined) {
    if (!whole) {
      return Result.fail(
        new ToolFailure({
          message:
            "this server does not hand out whole documents (start it with --link-sources to allow it); give a " +
            "search result's start and end to read the chunks there",
          reason: "SourcesOff"
        })
      )
    }
    const written = text.original ?? text.cleaned
    let cut = Math.min(written.length, MAX_READ_CHARS)
    // Never half of a surrogate pair.
    if (cut < written.length && /[\uD800-\uDBFF]/.test(written.charAt(cut - 1))) cut--
    return Result.succeed({ ...head, chunks: [], text: written.slice(0, cut), truncated: cut < written.length })
  }
  const start = params.start ?? Math.max(0, params.end! - 1)
  const end = params.end ?? params.start! + 1
  if (end <= start) {
    return Result.fail(
      new ToolFailure({
        message: `the span [${start}, ${end}) is empty: end must be above start`,
        reason: "InvalidSpan"
      })
    )
  }
  const hit = stored.chunks.flatMap((c, i) => (c.end > start && c.start < end ? [i] : []))
  if (hit.length === 0) {
    const last = stored.chunks.at(-1)?.end ?? 0
    return Result.fail(
      new ToolFailure({
        message: `no chunk of ${JSON.stringify(params.doc_id)} covers [${start}, ${end}); its chunks span [0, ${last})`,
        reason: "InvalidSpan"
      })
    )
  }
  const around = params.neighbours ?? 1
  const from = Math.max(0, hit[0]! - around)
  const to = Math.min(stored.chunks.length, hit.at(-1)! + around + 1)
  const view = chunkViewer(text, snapshot.manifest.cleaner)
  const chunks = stored.chunks
    .slice(from, to)
    .map((c) => ({ start: c.start, end: c.end, text: view(c.start, c.end).passage }))
  return Result.succeed({ ...head, chunks, text: null, truncated: false })
}

/** The handlers of `search`, `read` and `status`, over the `LiveIndex`; `read` gives whole documents if `whole`. */
const toolsLayer = (whole: boolean) =>
  FuncPipeTools.toLayer(
    Effect.gen(function* () {
      const live = yield* LiveIndex
      const embedder = yield* Embedder
      const path = yield* Path.Path
      return {
        search: (params) =>
          live
            .use((loaded) =>
              Effect.map(
                querySnapshot(loaded.snapshot, live.location, params.query, params.top_k ?? DEFAULT_TOOL_TOP_K, {
                  ...(params.mode === undefined ? {} : { mode: params.mode }),
                  ...(params.where === undefined ? {} : { where: params.where })
                }),
                (found) => answerJson(found)
              )
            )
            .pipe(
              Effect.mapError(failure),
              Effect.provideService(Embedder, embedder),
              Effect.provideService(Path.Path, path)
            ),
        read: (params) =>
          live
            .use((loaded) => readSnapshot(live.location, () => readDocument(loaded.snapshot, params, whole)))
            .pipe(
              Effect.flatMap(Effect.fromResult),
              Effect.mapError((e) => (e instanceof ToolFailure ? e : failure(e)))
            ),
        status: () =>
          Effect.map(live.state, ({ loaded }) => ({
            index: live.location,
            manifest: loaded === undefined ? null : manifestJson(loaded.snapshot.manifest),
            snapshot_at: loaded === undefined ? null : new Date(loaded.loadedAt).toISOString()
          }))
      }
    })
  )

/** The `ask` tool's handler, with the chat model it answers with. */
const askLayer = AskTools.toLayer(
  Effect.gen(function* () {
    const prepare = yield* questionPreparer
    const model = yield* LanguageModel.LanguageModel
    return {
      ask: (params) =>
        Effect.gen(function* () {
          const started = yield* Clock.currentTimeMillis
          const { prompt } = yield* prepare(params.question, params).pipe(Effect.mapError(failure))
          const answered = yield* completeAnswer(prompt).pipe(
            Effect.provideService(LanguageModel.LanguageModel, model),
            Effect.mapError((e) => new ToolFailure({ message: describe(e), reason: e.reason._tag }))
          )
          const now = yield* Clock.currentTimeMillis
          return askJson({ question: params.question, ...answered, sources: prompt.sources, millis: now - started })
        })
    }
  })
)

/** How the MCP servers are made. */
export interface McpOptions {
  readonly version: string
  /** The chat model of the `ask` tool; without one, there is no `ask`. */
  readonly chat?: Layer.Layer<LanguageModel.LanguageModel> | undefined
  /** Whether `read` hands out whole documents as written (`serve --link-sources`; always over stdio). */
  readonly wholeDocuments: boolean
}

/** The tools' registrations: `search`, `read`, `status`, and `ask` when a chat model is given. */
export const registrations = ({ chat, wholeDocuments }: McpOptions) =>
  chat === undefined
    ? McpServer.toolkit(FuncPipeTools).pipe(Layer.provide(toolsLayer(wholeDocuments)))
    : Layer.merge(
        McpServer.toolkit(FuncPipeTools).pipe(Layer.provide(toolsLayer(wholeDocuments))),
        McpServer.toolkit(AskTools).pipe(Layer.provide(askLayer), Layer.provide(chat))
      )

const info = (version: string) => ({
  name: "funcpipe",
  version,
  instructions:
    "Search a FuncPipe index of the user's documents: `search` finds passages, `read` shows more of a document, " +
    "`status` says what the index holds. Cite what you use by doc_id."
})

/** The MCP server over stdio; needs `Stdio`, the `LiveIndex` and the index's `Embedder`. */
export const layerStdio = (options: McpOptions) =>
  McpServer.layerStdio({ ...info(options.version), protocols, registrations: registrations(options) })

/** The MCP server at `/mcp` of an `HttpRouter` (streamable HTTP); needs the `LiveIndex` and the index's `Embedder`. */
export const layerHttp = (options: McpOptions) =>
  McpServer.layerHttp({ ...info(options.version), path: "/mcp", protocols, registrations: registrations(options) })
