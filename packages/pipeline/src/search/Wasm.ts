/**
 * What the hand-written WebAssembly kernels share (`CodedScan`, `FloatScan`): the binary format's numbers and
 * sections, and the part of the WebAssembly API they use (the project's TypeScript libraries do not declare it).
 */

/** An unsigned LEB128 number, as the binary format writes sizes, counts and SIMD opcodes. */
export const unsigned = (value: number): Array<number> => {
  const bytes: Array<number> = []
  let rest = value
  do {
    const low = rest & 0x7f
    rest >>>= 7
    bytes.push(rest === 0 ? low : low | 0x80)
  } while (rest !== 0)
  return bytes
}

export const section = (id: number, bytes: ReadonlyArray<number>): Array<number> => [
  id,
  ...unsigned(bytes.length),
  ...bytes
]

export const name = (text: string): Array<number> => [
  ...unsigned(text.length),
  ...[...text].map((c) => c.charCodeAt(0))
]

export const get = (local: number): Array<number> => [0x20, local]
export const set = (local: number): Array<number> => [0x21, local]
/** `i32.const` of a small non-negative number (one LEB128 byte: below 64). */
export const i32 = (value: number): Array<number> => [0x41, value]

/* SIMD and control flow, as the kernels write them. */

export const simd = (op: number): Array<number> => [0xfd, ...unsigned(op)]
/** `v128.load` at the address on the stack plus `offset` (alignment hint: 4 bytes). */
export const load = (offset: number): Array<number> => [...simd(0x00), 2, ...unsigned(offset)]
export const ADD = simd(0xe4) // f32x4.add
export const MUL = simd(0xe6) // f32x4.mul
export const lane = (i: number): Array<number> => [...simd(0x1f), i] // f32x4.extract_lane
export const ZERO = [...simd(0x0c), ...new Array<number>(16).fill(0)] // v128.const 0
export const f32 = (value: number): Array<number> => {
  const bytes = new Uint8Array(4)
  new DataView(bytes.buffer).setFloat32(0, value, true)
  return [0x43, ...bytes]
}
/** `local += step` for an i32 local (step below 128). */
export const bump = (local: number, step: number): Array<number> => [
  ...get(local),
  0x41,
  ...(step < 64 ? [step] : [step | 0x80, 0]),
  0x6a,
  ...set(local)
]
/** `block loop; br_if 1 (local >= limit)` … `br 0 end end`. */
export const loop = (local: number, limit: number, body: ReadonlyArray<number>): Array<number> => [
  ...[0x02, 0x40, 0x03, 0x40],
  ...get(local),
  ...get(limit),
  ...[0x4f, 0x0d, 1],
  ...body,
  ...[0x0c, 0, 0x0b, 0x0b]
]
/** The lanes of a v128 local added as (0 + 1) + (2 + 3), in float32. */
export const lanes = (local: number): Array<number> => [
  ...get(local),
  ...lane(0),
  ...get(local),
  ...lane(1),
  0x92,
  ...get(local),
  ...lane(2),
  ...get(local),
  ...lane(3),
  ...[0x92, 0x92]
]

/** A module's whole bytes: the header, then its sections. */
export const moduleOf = (...sections: ReadonlyArray<ReadonlyArray<number>>): Uint8Array =>
  new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...sections.flat()])

export interface WasmMemory {
  readonly buffer: ArrayBuffer
  grow(pages: number): number
}

interface WasmApi {
  readonly Module: new (bytes: Uint8Array) => object
  readonly Instance: new (module: object) => { readonly exports: Record<string, unknown> }
}

/** Stored vectors are read in the machine's byte order; WebAssembly reads little-endian. */
const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

/**
 * A compiled module's factory of instances (each with a memory of its own), or `null` where WebAssembly cannot be used
 * (none, a big-endian machine, or an engine that refuses the module).
 */
export const compiled = (bytes: Uint8Array): (() => Record<string, unknown>) | null => {
  try {
    const wasm = (globalThis as { readonly WebAssembly?: WasmApi }).WebAssembly
    if (!littleEndian || wasm === undefined) return null
    const module = new wasm.Module(bytes)
    return () => new wasm.Instance(module).exports
  } catch {
    return null
  }
}

/** Grows `memory` to hold at least `bytes` bytes. */
export const reserve = (memory: WasmMemory, bytes: number): void => {
  if (memory.buffer.byteLength < bytes) memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / 65_536))
}
