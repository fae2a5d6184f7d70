import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { LazyAbort } from './shared.js';
import { MAX_WRITE_BYTES, STREAM_HIGH_WATER, StreamPump } from './uws-transport.js';

/**
 * A stand-in for a uWS HttpResponse that records what the pump does with it. `accept` decides
 * whether each write goes out without back-pressure. The real uWS behaviour these rules rest on
 * is covered over sockets in test/transport-streams.int.spec.ts.
 */
function fakeResponse(accept: (index: number) => boolean = () => true) {
  const log: string[] = [];
  const writes: Buffer[] = [];
  let corked = false;
  let writable: (() => boolean) | undefined;
  const res = {
    cork(fn: () => void) {
      log.push('cork');
      corked = true;
      fn();
      corked = false;
    },
    write(chunk: Buffer) {
      if (!corked) throw new Error('write outside cork');
      writes.push(Buffer.from(chunk));
      log.push(`write ${chunk.length}`);
      return accept(writes.length - 1);
    },
    end() {
      log.push('end');
    },
    close() {
      log.push('close');
    },
    onWritable(handler: () => boolean) {
      writable = handler;
    },
  };
  return { res, log, writes, fireWritable: () => writable!() };
}

function state() {
  return { aborted: false, done: false, abort: new LazyAbort() };
}

async function* chunks(items: Array<string | Buffer>, onFinally?: () => void) {
  try {
    for (const item of items) yield item;
  } finally {
    onFinally?.();
  }
}

describe('StreamPump (uWS stream writer)', () => {
  it('joins what the producer yields in one tick into one corked write of at most 16 KB', async () => {
    const fake = fakeResponse();
    const items = Array.from({ length: 1000 }, (_, i) => `event ${i}\n`);
    await new StreamPump(fake.res as never, state(), false).run(chunks(items));
    const total = items.join('');
    expect(Buffer.concat(fake.writes).toString()).toBe(total);
    // 1000 small items went out in a handful of writes, none over the cap.
    expect(fake.writes.length).toBeLessThanOrEqual(Math.ceil(Buffer.byteLength(total) / MAX_WRITE_BYTES) + 2);
    for (const write of fake.writes) expect(write.length).toBeLessThanOrEqual(MAX_WRITE_BYTES);
    expect(fake.log.at(-1)).toBe('end');
  });

  it('splits a large chunk into 16 KB writes', async () => {
    const fake = fakeResponse();
    const big = Buffer.alloc(100_000, 7);
    await new StreamPump(fake.res as never, state(), false).run(chunks([big]));
    expect(fake.writes.map((w) => w.length)).toEqual([16384, 16384, 16384, 16384, 16384, 16384, 1696]);
    expect(Buffer.concat(fake.writes).equals(big)).toBe(true);
  });

  it('writes nothing while uWS reports back-pressure, and lets the producer run ahead only so far', async () => {
    let produced = 0;
    async function* endless() {
      for (;;) {
        produced += 1024;
        yield Buffer.alloc(1024, 1);
      }
    }
    const fake = fakeResponse((i) => i !== 0);
    const s = state();
    const pump = new StreamPump(fake.res as never, s, false).run(endless());
    for (let i = 0; i < 50; i++) await tick();
    // The first write met back-pressure: no second write, the producer paused near the high-water mark.
    expect(fake.writes).toHaveLength(1);
    expect(produced).toBeLessThanOrEqual(MAX_WRITE_BYTES + STREAM_HIGH_WATER + 1024);
    const pausedAt = produced;
    for (let i = 0; i < 20; i++) await tick();
    expect(produced).toBe(pausedAt);
    // Writable again: writing resumes.
    expect(fake.fireWritable()).toBe(true);
    for (let i = 0; i < 20; i++) await tick();
    expect(fake.writes.length).toBeGreaterThan(2);
    s.aborted = true;
    s.abort.abort();
    await pump;
  });

  it('flushes what uWS holds when it becomes writable with nothing queued (an empty cork)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    async function* burstThenWait() {
      yield Buffer.alloc(1000, 1);
      await gate;
    }
    const fake = fakeResponse((i) => i !== 0);
    const pump = new StreamPump(fake.res as never, state(), false).run(burstThenWait());
    for (let i = 0; i < 10; i++) await tick();
    expect(fake.writes).toHaveLength(1);
    const corksBefore = fake.log.filter((entry) => entry === 'cork').length;
    // uWS only drains its own buffer while an onWritable handler exists if something uncorks.
    expect(fake.fireWritable()).toBe(true);
    expect(fake.log.filter((entry) => entry === 'cork').length).toBe(corksBefore + 1);
    expect(fake.writes).toHaveLength(1);
    release();
    await pump;
    expect(fake.log.at(-1)).toBe('end');
  });

  it('stops the producer (return) when the client goes away', async () => {
    let stopped = false;
    async function* endless() {
      try {
        for (;;) yield 'x';
      } finally {
        stopped = true;
      }
    }
    const fake = fakeResponse();
    const s = state();
    const pump = new StreamPump(fake.res as never, s, false).run(endless());
    for (let i = 0; i < 5; i++) await tick();
    s.aborted = true;
    s.abort.abort();
    await pump;
    expect(stopped).toBe(true);
    expect(fake.log).not.toContain('end');
  });

  it('cuts the connection when the producer fails after the head went out', async () => {
    async function* failing() {
      yield 'partial';
      throw new Error('producer failed');
    }
    const fake = fakeResponse();
    await new StreamPump(fake.res as never, state(), false).run(failing());
    expect(fake.log).toContain('close');
    expect(fake.log).not.toContain('end');
  });
});
