import { describe, expect, it } from 'vitest';
import { generateOpaqueToken, safeEqual, sha256Hex, uuidv7 } from './crypto.js';

describe('crypto helpers', () => {
  it('produces RFC 9562 version 7 UUIDs that sort by creation, even within one millisecond', () => {
    const before = Date.now();
    // 2000 ids come out in a few milliseconds, so many share one: the counter keeps them ordered.
    const ids = Array.from({ length: 2000 }, () => uuidv7());
    const after = Date.now();
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    const msOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(msOf(ids[0]!)).toBeGreaterThanOrEqual(before);
    // The counter may carry into the next millisecond, never far beyond.
    expect(msOf(ids.at(-1)!)).toBeLessThanOrEqual(after + 5);
  });

  it('generates prefixed tokens with 256 bits of randomness', () => {
    const a = generateOpaqueToken('trk_');
    expect(a).toMatch(/^trk_[A-Za-z0-9_-]{43}$/);
    expect(generateOpaqueToken('trk_')).not.toBe(a);
  });

  it('hashes with SHA-256 and compares in constant time', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
  });
});
