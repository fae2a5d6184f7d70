import { DotKernel } from './dot-kernel.js';

/** Largest int8 code: codes lie in [-127, 127]. */
const CODE_MAX = 127;
/** Allowance for floating-point rounding in the bounds (far above the ~1e-15 they can be off by). */
const SLACK = 1e-9;

/**
 * An in-memory int8 copy of a set of vectors that names, for a query, a small superset of its
 * exact k nearest by cosine distance, to be re-ranked exactly.
 *
 * Each vector is scaled to unit length u and coded as x = round(u / s) with its own scale
 * s = max|u| / 127; r = u − s·x is its rounding error, and |r| (its Euclidean length) is kept. A
 * query is scaled to unit length q and coded as int16 y = round(q / t) (t = max|q| / Y), error
 * r_q. Then, exactly (Cauchy–Schwarz, |q| = 1, |s·x| ≤ 1 + |r|):
 *
 *   |q·u − s·t·(x·y)| ≤ |q·r| + |r_q·(s·x)| ≤ |r| + |r_q|·(1 + |r|) = e
 *
 * so every vector's cosine similarity q·u lies in [a − e, a + e] around its estimate a = s·t·(x·y),
 * the integer dot product computed exactly by `DotKernel`. With T the k-th largest lower bound,
 * at least k vectors have similarity ≥ T, so every vector of the exact top k (ties included) has
 * a + e ≥ T: `candidates` answers those, usually a few dozen of 100,000. Zero vectors are coded
 * as zeros with s = 0 (estimate 0, error 0: cosine distance 1, as the exact distance has it);
 * vectors with a non-finite component are always candidates.
 */
export class QuantizedIndex {
  /** Dimensions rounded up to a multiple of 16 (the kernel's block); the padding codes are 0. */
  readonly padded: number;
  private readonly kernel: DotKernel;
  /** Byte offset of the first code (the int16 query comes first). */
  private readonly codesAt: number;
  /** Largest query code: keeps 127 × Y × padded within an int32. */
  private readonly queryMax: number;
  private ids: string[] = [];
  /** Slot of each id; built on first use after `append` (a restored index may answer searches without it). */
  private slotMap: Map<string, number> | null = new Map();
  private scales: Float64Array<ArrayBuffer> = new Float64Array(16);
  private errors: Float64Array<ArrayBuffer> = new Float64Array(16);

  constructor(
    readonly dimension: number,
    options: { simd?: boolean; capacity?: number } = {},
  ) {
    if (!Number.isInteger(dimension) || dimension < 1) throw new Error(`QuantizedIndex: bad dimension ${dimension}`);
    this.padded = Math.ceil(dimension / 16) * 16;
    this.kernel = new DotKernel(options);
    this.codesAt = this.padded * 2;
    this.queryMax = Math.min(16383, Math.floor(0x7fffffff / (CODE_MAX * this.padded)));
    if (options.capacity) {
      // Sized once for a known number of vectors (room for the results included).
      this.kernel.reserve(this.codesAt + options.capacity * (this.padded + 4), true);
      this.scales = new Float64Array(Math.max(16, options.capacity));
      this.errors = new Float64Array(Math.max(16, options.capacity));
    }
  }

  get size(): number {
    return this.ids.length;
  }

  /** Whether the dot products run in WebAssembly SIMD (else in JavaScript). */
  get simd(): boolean {
    return this.kernel.simd;
  }

  /** Bytes held: the kernel's memory and about 100 bytes per vector for its id and bounds. */
  get bytes(): number {
    return this.kernel.byteLength + this.ids.length * 100 + this.scales.byteLength * 2;
  }

  /** Bytes an index of `count` vectors of `dimension` needs, about. */
  static estimateBytes(dimension: number, count: number): number {
    const padded = Math.ceil(dimension / 16) * 16;
    return padded * 2 + count * (padded + 4 + 100 + 16);
  }

  has(id: string): boolean {
    return this.slots().has(id);
  }

