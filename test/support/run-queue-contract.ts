import { afterEach, describe, expect, it } from 'vitest';
import type { RunJob, RunJobHandler, RunQueue } from '@trellis/core';

/**
 * The RunQueue port's contract as tests, for every implementation (the in-process default, the
 * BullMQ adapter, ...): call `describeRunQueueContract` from the implementation's spec with a
 * factory. Each call of the factory must give a fresh, empty queue (its own backend or key
 * prefix) with the given concurrency and close grace period; the suite closes every queue it made.
 */
export interface RunQueueContractOptions {
  concurrency: number;
  /** How long `close` waits for running handlers before aborting them. */
  closeGraceMs: number;
}

export type RunQueueFactory = (options: RunQueueContractOptions) => RunQueue | Promise<RunQueue>;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A latch a handler can wait on. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

export function describeRunQueueContract(name: string, factory: RunQueueFactory): void {
  describe(`RunQueue contract: ${name}`, () => {
    const made: RunQueue[] = [];
    const make = async (options: Partial<RunQueueContractOptions> = {}) => {
      const queue = await factory({ concurrency: 4, closeGraceMs: 5_000, ...options });
      made.push(queue);
      return queue;
    };
    afterEach(async () => {
      await Promise.all(made.splice(0).map((queue) => queue.close()));
    });

    it('hands every enqueued job to the handler once, with its run and team ids', async () => {
      const queue = await make();
      const seen: RunJob[] = [];
      await queue.process(async (job) => {
        seen.push({ runId: job.runId, teamId: job.teamId });
      });
      const jobs = Array.from({ length: 10 }, (_, i) => ({ runId: `once-${i}`, teamId: `team-${i % 3}` }));
      for (const job of jobs) await queue.enqueue(job);
      await until('ten jobs', () => seen.length >= 10);
      await sleep(200);
      expect([...seen].sort((a, b) => a.runId.localeCompare(b.runId))).toEqual([...jobs].sort((a, b) => a.runId.localeCompare(b.runId)));
    });

    it('keeps jobs enqueued before any consumer, and enqueue does not wait for execution', async () => {
      const queue = await make();
      const blocker = gate();
      const started: string[] = [];
      await queue.enqueue({ runId: 'early', teamId: 'team' });
      await queue.process(async (job) => {
        started.push(job.runId);
        await blocker.opened;
      });
      await until('the early job', () => started.includes('early'));
      // The handler is blocked: enqueue must still resolve.
      await queue.enqueue({ runId: 'while-busy', teamId: 'team' });
      blocker.open();
      await until('the second job', () => started.includes('while-busy'));
    });

    it('never runs more handlers at once than its concurrency', async () => {
      const queue = await make({ concurrency: 2 });
      let current = 0;
      let peak = 0;
      let done = 0;
      await queue.process(async () => {
        current += 1;
        peak = Math.max(peak, current);
        await sleep(60);
        current -= 1;
        done += 1;
      });
      for (let i = 0; i < 8; i++) await queue.enqueue({ runId: `bounded-${i}`, teamId: `team-${i % 2}` });
      await until('eight jobs', () => done === 8);
      expect(peak).toBe(2);
    });

    it('treats enqueueing a queued run as a no-op', async () => {
      const queue = await make({ concurrency: 1 });
      const blocker = gate();
      const calls: string[] = [];
      await queue.process(async (job) => {
        calls.push(job.runId);
        if (job.runId === 'blocker') await blocker.opened;
      });
      await queue.enqueue({ runId: 'blocker', teamId: 'team' });
      await until('the blocker', () => calls.length === 1);
      await queue.enqueue({ runId: 'dup', teamId: 'team' });
      await queue.enqueue({ runId: 'dup', teamId: 'team' });
      await queue.enqueue({ runId: 'dup', teamId: 'team' });
      blocker.open();
      await until('the queued run', () => calls.includes('dup'));
      await sleep(300);
      expect(calls).toEqual(['blocker', 'dup']);
    });

    it('runs a run again when enqueued after it finished, and once more when enqueued while executing', async () => {
      const queue = await make();
      const calls: number[] = [];
      const second = gate();
      await queue.process(async () => {
        calls.push(Date.now());
        if (calls.length === 2) await second.opened;
      });
      const job = { runId: 'continued', teamId: 'team' };
      await queue.enqueue(job);
      await until('the first part', () => calls.length === 1);
      await sleep(150);
      await queue.enqueue(job);
      await until('the second part', () => calls.length === 2);
      await queue.enqueue(job);
      await queue.enqueue(job);
      second.open();
      await until('the third part', () => calls.length === 3);
      await sleep(300);
      expect(calls).toHaveLength(3);
    });

    it('does not let one team\'s burst make another team wait behind all of it', async () => {
      const queue = await make({ concurrency: 1 });
      for (let i = 1; i <= 6; i++) await queue.enqueue({ runId: `burst-${i}`, teamId: 'burst' });
      await queue.enqueue({ runId: 'quiet-1', teamId: 'quiet' });
      const order: string[] = [];
      await queue.process(async (job) => {
        order.push(job.runId);
      });
      await until('seven jobs', () => order.length === 7);
      expect(order.indexOf('quiet-1')).toBeLessThanOrEqual(2);
    });

    it('close waits for running handlers, and the queue takes no more jobs', async () => {
      const queue = await make();
      let finished = false;
      let aborted: boolean | undefined;
      let started = false;
      const handler: RunJobHandler = async (_job, signal) => {
        started = true;
        await sleep(300);
        aborted = signal.aborted;
        finished = true;
      };
      await queue.process(handler);
      await queue.enqueue({ runId: 'closing', teamId: 'team' });
      await until('the handler', () => started);
      await queue.close();
      expect(finished).toBe(true);
      expect(aborted).toBe(false);
      await expect(queue.enqueue({ runId: 'after-close', teamId: 'team' })).rejects.toThrow();
    });

    it('close aborts the signals of handlers still running after its grace period', async () => {
      const queue = await make({ closeGraceMs: 100 });
      let started = false;
      let reason: unknown;
      await queue.process(async (_job, signal) => {
        started = true;
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        reason = signal.reason;
      });
      await queue.enqueue({ runId: 'stubborn', teamId: 'team' });
      await until('the handler', () => started);
      const closing = Date.now();
      await queue.close();
      expect(reason).toBeDefined();
      expect(Date.now() - closing).toBeLessThan(5_000);
    });
  });
}
