import { NodeServices } from "@effect/platform-node"
import { answerJson } from "@funcpipe/domain"
import { Embedder, IndexStore, layerSqlite, querySnapshot } from "@funcpipe/pipeline"
import { Effect, Layer, Option } from "effect"
import { prng, syntheticDocs } from "./Corpus.ts"

const random = prng(43)
const texts: Array<string> = []
for (const doc of syntheticDocs(42, 8e6)) {
  const words = doc.body.split(/[^\p{L}]+/u).filter((w) => w.length > 2)
  if (words.length < 3) continue
  const n = 1 + Math.floor(random() * 3)
  const at = Math.floor(random() * (words.length - n))
  texts.push(words.slice(at, at + n).join(" "))
  if (texts.length >= 4000) break
}
const program = Effect.gen(function* () {
  const store = yield* IndexStore
  const snapshot = Option.getOrThrow(yield* store.snapshot)
  for (let round = 0; round < Number(process.argv[2] ?? 4); round++) {
    const start = performance.now()
    let bytes = 0
    for (let i = 0; i < texts.length; i++) {
      const found = yield* querySnapshot(snapshot, "/tmp/lt/index.db", texts[i]!, 10 + (i % 3) * 5, {})
      bytes += JSON.stringify(answerJson(found, {})).length
    }
    console.log(
      `round ${round}: ${(((performance.now() - start) * 1000) / texts.length).toFixed(0)} µs/query, ${(bytes / texts.length) | 0} B`
    )
  }
})
await Effect.runPromise(
  Effect.scoped(program).pipe(
    Effect.provide(
      Layer.mergeAll(layerSqlite("/tmp/lt/index.db"), Embedder.layerLocalSha256).pipe(
        Layer.provideMerge(NodeServices.layer)
      )
    )
  )
)
