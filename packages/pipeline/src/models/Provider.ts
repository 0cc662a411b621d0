/** The contract between the model catalogue and each family of models. */
import type { Effect } from "effect"
import type { Embedder } from "./Embedder.ts"
import type { ModelUnavailable } from "./ModelErrors.ts"

/**
 * A family of models: `name` is the whole model name (`glove-100d`) or, for a family (`openai:`), what follows the
 * prefix. Returns `undefined` when the name is not one of its models.
 */
export type Provider = (name: string) => Effect.Effect<Embedder["Service"], ModelUnavailable> | undefined
