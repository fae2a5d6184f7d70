import { describe, expect, it } from 'vitest';
import { FairSlots, SlotTicket } from './fair-slots.js';

const limits = { maxConcurrent: 1, maxConcurrentPerKey: 1, maxQueuedPerKey: 2, maxQueued: 10 };

/** A step that runs until released, recording when it started. */
function gate(log: string[], name: string) {
  let open!: () => void;
  const done = new Promise<void>((resolve) => (open = resolve));
  return { step: async () => { log.push(name); await done; }, open };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('FairSlots', () => {
  it('gives a freed slot to the keys in turn, so a request of many steps cannot starve another', async () => {
    const slots = new FairSlots(limits);
    const log: string[] = [];
    const a = slots.admit('a') as SlotTicket;
    const b = slots.admit('b') as SlotTicket;
    const a1 = gate(log, 'a1');
    const a2 = gate(log, 'a2');
    const b1 = gate(log, 'b1');
    // A request's steps run one after the other.
    const long = a.run(a1.step).then(() => a.run(a2.step));
    await tick();
    const short = b.run(b1.step);
    await tick();
    expect(log).toEqual(['a1']);
    a1.open();
    await tick();
    // a's second step asks as soon as its first ends, but b has been waiting.
    expect(log).toEqual(['a1', 'b1']);
    b1.open();
    await tick();
    expect(log).toEqual(['a1', 'b1', 'a2']);
    a2.open();
    await Promise.all([long, short]);
    a.done();
    b.done();
    expect(slots.stats).toEqual({ active: 0, requests: 0 });
  });

  it('bounds the requests of one key and of all keys', () => {
    const slots = new FairSlots({ maxConcurrent: 2, maxConcurrentPerKey: 1, maxQueuedPerKey: 1, maxQueued: 1 });
    expect(slots.admit('a')).toBeInstanceOf(SlotTicket);
    expect(slots.admit('a')).toBeInstanceOf(SlotTicket);
    expect(slots.admit('a')).toBe('key_busy');
    const b = slots.admit('b') as SlotTicket;
    expect(b).toBeInstanceOf(SlotTicket);
    expect(slots.admit('c')).toBe('all_busy');
    b.done();
    b.done();
    expect(slots.admit('c')).toBeInstanceOf(SlotTicket);
  });

  it('drops a waiter whose signal aborts, and keeps the per-key limit', async () => {
    const slots = new FairSlots({ maxConcurrent: 3, maxConcurrentPerKey: 1, maxQueuedPerKey: 5, maxQueued: 10 });
    const log: string[] = [];
    const a = slots.admit('a') as SlotTicket;
    const first = gate(log, 'first');
    const running = a.run(first.step);
    const controller = new AbortController();
    const aborted = a.run(async () => log.push('never'), controller.signal);
    const third = a.run(async () => log.push('third'));
    await tick();
    expect(slots.stats.active).toBe(1);
    controller.abort(new Error('gone'));
    await expect(aborted).rejects.toThrow('gone');
    first.open();
    await Promise.all([running, third]);
    expect(log).toEqual(['first', 'third']);
  });
});
