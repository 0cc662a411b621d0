/** Embedding vectors and the label of the model that produced them. */
import { Schema } from "effect"

/** Names an embedding model, e.g. `local-sha256`; stored with an index and checked at query time. */
export const ModelLabel = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/, {
    message: "a model label is letters, digits and . _ : / @ -, starting with a letter or digit"
  })
).pipe(Schema.brand("ModelLabel"))
export type ModelLabel = typeof ModelLabel.Type

/** A vector component: any finite float64. */
export const Component = Schema.Finite

/** A non-empty vector of finite components, tagged with the model that made it. */
export class Embedding extends Schema.Class<Embedding>("domain/Embedding")({
  vector: Schema.NonEmptyArray(Component),
  model: ModelLabel
}) {}
