/**
 * A tiny Hugging Face model folder for the `local:` tests, written from scratch: an ONNX graph encoded by hand
 * (protobuf), a WordLevel tokenizer.json over a 40-word vocabulary, and config.json. The model looks a token's vector
 * up in an embedding table and zeroes padding: `last_hidden_state = table[input_ids] * attention_mask`, so pooling
 * its output can be checked by hand against `TINY_TABLE`.
 */
import { Effect, FileSystem, Path } from "effect"

// Protobuf's wire format: a field is a key (number << 3 | wire type) then a varint (type 0) or a length and bytes (2).
const varint = (value: number | bigint): Array<number> => {
  let n = BigInt(value)
  if (n < 0n) n += 1n << 64n
  const out: Array<number> = []
  do {
    const low = Number(n & 0x7fn)
    n >>= 7n
    out.push(n > 0n ? low | 0x80 : low)
  } while (n > 0n)
  return out
}
const join = (...parts: ReadonlyArray<ArrayLike<number>>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}
const int = (field: number, value: number | bigint) => join(varint(field << 3), varint(value))
const bytes = (field: number, value: Uint8Array) => join(varint((field << 3) | 2), varint(value.length), value)
const text = (field: number, value: string) => bytes(field, new TextEncoder().encode(value))
const message = (field: number, ...parts: ReadonlyArray<Uint8Array>) => bytes(field, join(...parts))

// ONNX's messages (onnx.proto3): the field numbers used below.
const FLOAT = 1
const INT64 = 7
const ATTRIBUTE_INT = 2
/** TensorProto: dims 1, data_type 2, name 8, raw_data 9 (little-endian). */
const tensor = (field: number, name: string, dims: ReadonlyArray<number>, type: number, raw: Uint8Array) =>
  message(field, ...dims.map((d) => int(1, d)), int(2, type), text(8, name), bytes(9, raw))
/** ValueInfoProto: name 1, type 2 → TypeProto.tensor_type 1 → elem_type 1, shape 2 → dim 1 (dim_value 1, dim_param 2). */
const valueInfo = (field: number, name: string, type: number, dims: ReadonlyArray<number | string>) =>
  message(
    field,
    text(1, name),
    message(
      2,
      message(
        1,
        int(1, type),
        message(2, ...dims.map((d) => message(1, typeof d === "number" ? int(1, d) : text(2, d))))
      )
    )
  )
/** NodeProto: input 1, output 2, op_type 4, attribute 5 (AttributeProto: name 1, i 3, type 20). */
const node = (
  inputs: ReadonlyArray<string>,
  outputs: ReadonlyArray<string>,
  op: string,
  attributes: Readonly<Record<string, number>> = {}
) =>
  message(
    1,
    ...inputs.map((i) => text(1, i)),
    ...outputs.map((o) => text(2, o)),
    text(4, op),
    ...Object.entries(attributes).map(([name, value]) =>
      message(5, text(1, name), int(20, ATTRIBUTE_INT), int(3, value))
    )
  )

/**
 * A model (ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8) whose graph (nodes 1, name 2,
 * initializers 5, inputs 11, outputs 12) takes `input_ids` and `attention_mask` (int64, [batch, sequence]) and gives
 * `last_hidden_state` (float, [batch, sequence, dimensions]): Gather(table, input_ids) × Unsqueeze(Cast(mask)).
 */
export const onnxModel = (table: Float32Array, dimensions: number): Uint8Array => {
  const rows = table.length / dimensions
  const graph = message(
    7,
    node(["table", "input_ids"], ["vectors"], "Gather", { axis: 0 }),
    node(["attention_mask"], ["mask_float"], "Cast", { to: FLOAT }),
    node(["mask_float", "last_axis"], ["mask_column"], "Unsqueeze"),
    node(["vectors", "mask_column"], ["last_hidden_state"], "Mul"),
    text(2, "funcpipe-tiny"),
    tensor(5, "table", [rows, dimensions], FLOAT, new Uint8Array(table.buffer, table.byteOffset, table.byteLength)),
    tensor(5, "last_axis", [1], INT64, new Uint8Array(new BigInt64Array([-1n]).buffer)),
    valueInfo(11, "input_ids", INT64, ["batch", "sequence"]),
    valueInfo(11, "attention_mask", INT64, ["batch", "sequence"]),
    valueInfo(12, "last_hidden_state", FLOAT, ["batch", "sequence", dimensions])
  )
  return join(int(1, 8), text(2, "funcpipe-test"), graph, message(8, text(1, ""), int(2, 13)))
}

/** The special tokens, then words in four topics; a word's topic is the dimension its vector points along. */
export const TINY_VOCABULARY: ReadonlyArray<string> = [
  "[PAD]",
  "[UNK]",
  "[CLS]",
  "[SEP]",
  "sky",
  "star",
  "stars",
  "moon",
  "night",
  "telescope",
  "planet",
  "dark",
  "eyes",
  "galaxy",
  "bread",
  "dough",
  "oven",
  "bake",
  "flour",
  "apple",
  "pear",
  "fruit",
  "orchard",
  "car",
  "engine",
  "brakes",
  "tyres",
  "drive",
  "road",
  "dealer",
  "court",
  "contract",
  "judge",
  "law",
  "ruled",
  "the",
  "a",
  "of",
  "and",
  "in"
]

/** The vector length of the tiny model. */
export const TINY_DIMENSIONS = 8

