/**
 * The inner loop of the quantised first pass: integer dot products of one int16 query with many
 * int8 codes, in WebAssembly SIMD (`i32x4.dot_i16x8_s`, in every Node version Trellis supports),
 * or in plain JavaScript where SIMD is not available. Both compute the same exact integer sums.
 *
 * The module is assembled here from its instructions (a few dozen bytes) rather than shipped as a
 * binary, so what runs is readable below. Its one function:
 *
 *   dots(codes, query, out, count, blocks)
 *     for each of `count` vectors: the sum over `blocks` × 16 lanes of code[i8] × query[i16],
 *     written as an i32 to out; codes advance 16 bytes a block, the query 32 bytes a block.
 */

const SIMD = 0xfd;
const op = {
  block: 0x02,
  loop: 0x03,
  end: 0x0b,
  brIf: 0x0d,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  i32Store: 0x36,
  i32Const: 0x41,
  i32Eqz: 0x45,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  void: 0x40,
};
// SIMD opcodes (after the 0xfd prefix, as LEB128).
const simd = {
  v128Load: [0x00],
  v128Const: [0x0c],
  i32x4ExtractLane: [0x1b],
  i16x8ExtendLowI8x16S: [0x87, 0x01],
  i16x8ExtendHighI8x16S: [0x88, 0x01],
  i32x4Add: [0xae, 0x01],
  i32x4DotI16x8S: [0xba, 0x01],
};

const i32 = 0x7f;
const v128 = 0x7b;

const uleb = (value: number): number[] => {
  const bytes: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    bytes.push(byte);
  } while (value !== 0);
  return bytes;
};
const name = (text: string): number[] => [...uleb(text.length), ...Buffer.from(text, 'utf8')];
const section = (id: number, content: number[]): number[] => [id, ...uleb(content.length), ...content];

function dotsModule(): Uint8Array {
  // Parameters 0..4: codes, query, out, count, blocks. Locals: 5 q, 6 j (i32); 7 acc, 8 x (v128).
  const [codes, query, out, count, blocks, q, j, acc, x] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const get = (local: number) => [op.localGet, local];
  const set = (local: number) => [op.localSet, local];
  const load = (offset: number) => [SIMD, ...simd.v128Load, 0, ...uleb(offset)];
  const addConst = (local: number, value: number) => [...get(local), op.i32Const, value, op.i32Add, ...set(local)];
  const decrementAndLoop = (local: number) => [...get(local), op.i32Const, 1, op.i32Sub, op.localTee, local, op.brIf, 0];
  const lane = (index: number) => [...get(acc), SIMD, ...simd.i32x4ExtractLane, index];
  const body = [
    op.block, op.void,
    ...get(count), op.i32Eqz, op.brIf, 0,
    op.loop, op.void, // each vector
    SIMD, ...simd.v128Const, ...new Array(16).fill(0), ...set(acc),
    ...get(query), ...set(q),
    ...get(blocks), ...set(j),
    op.loop, op.void, // each block of 16 dimensions
    ...get(codes), ...load(0), ...set(x),
    ...get(acc),
    ...get(x), SIMD, ...simd.i16x8ExtendLowI8x16S, ...get(q), ...load(0), SIMD, ...simd.i32x4DotI16x8S, SIMD, ...simd.i32x4Add,
    ...get(x), SIMD, ...simd.i16x8ExtendHighI8x16S, ...get(q), ...load(16), SIMD, ...simd.i32x4DotI16x8S, SIMD, ...simd.i32x4Add,
    ...set(acc),
    ...addConst(codes, 16),
    ...addConst(q, 32),
    ...decrementAndLoop(j),
    op.end,
    ...get(out), ...lane(0), ...lane(1), op.i32Add, ...lane(2), op.i32Add, ...lane(3), op.i32Add, op.i32Store, 2, 0,
    ...addConst(out, 4),
    ...decrementAndLoop(count),
    op.end,
    op.end,
    op.end,
  ];
  const locals = [2, 2, i32, 2, v128];
  const code = [...locals, ...body];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 5, i32, i32, i32, i32, i32, 0]), // type: (i32 × 5) -> ()
    ...section(3, [1, 0]), // one function of type 0
    ...section(5, [1, 0x00, 1]), // one memory, at least 1 page, growable
    ...section(7, [2, ...name('memory'), 0x02, 0, ...name('dots'), 0x00, 0]),
    ...section(10, [1, ...uleb(code.length), ...code]),
  ]);
}

