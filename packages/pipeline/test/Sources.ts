/** Document sources and embedders for tests: documents held in memory instead of files, embedders that count. */
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { Effect, Layer, Result, Stream } from "effect"
import { Embedder } from "../src/models/Embedder.ts"
import { DocumentSource } from "../src/read/DocumentSource.ts"

/**
 * A source that reads the given documents (doc id and body, no title) as the records of `file`, whatever paths it is
 * given; each record's line is `lineOf` its index.
 */
const memorySource = (
  docs: ReadonlyArray<readonly [docId: string, body: string]>,
  file: string,
  lineOf: (index: number) => number
) =>
  Layer.succeed(
    DocumentSource,
    DocumentSource.of({
      read: () =>
        Stream.fromIterable(
          docs.map(([docId, body], i) =>
            Result.succeed({
              source: file,
              line: lineOf(i),
              doc: new RawDoc({ docId: DocId.make(docId), title: "", body, categories: null })
            })
          )
        ),
      size: () => Effect.succeed(0)
    })
  )

/** A source that reads one document per body, with doc ids `d0`, `d1`, …, whatever paths it is given. */
export const bodiesSource = (...bodies: ReadonlyArray<string>) =>
  memorySource(
    bodies.map((body, i) => [`d${i}`, body] as const),
    "mem",
    () => 0
  )

/** A source that reads these documents, one per line of `file` (lines 1, 2, …), whatever paths it is given. */
export const docsSource = (docs: ReadonlyArray<readonly [docId: string, body: string]>, file = "mem") =>
  memorySource(docs, file, (i) => i + 1)

/**
 * The `local-sha256` embedder, telling `seen` each batch of texts it embeds. Being another embedder than the
 * reference one, it gets the chunks' texts (the preparing threads do not embed them), so every text passes here.
 */
export const countingEmbedder = (seen: (texts: ReadonlyArray<string>) => void) =>
  Layer.effect(
    Embedder,
    Effect.gen(function* () {
      const local = yield* Embedder
      return Embedder.of({
        ...local,
        embedMany: (texts) => {
          seen(texts)
          return local.embedMany(texts)
        }
      })
    })
  ).pipe(Layer.provide(Embedder.layerLocalSha256))
