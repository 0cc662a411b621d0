/** Document sources for tests: documents held in memory instead of files. */
import { DocId, RawDoc } from "@funcpipe/domain/Document"
import { Effect, Layer, Result, Stream } from "effect"
import { DocumentSource } from "../src/services/DocumentSource.ts"

/** A source that reads one document per body, with doc ids `d0`, `d1`, …, whatever paths it is given. */
export const bodiesSource = (...bodies: ReadonlyArray<string>) =>
  Layer.succeed(
    DocumentSource,
    DocumentSource.of({
      read: () =>
        Stream.fromIterable(
          bodies.map((body, i) =>
            Result.succeed({
              source: "mem",
              line: 0,
              doc: new RawDoc({ docId: DocId.make(`d${i}`), title: "", body, categories: null })
            })
          )
        ),
      size: () => Effect.succeed(0)
    })
  )
