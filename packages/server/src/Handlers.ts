/** The API's handlers: a few lines each over the pipeline's programs, answering from the `LiveIndex` snapshot. */

import { answerJson, manifestJson } from "@funcpipe/domain/Answer"
import { B, Bm25Params, FusionConfig, K1 } from "@funcpipe/domain/Config"
import { joinLabels, RawDoc } from "@funcpipe/domain/Document"
import {
  FuncPipeApi,
  IndexUnavailable,
  InvalidRequest,
  type QueryRequest,
  SourcesOff,
  WritesDisabled
} from "@funcpipe/domain/http/Api"
import { DEFAULT_TOP_K } from "@funcpipe/domain/Query"
import { highlightSpans } from "@funcpipe/pipeline/analysis/Highlight"
import { cutPassage } from "@funcpipe/pipeline/analysis/Passage"
import { Embedder } from "@funcpipe/pipeline/models/Embedder"
import { deleteDocuments, putDocuments } from "@funcpipe/pipeline/programs/DocumentWrites"
import { querySnapshot } from "@funcpipe/pipeline/programs/QueryIndex"
import { defaultExpansion } from "@funcpipe/pipeline/search/Expansion"
import { IndexStore, readSnapshot, type Snapshot } from "@funcpipe/pipeline/store/IndexStore"
import { Effect, Layer, Option, Path, Result, Schema, Semaphore } from "effect"
import type { LanguageModel } from "effect/ai"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { RequestDetails } from "./AccessLog.ts"
import { AnswersHandlers } from "./AskHandlers.ts"
import { apiError, isApiError, notFound, type PipelineError } from "./Failures.ts"
import { LiveIndex, type Loaded } from "./LiveIndex.ts"

export { PIPELINE_STATUS } from "./Failures.ts"

/** What the handlers need to know about how the server was started. */
export interface HandlerOptions {
  /** The chat model `POST /v1/ask` answers with (`serve --llm`); without one, it answers 501. */
  readonly chat?: Layer.Layer<LanguageModel.LanguageModel> | undefined
  /** Whether `PUT`/`DELETE /v1/documents` may change the index. */
  readonly writable: boolean
  /** Whether `GET /v1/documents/{id}/text` hands out documents' text (`serve --link-sources`). */
  readonly linkSources?: boolean
}

const answer = (loaded: Loaded, location: string, request: QueryRequest) =>
  Effect.map(
    querySnapshot(loaded.snapshot, location, request.text, request.top_k ?? DEFAULT_TOP_K, {
      ...(request.mode === undefined ? {} : { mode: request.mode }),
      ...(request.group === undefined ? {} : { group: request.group }),
      ...(request.where === undefined ? {} : { where: request.where }),
      ...(request.expand === undefined ? {} : { expand: defaultExpansion(request.expand) }),
      ...(request.exact === true ? { exact: true } : {}),
      ...(request.ann_candidates === undefined ? {} : { annCandidates: request.ann_candidates }),
      fusion: FusionConfig.of(request.fusion, request.alpha),
      explain: request.explain === true,
      bm25:
        request.k1 === undefined && request.b === undefined
          ? Bm25Params.default
          : new Bm25Params({
              k1: request.k1 ?? K1.make(Bm25Params.default.k1),
              b: request.b ?? B.make(Bm25Params.default.b)
            })
    }),
    (found) => {
      const analyzer = loaded.snapshot.manifest.analyzer
      const highlight = request.highlight === true
      const width = request.passage_width
      const marked = (text: string) => highlightSpans(text, found.query.terms, analyzer)
      // A passage is cut around its matches (however it is asked to be marked), and marked only when asked.
      const passages =
        highlight || width !== undefined
          ? (found.shown ?? []).map(({ passage }) => {
              const cut =
                width === undefined
                  ? { text: passage, spans: marked(passage) }
                  : cutPassage(passage, marked(passage), width)
              return { text: cut.text, spans: highlight ? cut.spans : undefined }
            })
          : undefined
      return answerJson(found, {
        highlights: highlight ? found.results.map((r) => marked(r.chunk.text)) : undefined,
        passages
      })
    }
  )

const iso = (millis: number) => new Date(millis).toISOString()