  /** Adds the vector of `id`, or replaces it. */
  set(id: string, vector: ArrayLike<number>): void {
    if (vector.length !== this.dimension) throw new Error(`QuantizedIndex: vector of ${vector.length} dimensions, index of ${this.dimension}`);
    const slots = this.slots();
    let slot = slots.get(id);
    if (slot === undefined) {
      slot = this.ids.length;
      this.kernel.reserve(this.codesAt + (slot + 1) * (this.padded + 4));
      if (slot === this.scales.length) {
        this.scales = grow(this.scales);
        this.errors = grow(this.errors);
      }
      this.ids.push(id);
      slots.set(id, slot);
    }
    const codes = new Int8Array(this.kernel.buffer, this.codesAt + slot * this.padded, this.padded);
    codes.fill(0);
    let squares = 0;
    let largest = 0;
    for (let d = 0; d < this.dimension; d++) {
      const value = vector[d]!;
      squares += value * value;
      largest = Math.max(largest, Math.abs(value));
    }
    if (!Number.isFinite(squares)) {
      // A bound so wide it is always a candidate (finite, so that 0 × it stays 0).
      this.scales[slot] = 0;
      this.errors[slot] = 1e300;
      return;
    }
    if (squares === 0) {
      this.scales[slot] = 0;
      this.errors[slot] = 0;
      return;
    }
    const norm = Math.sqrt(squares);
    const scale = largest / norm / CODE_MAX;
    let residual = 0;
    for (let d = 0; d < this.dimension; d++) {
      const unit = vector[d]! / norm;
      const code = Math.max(-CODE_MAX, Math.min(CODE_MAX, Math.round(unit / scale)));
      codes[d] = code;
      residual += (unit - code * scale) ** 2;
    }
    this.scales[slot] = scale;
    this.errors[slot] = Math.sqrt(residual);
  }

  /**
   * A copy of the coded vectors `from` .. `from + count` (slot order): their ids, int8 codes
   * (`padded` bytes each), scales and error bounds, what `append` takes back. The codes are the
   * index's whole state per vector, so an index restored from them answers exactly as this one.
   */
  export(from = 0, count = this.ids.length - from): IndexPage {
    const start = Math.max(0, Math.min(from, this.ids.length));
    const end = Math.min(this.ids.length, start + Math.max(0, count));
    const codes = new Uint8Array(this.kernel.buffer, this.codesAt + start * this.padded, (end - start) * this.padded).slice();
    return { ids: this.ids.slice(start, end), codes, scales: this.scales.slice(start, end), errors: this.errors.slice(start, end) };
  }

  /**
   * Adds coded vectors as `export` answered them (of an index of the same dimension and coding).
   * Throws, adding nothing, when the page is malformed. Ids are not checked here: the first
   * `set`, `delete` or `has` after it throws if an id is then held twice (call `has` to check).
   */
  append(page: IndexPage): void {
    const n = page.ids.length;
    if (page.codes.length !== n * this.padded || page.scales.length !== n || page.errors.length !== n) throw new Error('QuantizedIndex: malformed page');
    for (let i = 0; i < n; i++) {
      const scale = page.scales[i]!;
      const error = page.errors[i]!;
      if (!(scale >= 0 && scale < 1) || !(error >= 0)) throw new Error('QuantizedIndex: malformed page');
    }
    for (const id of page.ids) if (typeof id !== 'string') throw new Error('QuantizedIndex: malformed page');
    const first = this.ids.length;
    this.kernel.reserve(this.codesAt + (first + n) * (this.padded + 4));
    while (this.scales.length < first + n) {
      this.scales = grow(this.scales);
      this.errors = grow(this.errors);
    }
    new Uint8Array(this.kernel.buffer, this.codesAt + first * this.padded, n * this.padded).set(page.codes);
    this.scales.set(page.scales, first);
    this.errors.set(page.errors, first);
    for (let i = 0; i < n; i++) this.ids.push(page.ids[i]!);
    // Ids are checked for repeats when the slots are built (on the first write or `has`).
    this.slotMap = null;
  }

  /**
   * The slot of each id, built when missing. An id found twice (appended pages that repeat one)
   * is an error: the index is then unusable, and its owner drops it.
   */
  private slots(): Map<string, number> {
    if (this.slotMap) return this.slotMap;
    const slots = new Map<string, number>();
    for (let slot = 0; slot < this.ids.length; slot++) slots.set(this.ids[slot]!, slot);
    if (slots.size !== this.ids.length) throw new Error('QuantizedIndex: an id is held twice');
    this.slotMap = slots;
    return slots;
  }

