/**
 * `npm run bench:synthetic-embeddings -- [--port 7811] [--dims 384] [--clusters 512] [--seed 42]`: an OpenAI-compatible
 * `/v1/embeddings` service on 127.0.0.1 that gives each text a seeded vector (a cluster centre chosen by the text's
 * hash, plus noise drawn from the same hash), so a real `funcpipe index --model openai:synthetic` can build an index
 * of any size and dimension on a machine without a large model, as the benchmark sets of issue 34 ask (1M × 384).
 */
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import { parseArgs } from "node:util"
import { prng } from "./Corpus.ts"

const { values: flags } = parseArgs({
  options: {
    port: { type: "string", default: "7811" },
    dims: { type: "string", default: "384" },
    clusters: { type: "string", default: "512" },
    seed: { type: "string", default: "42" }
  }
})
const D = Number(flags.dims)
const CLUSTERS = Number(flags.clusters)
const centreRandom = prng(Number(flags.seed))
const centres = Array.from({ length: CLUSTERS }, () => Float64Array.from({ length: D }, () => centreRandom() * 2 - 1))

/** A text's vector: its cluster's centre plus noise a third its size, both from the text's SHA-256. */
const vectorOf = (text: string): string => {
  const digest = createHash("sha256").update(text, "utf8").digest()
  const random = prng(digest.readUInt32LE(0))
  const centre = centres[digest.readUInt32LE(4) % CLUSTERS]!
  const parts = new Array<string>(D)
  for (let i = 0; i < D; i++) parts[i] = (centre[i]! + (random() * 2 - 1) / 3).toFixed(5)
  return `[${parts.join(",")}]`
}

const server = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { input: string | Array<string> }
      const inputs = typeof body.input === "string" ? [body.input] : body.input
      const data = inputs.map((text, index) => `{"object":"embedding","index":${index},"embedding":${vectorOf(text)}}`)
      res.writeHead(200, { "content-type": "application/json" })
      res.end(
        `{"object":"list","model":"synthetic","data":[${data.join(",")}],"usage":{"prompt_tokens":0,"total_tokens":0}}`
      )
    } catch (error) {
      res.writeHead(400, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: String(error) } }))
    }
  })
})
server.listen(Number(flags.port), "127.0.0.1", () => {
  console.error(`synthetic embeddings (${D} dimensions, ${CLUSTERS} clusters) on http://127.0.0.1:${flags.port}/v1`)
})
