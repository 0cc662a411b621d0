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
