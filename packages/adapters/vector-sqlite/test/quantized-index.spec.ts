import { cosineDistance, TopK } from '@trellis/core';
import { describe, expect, it } from 'vitest';
import { DotKernel } from '../src/dot-kernel.js';
import { QuantizedIndex, wasmSimdAvailable } from '../src/index.js';

// Seeded, so a failure can be replayed.
const rng = (seed: number) => () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const gaussianOf = (random: () => number) => () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());

/** The exact top k the store must answer: cosine distance, ties by id (the ExactScanVectorStore order). */
function bruteForce(vectors: Map<string, Float32Array>, query: Float32Array, k: number) {
  const top = new TopK(k);
  for (const [id, vector] of vectors) top.offer(id, cosineDistance(query, vector));
  return top.items;
}

/** What the store does with the candidates: exact re-ranking. */
function rerank(index: QuantizedIndex, vectors: Map<string, Float32Array>, query: Float32Array, k: number) {
  const top = new TopK(k);
  for (const id of index.candidates(query, k)) top.offer(id, cosineDistance(query, vectors.get(id)!));
  return top.items;
}

describe('dot-product kernel', () => {
  it('has WebAssembly SIMD on this Node', () => {
    expect(wasmSimdAvailable()).toBe(true);
  });

  // Even and odd counts: the SIMD loop takes vectors two at a time and the last of an odd count alone.
  it.each([
    { simd: true, count: 50 },
    { simd: true, count: 51 },
    { simd: true, count: 1 },
    { simd: true, count: 2 },
    { simd: false, count: 50 },
    { simd: false, count: 51 },
  ])('computes exact int8 × int16 sums (simd $simd, $count vectors)', ({ simd, count }) => {
    const kernel = new DotKernel({ simd });
    expect(kernel.simd).toBe(simd);
    const random = rng(7);
    const blocks = 3;
    const codesAt = blocks * 32;
    const out = codesAt + count * blocks * 16;
    // Room for a sentinel after the results.
    kernel.reserve(out + count * 4 + 4);
    const query = new Int16Array(kernel.buffer, 0, blocks * 16);
    const codes = new Int8Array(kernel.buffer, codesAt, count * blocks * 16);
    // Extremes included: -127..127 codes against ±16383 queries.
    for (let d = 0; d < query.length; d++) query[d] = d % 5 === 0 ? (d % 2 ? 16383 : -16383) : Math.round((random() - 0.5) * 32766);
    for (let i = 0; i < codes.length; i++) codes[i] = i % 7 === 0 ? (i % 2 ? 127 : -127) : Math.round((random() - 0.5) * 254);
    // The sentinel: nothing is written past the results.
    new Int32Array(kernel.buffer, out + count * 4, 1)[0] = 0x5a5a5a5a;
    kernel.dots(codesAt, 0, out, count, blocks);
    expect(new Int32Array(kernel.buffer, out + count * 4, 1)[0]).toBe(0x5a5a5a5a);
    const results = new Int32Array(kernel.buffer, out, count);
    for (let v = 0; v < count; v++) {
      let sum = 0;
      for (let d = 0; d < blocks * 16; d++) sum += codes[v * blocks * 16 + d]! * query[d]!;
      expect(results[v]).toBe(sum);
    }
  });
});