/** The search group: one query, or many from one snapshot. */
export const SearchHandlers = HttpApiBuilder.group(
  FuncPipeApi,
  "search",
  Effect.fn(function* (handlers) {
    const live = yield* LiveIndex
    const embedder = yield* Embedder
    const path = yield* Path.Path
    return handlers
      .handle("query", ({ payload }) =>
        live
          .use((loaded) => answer(loaded, live.location, payload))
          .pipe(
            Effect.mapError((e) => apiError(e)),
            // What the access log says of the query (its text only with --log-queries).
            Effect.tap((body) =>
              Effect.map(Effect.serviceOption(RequestDetails), (details) => {
                if (Option.isNone(details)) return
                details.value.mode = body.mode
                details.value.results = body.results.length
                details.value.query = payload.text
              })
            ),
            // `answerJson` builds exactly the `QueryResponse` type, so it is written as it is rather than encoded again
            // through the schema (a measurable share of a query's time under load).
            Effect.map((body) => HttpServerResponse.jsonUnsafe(body)),
            Effect.provideService(Embedder, embedder),
            Effect.provideService(Path.Path, path)
          )
      )
      .handle("batch", ({ payload }) =>
        live
          .use((loaded) =>
            Effect.forEach(payload.queries, (query, i) =>
              answer(loaded, live.location, query).pipe(Effect.mapError((e) => apiError(e, `queries[${i}]`)))
            )
          )
          .pipe(
            Effect.mapError((e) => (isApiError(e) ? e : apiError(e))),
            Effect.map((answers) => HttpServerResponse.jsonUnsafe({ answers })),
            Effect.provideService(Embedder, embedder),
            Effect.provideService(Path.Path, path)
          )
      )
  })
)

/** The index group: what is served, and stored documents. */
export const IndexHandlers = (options: HandlerOptions) =>
  HttpApiBuilder.group(
    FuncPipeApi,
    "index",
    Effect.fn(function* (handlers) {
      const live = yield* LiveIndex
      /** What the served snapshot holds of document `id`, or `DocumentNotFound`; a store failure is `IndexUnavailable`. */
      const stored = <A>(id: string, read: (snapshot: Snapshot) => A | undefined) =>
        live
          .use((loaded) => readSnapshot(live.location, () => read(loaded.snapshot)))
          .pipe(
            Effect.mapError((e) => new IndexUnavailable({ message: e.message, reason: e._tag })),
            Effect.flatMap((found) => (found === undefined ? Effect.fail(notFound(id)) : Effect.succeed(found)))
          )
      return handlers
        .handle("status", () =>
          Effect.map(live.state, ({ failure, loaded }) => ({
            index: live.location,
            ready: loaded !== undefined,
            writable: options.writable,
            link_sources: options.linkSources === true,
            ask: options.chat !== undefined,
            manifest: loaded === undefined ? null : manifestJson(loaded.snapshot.manifest),
            snapshot_at: loaded === undefined ? null : iso(loaded.loadedAt),
            reload_error: failure === undefined ? null : { at: iso(failure.at), message: failure.error.message }
          }))
        )
        .handle("document", ({ params }) =>
          Effect.map(
            stored(params.id, (snapshot) => snapshot.document(params.id)),
            (found) => ({
              doc_id: found.doc.docId,
              title: found.doc.title,
              source: found.doc.source,
              categories: found.doc.categories,
              hash: found.doc.hash,
              chunks: found.chunks
            })
          )
        )
        .handle("text", ({ params }) =>
          options.linkSources === true
            ? Effect.map(
                stored(params.id, (snapshot) => snapshot.documentText(params.id)),
                (text) => text.original ?? text.cleaned
              )
            : Effect.fail(
                new SourcesOff({
                  message: "this server does not hand out documents' text; start it with --link-sources to allow it"
                })
              )
        )
    })
  )

const decodeRawDoc = Schema.decodeUnknownResult(RawDoc)