  /** Removes `id`; the last vector moves into its slot. */
  delete(id: string): boolean {
    const slots = this.slots();
    const slot = slots.get(id);
    if (slot === undefined) return false;
    const last = this.ids.length - 1;
    if (slot !== last) {
      const bytes = new Uint8Array(this.kernel.buffer);
      bytes.copyWithin(this.codesAt + slot * this.padded, this.codesAt + last * this.padded, this.codesAt + (last + 1) * this.padded);
      const moved = this.ids[last]!;
      this.ids[slot] = moved;
      slots.set(moved, slot);
      this.scales[slot] = this.scales[last]!;
      this.errors[slot] = this.errors[last]!;
    }
    this.ids.pop();
    slots.delete(id);
    return true;
  }

  /**
   * The ids whose exact cosine similarity to `query` could place them among the `k` nearest: a
   * superset of the exact top k, ties at the k-th distance included. Every id when the query has
   * no direction (zero or non-finite).
   */
  candidates(query: ArrayLike<number>, k: number): string[] {
    const count = this.ids.length;
    if (query.length !== this.dimension) throw new Error(`QuantizedIndex: query of ${query.length} dimensions, index of ${this.dimension}`);
    if (count <= k) return [...this.ids];
    let squares = 0;
    let largest = 0;
    for (let d = 0; d < this.dimension; d++) {
      squares += query[d]! * query[d]!;
      largest = Math.max(largest, Math.abs(query[d]!));
    }
    if (!(squares > 0) || !Number.isFinite(squares)) return [...this.ids];
    const norm = Math.sqrt(squares);
    const step = largest / norm / this.queryMax;
    const out = this.codesAt + count * this.padded;
    this.kernel.reserve(out + count * 4);
    const coded = new Int16Array(this.kernel.buffer, 0, this.padded);
    coded.fill(0);
    let residual = 0;
    for (let d = 0; d < this.dimension; d++) {
      const unit = query[d]! / norm;
      const code = Math.round(unit / step);
      coded[d] = code;
      residual += (unit - code * step) ** 2;
    }
    const queryError = Math.sqrt(residual);
    this.kernel.dots(this.codesAt, 0, out, count, this.padded / 16);
    const dots = new Int32Array(this.kernel.buffer, out, count);
    const scales = this.scales;
    const errors = this.errors;

    // One pass: the k largest lower bounds in a min-heap (its root, the k-th largest so far, only
    // rises), and every vector whose upper bound reaches the root when it is seen; those that fall
    // below the final root are dropped at the end.
    const heap = new Float64Array(k);
    let filled = 0;
    const seen: number[] = [];
    const uppers: number[] = [];
    for (let i = 0; i < count; i++) {
      const error = errors[i]!;
      const estimate = scales[i]! * step * dots[i]!;
      const bound = error + queryError * (1 + error) + SLACK;
      const lower = estimate - bound;
      const upper = estimate + bound;
      if (filled < k) {
        let at = filled++;
        while (at > 0) {
          const parent = (at - 1) >> 1;
          if (heap[parent]! <= lower) break;
          heap[at] = heap[parent]!;
          at = parent;
        }
        heap[at] = lower;
      } else if (lower > heap[0]!) {
        let at = 0;
        for (;;) {
          const left = 2 * at + 1;
          if (left >= k) break;
          const right = left + 1;
          const child = right < k && heap[right]! < heap[left]! ? right : left;
          if (heap[child]! >= lower) break;
          heap[at] = heap[child]!;
          at = child;
        }
        heap[at] = lower;
      }
      // `!(upper < root)` keeps the non-finite (always candidates).
      if (filled < k || !(upper < heap[0]!)) {
        seen.push(i);
        uppers.push(upper);
      }
    }
    const threshold = heap[0]!;
    const found: string[] = [];
    for (let j = 0; j < seen.length; j++) if (!(uppers[j]! < threshold)) found.push(this.ids[seen[j]!]!);
    return found;
  }
}

/** Coded vectors of a `QuantizedIndex`, as `export` answers them and `append` takes them. */
export interface IndexPage {
  ids: string[];
  /** int8 codes, `padded` bytes per vector (the dimension rounded up to 16, zeros after it). */
  codes: Uint8Array;
  scales: Float64Array;
  errors: Float64Array;
}

function grow(array: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> {
  const bigger = new Float64Array(array.length * 2);
  bigger.set(array);
  return bigger;
}