describe('quantised index: candidates contain the exact top k', () => {
  it.each([
    { dimension: 384, count: 3000, simd: true },
    { dimension: 384, count: 3000, simd: false },
    { dimension: 7, count: 500, simd: true },
    { dimension: 33, count: 800, simd: true },
  ])('random unit and non-unit vectors, $dimension dims × $count (simd $simd)', ({ dimension, count, simd }) => {
    const gaussian = gaussianOf(rng(dimension * 1000 + count));
    const vectors = new Map<string, Float32Array>();
    const index = new QuantizedIndex(dimension, { simd });
    for (let i = 0; i < count; i++) {
      // Lengths vary over orders of magnitude: only directions count.
      const scale = 10 ** (gaussian() * 2);
      const vector = Float32Array.from({ length: dimension }, () => gaussian() * scale);
      const id = `id-${String(i).padStart(5, '0')}`;
      vectors.set(id, vector);
      index.set(id, vector);
    }
    let candidates = 0;
    for (let n = 0; n < 20; n++) {
      const query = Float32Array.from({ length: dimension }, gaussian);
      for (const k of [1, 10, 57]) {
        expect(rerank(index, vectors, query, k)).toEqual(bruteForce(vectors, query, k));
        if (k === 10) candidates += index.candidates(query, k).length;
      }
    }
    // The first pass must also prune, or it is no faster than the scan.
    if (dimension === 384) expect(candidates / 20).toBeLessThan(count / 10);
  });

  it('keeps ties at the k-th distance: duplicates, scaled copies, zero vectors, ids in any order', () => {
    const dimension = 64;
    const gaussian = gaussianOf(rng(99));
    const vectors = new Map<string, Float32Array>();
    const index = new QuantizedIndex(dimension);
    const base = Array.from({ length: 20 }, () => Float32Array.from({ length: dimension }, gaussian));
    for (let i = 0; i < 600; i++) {
      // Thirty copies of each of twenty directions, some scaled (the same cosine distance), plus zeros.
      const vector = i % 50 === 0 ? new Float32Array(dimension) : base[i % 20]!.map((x) => x * (1 + (i % 3)));
      const id = `${(i * 7919) % 1000}-${i}`;
      vectors.set(id, vector);
      index.set(id, vector);
    }
    for (let n = 0; n < 10; n++) {
      const query = n < 5 ? base[n]! : Float32Array.from({ length: dimension }, gaussian);
      for (const k of [1, 5, 30, 31, 100]) expect(rerank(index, vectors, query, k)).toEqual(bruteForce(vectors, query, k));
    }
    // A query with no direction: every record is at distance 1, the first ids win.
    const zero = new Float32Array(dimension);
    expect(rerank(index, vectors, zero, 10)).toEqual(bruteForce(vectors, zero, 10));
  });

  it('stays exact where the order is decided below the quantisation step (near duplicates)', () => {
    // Thousands of vectors within ~1e-3 of one direction: their exact order is decided by
    // differences no larger than the int8 rounding, so a bound too tight by any factor loses
    // members of the top k. Also checks the first pass then names more candidates, not fewer.
    for (const [dimension, spread] of [
      [384, 1e-3],
      [64, 3e-3],
      [16, 1e-2],
    ] as const) {
      const gaussian = gaussianOf(rng(dimension));
      const base = Float32Array.from({ length: dimension }, gaussian);
      const near = () => base.map((x) => x + spread * gaussian());
      const vectors = new Map<string, Float32Array>();
      const index = new QuantizedIndex(dimension);
      for (let i = 0; i < 2000; i++) {
        const vector = near();
        vectors.set(`n${i}`, vector);
        index.set(`n${i}`, vector);
      }
      for (let n = 0; n < 15; n++) {
        const query = near();
        for (const k of [1, 10, 50]) expect(rerank(index, vectors, query, k)).toEqual(bruteForce(vectors, query, k));
      }
    }
  });

  it('stays exact through replacements and deletions (slots move)', () => {
    const dimension = 48;
    const random = rng(5);
    const gaussian = gaussianOf(random);
    const vectors = new Map<string, Float32Array>();
    const index = new QuantizedIndex(dimension, { simd: true });
    const check = () => {
      expect(index.size).toBe(vectors.size);
      for (let n = 0; n < 5; n++) {
        const query = Float32Array.from({ length: dimension }, gaussian);
        expect(rerank(index, vectors, query, 10)).toEqual(bruteForce(vectors, query, 10));
      }
    };
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 300; i++) {
        const id = `r${Math.floor(random() * 500)}`;
        if (random() < 0.3) {
          expect(index.delete(id)).toBe(vectors.delete(id));
        } else {
          const vector = Float32Array.from({ length: dimension }, gaussian);
          vectors.set(id, vector);
          index.set(id, vector);
        }
      }
      check();
    }
    // A vector replaced by its opposite no longer ranks first for its old direction.
    const [id, vector] = [...vectors.entries()][0]!;
    expect(rerank(index, vectors, vector, 1)[0]!.id).toBe(id);
    const flipped = vector.map((x) => -x);
    vectors.set(id, flipped);
    index.set(id, flipped);
    expect(rerank(index, vectors, vector, 1)[0]!.id).not.toBe(id);
    check();
  });

  it('always names a vector with a non-finite component', () => {
    const index = new QuantizedIndex(4);
    for (let i = 0; i < 50; i++) index.set(`v${i}`, [1, i, 0, 0]);
    index.set('bad', [NaN, 0, 0, 0]);
    expect(index.candidates([1, 0, 0, 0], 3)).toContain('bad');
    expect(() => index.set('short', [1, 2])).toThrow(/3|2 dimensions/);
  });
  it('exports its coded vectors in pages that restore an index answering the same, which then follows writes', () => {
    const dimension = 40;
    const random = rng(9);
    const gaussian = gaussianOf(random);
    const vectors = new Map<string, Float32Array>();
    const index = new QuantizedIndex(dimension);
    for (let i = 0; i < 700; i++) {
      const vector = i % 97 === 0 ? new Float32Array(dimension) : Float32Array.from({ length: dimension }, gaussian);
      vectors.set(`v${i}`, vector);
      index.set(`v${i}`, vector);
    }
    for (let i = 0; i < 700; i += 7) {
      index.delete(`v${i}`);
      vectors.delete(`v${i}`);
    }
    const restored = new QuantizedIndex(dimension, { capacity: index.size });
    for (let from = 0; from < index.size; from += 256) restored.append(index.export(from, 256));
    expect(restored.size).toBe(index.size);
    for (let n = 0; n < 5; n++) {
      const query = Float32Array.from({ length: dimension }, gaussian);
      expect(restored.candidates(query, 10)).toEqual(index.candidates(query, 10));
      expect(rerank(restored, vectors, query, 10)).toEqual(bruteForce(vectors, query, 10));
    }
    // Writes after a restore: replaced, deleted and new vectors.
    const id = 'v1';
    const turned = vectors.get(id)!.map((x) => -x);
    vectors.set(id, turned);
    restored.set(id, turned);
    expect(restored.delete('v2')).toBe(true);
    vectors.delete('v2');
    const added = Float32Array.from({ length: dimension }, gaussian);
    vectors.set('new', added);
    restored.set('new', added);
    expect(rerank(restored, vectors, added, 1)[0]!.id).toBe('new');
    for (let n = 0; n < 5; n++) {
      const query = Float32Array.from({ length: dimension }, gaussian);
      expect(rerank(restored, vectors, query, 10)).toEqual(bruteForce(vectors, query, 10));
    }
  });

  it('refuses a malformed page, and an id held twice after pages are appended', () => {
    const index = new QuantizedIndex(4);
    for (let i = 0; i < 20; i++) index.set(`v${i}`, [1, i, 0, 0]);
    const page = index.export();
    const target = new QuantizedIndex(4);
    expect(() => target.append({ ...page, codes: page.codes.subarray(1) })).toThrow(/malformed/);
    expect(() => target.append({ ...page, scales: Float64Array.from(page.scales, () => NaN) })).toThrow(/malformed/);
    expect(target.size).toBe(0);
    target.append(page);
    target.append(index.export(3, 1));
    expect(target.size).toBe(21);
    expect(() => target.has('v3')).toThrow(/twice/);
  });
});
