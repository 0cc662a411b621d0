/** Embedders for tests: a model label and a function from a text to its vector, with nothing else to say. */

import { Embedding, ModelLabel } from "@funcpipe/domain/Embedding"
import { Effect } from "effect"
import { Embedder } from "../src/models/Embedder.ts"

/** An embedder named `label` whose vector of a text is `vectorOf(text)` (`dimensions` components). */
export const testEmbedder = (
  label: string,
  dimensions: number,
  vectorOf: (text: string) => ReadonlyArray<number>
): Embedder["Service"] =>
  Embedder.of({
    model: ModelLabel.make(label),
    dimensions,
    fingerprint: "test",
    usage: Effect.succeed({ requests: 0, inputTokens: undefined }),
    embedMany: (texts) =>
      Effect.succeed(
        texts.map(
          (text) =>
            new Embedding({
              vector: vectorOf(text) as [number, ...Array<number>],
              model: ModelLabel.make(label)
            })
        )
      )
  })
