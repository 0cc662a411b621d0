/** The OpenAPI document's examples: every one is valid against the schema it illustrates. */
import { assert, describe, it } from "@effect/vitest"
import { BatchResponse, QueryResponse } from "@funcpipe/domain/Answer"
import { AskResponse } from "@funcpipe/domain/Ask"
import { AskRequest, BatchRequest, FuncPipeApi, PutDocumentsRequest, QueryRequest } from "@funcpipe/domain/http/Api"
import { Exit, Schema } from "effect"
import { OpenApi } from "effect/http-api"

/** The schemas with examples, by the name the document gives them. */
const schemas: Record<string, Schema.Top> = {
  QueryRequest,
  BatchRequest,
  PutDocumentsRequest,
  QueryResponse,
  BatchResponse,
  AskRequest,
  AskResponse
}

describe("the OpenAPI document's examples", () => {
  it("decode with the schemas they illustrate, and every schema the API takes or gives has one", () => {
    const doc = JSON.parse(JSON.stringify(OpenApi.fromApi(FuncPipeApi)))
    const components = doc.components.schemas as Record<string, { examples?: ReadonlyArray<unknown> }>
    const withExamples = Object.entries(components).filter(([, schema]) => schema.examples !== undefined)
    for (const [name, schema] of withExamples) {
      const own = schemas[name]
      assert.isDefined(own, `${name} has examples: check them here`)
      for (const example of schema.examples!) {
        const decoded = Schema.decodeUnknownExit(own as Schema.Codec<unknown, unknown>)(example)
        assert.isTrue(Exit.isSuccess(decoded), `${name}: ${JSON.stringify(example)}\n${String(decoded)}`)
      }
    }
    for (const name of [
      "QueryRequest",
      "BatchRequest",
      "PutDocumentsRequest",
      "QueryResponse",
      "AskRequest",
      "AskResponse"
    ]) {
      assert.isAbove(components[name]?.examples?.length ?? 0, 0, `${name} has an example`)
    }
  })
})
