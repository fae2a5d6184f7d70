import { describe, expect, it } from 'vitest';
import { LazyAbort, toBuffer, wsPayloadCeiling } from './shared.js';

describe('LazyAbort', () => {
  it('creates no signal until asked, and hands out an aborted one after the client left', () => {
    const early = new LazyAbort();
    const signal = early.signal;
    expect(signal.aborted).toBe(false);
    early.abort();
    expect(signal.aborted).toBe(true);
    expect(early.signal).toBe(signal);

    const late = new LazyAbort();
    late.abort();
    expect(late.aborted).toBe(true);
    expect(late.signal.aborted).toBe(true);
  });

  it('fires abort listeners once', () => {
    const abort = new LazyAbort();
    let calls = 0;
    abort.signal.addEventListener('abort', () => calls++);
    abort.abort();
    abort.abort();
    expect(calls).toBe(1);
  });
});

describe('wsPayloadCeiling', () => {
  it('leaves room above the channel limit for a 1009 close', () => {
    expect(wsPayloadCeiling(1024)).toBe(1024 + 64 * 1024);
    expect(wsPayloadCeiling(1024 * 1024)).toBe(2 * 1024 * 1024);
    expect(wsPayloadCeiling(2 ** 30)).toBe(2 ** 30);
  });
});

describe('toBuffer', () => {
  it('views bytes without copying and encodes strings as UTF-8', () => {
    const bytes = new Uint8Array([1, 2, 3, 4]).subarray(1, 3);
    const view = toBuffer(bytes);
    expect([...view]).toEqual([2, 3]);
    bytes[0] = 9;
    expect(view[0]).toBe(9);
    expect(toBuffer('é').length).toBe(2);
  });
});