/** The part of the WebAssembly API used here (Node has it; the project's TypeScript libs do not declare it). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number }) => WasmMemory;
}
const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;

let compiled: object | null | undefined;

/** The compiled SIMD module, or null when this runtime has no WebAssembly SIMD. */
function simdModule(): object | null {
  if (compiled === undefined) {
    const bytes = dotsModule();
    compiled = wasm?.validate(bytes) ? new wasm.Module(bytes) : null;
  }
  return compiled;
}

export const wasmSimdAvailable = (): boolean => simdModule() !== null;

/**
 * A growable memory of int8 codes, one int16 query and the int32 results, with the dot-product
 * loop. Offsets are bytes; `blocks` is the padded dimension / 16.
 */
export class DotKernel {
  readonly simd: boolean;
  private memory: WasmMemory;
  private run: ((codes: number, query: number, out: number, count: number, blocks: number) => void) | null;

  constructor(options: { simd?: boolean } = {}) {
    const module = options.simd === false ? null : simdModule();
    if (module) {
      const instance = new wasm!.Instance(module, {});
      this.memory = instance.exports.memory as WasmMemory;
      this.run = instance.exports.dots as (codes: number, query: number, out: number, count: number, blocks: number) => void;
    } else {
      // Plain memory, for the JavaScript loop (the same layout).
      this.memory = wasm ? new wasm.Memory({ initial: 1 }) : growableBuffer();
      this.run = null;
    }
    this.simd = this.run !== null;
  }

  /** The memory's bytes (a new view after every `reserve` that grew it). */
  get buffer(): ArrayBuffer {
    return this.memory.buffer;
  }

  /** Grows the memory to at least `bytes` (by doubling unless `exact`, so appending stays linear). */
  reserve(bytes: number, exact = false): void {
    const have = this.memory.buffer.byteLength;
    if (bytes <= have) return;
    const want = exact ? bytes : Math.max(bytes, have * 2);
    this.memory.grow(Math.ceil((want - have) / 65536));
  }

  /** Bytes held by the memory. */
  get byteLength(): number {
    return this.memory.buffer.byteLength;
  }

  dots(codes: number, query: number, out: number, count: number, blocks: number): void {
    if (count === 0) return;
    if (this.run) {
      this.run(codes, query, out, count, blocks);
      return;
    }
    const bytes = new Int8Array(this.memory.buffer);
    const q = new Int16Array(this.memory.buffer, query, blocks * 16);
    const results = new Int32Array(this.memory.buffer, out, count);
    const dimensions = blocks * 16;
    for (let v = 0, base = codes; v < count; v++, base += dimensions) {
      let sum = 0;
      for (let d = 0; d < dimensions; d++) sum += bytes[base + d]! * q[d]!;
      results[v] = sum;
    }
  }
}

/** A stand-in for WebAssembly.Memory where there is no WebAssembly at all. */
function growableBuffer(): WasmMemory {
  let buffer = new ArrayBuffer(65536);
  return {
    get buffer() {
      return buffer;
    },
    grow(pages: number) {
      const before = buffer.byteLength / 65536;
      const bigger = new ArrayBuffer(buffer.byteLength + pages * 65536);
      new Uint8Array(bigger).set(new Uint8Array(buffer));
      buffer = bigger;
      return before;
    },
  };
}