const TOPICS: ReadonlyArray<readonly [string, string]> = [
  ["sky", "galaxy"],
  ["bread", "orchard"],
  ["car", "dealer"],
  ["court", "ruled"]
]

/**
 * The tiny model's embedding table, `TINY_VOCABULARY.length × TINY_DIMENSIONS`: a topic word is 1 along its topic's
 * dimension (0–3) plus 0.5 along one of the dimensions 4–7 (so words of a topic differ); stop words, [UNK] and the
 * special tokens have small values in 4–7 only; [PAD] is all zeros. Every value is exact in float32.
 */
export const tinyTable = (): Float32Array => {
  const table = new Float32Array(TINY_VOCABULARY.length * TINY_DIMENSIONS)
  TINY_VOCABULARY.forEach((word, id) => {
    const row = id * TINY_DIMENSIONS
    if (id === 0) return
    const topic = TOPICS.findIndex(
      ([first, last]) => id >= TINY_VOCABULARY.indexOf(first) && id <= TINY_VOCABULARY.indexOf(last)
    )
    if (topic >= 0) table[row + topic] = 1
    table[row + 4 + (id % 4)] = topic >= 0 ? 0.5 : 0.125
    if (word === "[CLS]") table[row + 5] = 0.25
  })
  return table
}

/** The tokenizer: lowercase, split at whitespace and punctuation, words looked up (else [UNK]), then [CLS] … [SEP]. */
export const tinyTokenizer = (): object => ({
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: ["[PAD]", "[UNK]", "[CLS]", "[SEP]"].map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true
  })),
  normalizer: { type: "Lowercase" },
  pre_tokenizer: { type: "Whitespace" },
  post_processor: {
    type: "TemplateProcessing",
    single: [
      { SpecialToken: { id: "[CLS]", type_id: 0 } },
      { Sequence: { id: "A", type_id: 0 } },
      {
        SpecialToken: { id: "[SEP]", type_id: 0 }
      }
    ],
    pair: [
      { SpecialToken: { id: "[CLS]", type_id: 0 } },
      { Sequence: { id: "A", type_id: 0 } },
      {
        SpecialToken: { id: "[SEP]", type_id: 0 }
      },
      { Sequence: { id: "B", type_id: 1 } },
      { SpecialToken: { id: "[SEP]", type_id: 1 } }
    ],
    special_tokens: {
      "[CLS]": { id: "[CLS]", ids: [2], tokens: ["[CLS]"] },
      "[SEP]": { id: "[SEP]", ids: [3], tokens: ["[SEP]"] }
    }
  },
  decoder: null,
  model: { type: "WordLevel", vocab: Object.fromEntries(TINY_VOCABULARY.map((w, i) => [w, i])), unk_token: "[UNK]" }
})

/** The longest input the tiny model takes, in tokens ([CLS] and [SEP] included); longer texts are cut. */
export const TINY_MAX_TOKENS = 16

/** The folder's files, by path. `table` replaces the embedding table (to make "other weights"). */
export const tinyModelFiles = (
  options: { readonly table?: Float32Array; readonly layout?: "onnx" | "root" } = {}
): Record<string, Uint8Array | string> => ({
  [options.layout === "root" ? "model.onnx" : "onnx/model.onnx"]: onnxModel(
    options.table ?? tinyTable(),
    TINY_DIMENSIONS
  ),
  "tokenizer.json": JSON.stringify(tinyTokenizer()),
  "tokenizer_config.json": JSON.stringify({
    tokenizer_class: "PreTrainedTokenizerFast",
    model_max_length: TINY_MAX_TOKENS,
    pad_token: "[PAD]",
    unk_token: "[UNK]",
    cls_token: "[CLS]",
    sep_token: "[SEP]"
  }),
  "config.json": JSON.stringify({
    architectures: ["BertModel"],
    model_type: "bert",
    hidden_size: TINY_DIMENSIONS,
    vocab_size: TINY_VOCABULARY.length,
    max_position_embeddings: TINY_MAX_TOKENS
  })
})

/** Writes the tiny model's files into `folder` (made if missing). */
export const writeTinyModel = Effect.fn("writeTinyModel")(function* (
  folder: string,
  options: Parameters<typeof tinyModelFiles>[0] = {}
) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  for (const [name, content] of Object.entries(tinyModelFiles(options))) {
    const file = path.join(folder, name)
    yield* fs.makeDirectory(path.dirname(file), { recursive: true })
    if (typeof content === "string") yield* fs.writeFileString(file, content)
    else yield* fs.writeFile(file, content)
  }
})

/** What the tiny model's mean pooling gives for these token ids, computed from `table`: mean, then length 1. */
export const expectedMean = (ids: ReadonlyArray<number>, table: Float32Array = tinyTable()): Array<number> => {
  const sum = new Array<number>(TINY_DIMENSIONS).fill(0)
  for (const id of ids) for (let d = 0; d < TINY_DIMENSIONS; d++) sum[d]! += table[id * TINY_DIMENSIONS + d]!
  const mean = sum.map((x) => x / ids.length)
  const norm = Math.sqrt(mean.reduce((s, x) => s + x * x, 0))
  return mean.map((x) => x / norm)
}

/** The token ids the tiny tokenizer gives `words` (lowercase, each in the vocabulary or [UNK]), with [CLS] and [SEP]. */
export const tinyIds = (words: ReadonlyArray<string>): Array<number> => [
  2,
  ...words.map((w) => Math.max(TINY_VOCABULARY.indexOf(w.toLowerCase()), 1)),
  3
]