/** The documents group: changes through the index run's stages and transaction, only with `writable`. */
export const DocumentsHandlers = (options: HandlerOptions) =>
  HttpApiBuilder.group(
    FuncPipeApi,
    "documents",
    Effect.fn(function* (handlers) {
      const live = yield* LiveIndex
      const store = yield* IndexStore
      const embedder = yield* Embedder
      // SQLite waits for another writer by blocking the thread, so this process's writes queue here instead.
      const writes = yield* Semaphore.make(1)
      const refused = Effect.fail(
        new WritesDisabled({
          message: "this server does not change the index; start it with --writable to allow PUT and DELETE"
        })
      )
      const write = <A, E extends PipelineError>(program: Effect.Effect<A, E, IndexStore | Embedder>) =>
        writes
          .withPermits(1)(program)
          .pipe(
            Effect.provideService(IndexStore, store),
            Effect.provideService(Embedder, embedder),
            // The answer reflects the change: later requests are answered from the new state.
            Effect.tap(() => live.refresh)
          )
      return handlers
        .handle("put", ({ payload }) =>
          Effect.gen(function* () {
            if (!options.writable) return yield* refused
            const docs: Array<RawDoc> = []
            const seen = new Set<string>()
            for (const [i, input] of payload.documents.entries()) {
              if (seen.has(input.doc_id)) {
                return yield* new InvalidRequest({
                  message: `the doc id ${JSON.stringify(input.doc_id)} is given twice`,
                  issues: [{ path: `documents[${i}].doc_id`, message: "given twice" }]
                })
              }
              seen.add(input.doc_id)
              const decoded = decodeRawDoc({
                docId: input.doc_id,
                title: input.title ?? "",
                body: input.text,
                // A list of labels is stored as JSONL input's list is: the text `labelsOf` splits back into them.
                categories:
                  input.categories === undefined || input.categories === null
                    ? null
                    : typeof input.categories === "string"
                      ? input.categories
                      : joinLabels(input.categories)
              })
              if (Result.isFailure(decoded)) {
                const message = decoded.failure.message.split("\n")[0] ?? "invalid document"
                return yield* new InvalidRequest({
                  message: `invalid document ${JSON.stringify(input.doc_id)}: ${message}`,
                  issues: [{ path: `documents[${i}]`, message }]
                })
              }
              docs.push(decoded.success)
            }
            const report = yield* write(putDocuments(docs, "api")).pipe(Effect.mapError((e) => apiError(e)))
            return {
              added: report.added,
              updated: report.updated,
              unchanged: report.unchanged,
              skipped: report.skipped.map((s) => ({ doc_id: s.docId, reason: s.reason })),
              chunks_written: report.chunksWritten,
              documents: report.documents,
              chunks: report.chunks
            }
          })
        )
        .handle("delete", ({ params }) =>
          Effect.gen(function* () {
            if (!options.writable) return yield* refused
            const report = yield* write(deleteDocuments([params.id])).pipe(
              Effect.mapError((e) => {
                const mapped = apiError(e)
                // A delete has no query input, so nothing of it can be the caller's mistake.
                return mapped instanceof InvalidRequest
                  ? new IndexUnavailable({ message: e.message, reason: e._tag })
                  : mapped
              })
            )
            if (report.deleted.length === 0) {
              return yield* notFound(params.id)
            }
            return { deleted: params.id, documents: report.documents, chunks: report.chunks }
          })
        )
    })
  )

/** The system group: liveness, and readiness (an index loaded to answer from). */
export const SystemHandlers = HttpApiBuilder.group(
  FuncPipeApi,
  "system",
  Effect.fn(function* (handlers) {
    const live = yield* LiveIndex
    return handlers
      .handle("health", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () =>
        Effect.flatMap(live.state, ({ failure, loaded }) =>
          loaded !== undefined
            ? Effect.succeed({ status: "ready" as const, snapshot_at: iso(loaded.loadedAt) })
            : Effect.fail(
                new IndexUnavailable({
                  message: failure?.error.message ?? "no index is loaded yet",
                  reason: failure?.error._tag ?? "IndexMissing"
                })
              )
        )
      )
  })
)

/** Every group's handlers. */
export const handlersLayer = (options: HandlerOptions) =>
  Layer.mergeAll(
    SearchHandlers,
    options.chat === undefined ? AnswersHandlers : Layer.provide(AnswersHandlers, options.chat),
    IndexHandlers(options),
    DocumentsHandlers(options),
    SystemHandlers
  )
