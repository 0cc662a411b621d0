/** The contract between the model catalogue and each family of models, and the errors of picking a model. */
import type { Effect } from "effect"
import { Schema } from "effect"
import type { Embedder } from "./Embedder.ts"

/** The names a user can give, for messages and `--help`. */
export const MODEL_NAMES =
  "local-sha256, glove-100d, openai:<model> (any OpenAI-compatible service), local:<folder> (a Hugging Face ONNX model)"

/** No model goes by that name. */
export class UnknownModel extends Schema.TaggedError<UnknownModel>()("UnknownModel", {
  name: Schema.String
}) {
  override get message(): string {
    return `there is no embedding model called "${this.name}"; the models are ${MODEL_NAMES}`
  }
}

/** The model exists but cannot be used here (its files are not installed, a setting is missing, …). */
export class ModelUnavailable extends Schema.TaggedError<ModelUnavailable>()("ModelUnavailable", {
  model: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `the embedding model ${this.model} cannot be used: ${this.reason}`
  }
}

/** What a provider makes: an embedder, or why it cannot. */
export type ModelError = UnknownModel | ModelUnavailable

/**
 * A family of models: `name` is the whole model name (`glove-100d`) or, for a family (`openai:`), what follows the
 * prefix. Returns `undefined` when the name is not one of its models.
 */
export type Provider = (name: string) => Effect.Effect<Embedder["Service"], ModelUnavailable> | undefined
