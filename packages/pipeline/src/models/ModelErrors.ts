/**
 * The models' errors: no model by that name, a model that cannot be used here, or a model that failed to embed. One
 * family, with one guard that tells them from anything else.
 */
import { Schema } from "effect"

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

/** Why no embedder could be made for a model name. */
export type ModelChoiceError = UnknownModel | ModelUnavailable

/** The embedding model could not embed a batch (a remote model is down, a text is too long for it, …). */
export class EmbedFailure extends Schema.TaggedError<EmbedFailure>()("EmbedFailure", {
  model: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `the embedding model ${this.model} failed: ${this.reason}`
  }
}

/** Every error of choosing a model and embedding with it. */
export const ModelError = Schema.Union([UnknownModel, ModelUnavailable, EmbedFailure])
export type ModelError = typeof ModelError.Type

/** Whether `u` is one of the models' errors. */
export const isModelError: (u: unknown) => u is ModelError = Schema.is(ModelError)
