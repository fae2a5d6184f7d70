import { describe, expect, it } from 'vitest';
import { InProcessRunQueue } from './in-process-run-queue.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('InProcessRunQueue', () => {
  it('runs at most `concurrency` jobs at once and takes teams in turn', async () => {
    const queue = new InProcessRunQueue({ concurrency: 2 });
    const order: string[] = [];
    let active = 0;
    let peak = 0;
    const gates = new Map<string, () => void>();
    for (let i = 0; i < 4; i++) await queue.enqueue({ runId: `a${i}`, teamId: 'A' });
    await queue.enqueue({ runId: 'b0', teamId: 'B' });
    await queue.enqueue({ runId: 'b1', teamId: 'B' });
    await queue.process(async (job) => {
      order.push(job.runId);
      active++;
      peak = Math.max(peak, active);
      await new Promise<void>((resolve) => gates.set(job.runId, resolve));
      active--;
    });
    await tick();
    expect(order).toEqual(['a0', 'b0']);
    gates.get('a0')!();
    await tick();
    gates.get('b0')!();
    await tick();
    expect(order).toEqual(['a0', 'b0', 'a1', 'b1']);
    for (const id of ['a1', 'b1']) gates.get(id)!();
    await tick();
    for (const id of ['a2', 'a3']) gates.get(id)?.();
    await tick();
    gates.get('a3')?.();
    await tick();
    expect(order).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'a3']);
    expect(peak).toBe(2);
    await queue.close();
  });

  it('ignores a job whose run is already queued or running', async () => {
    const queue = new InProcessRunQueue({ concurrency: 1 });
    const seen: string[] = [];
    let release!: () => void;
    await queue.process(async (job) => {
      seen.push(job.runId);
      await new Promise<void>((resolve) => (release = resolve));
    });
    await queue.enqueue({ runId: 'r', teamId: 't' });
    await queue.enqueue({ runId: 'r', teamId: 't' });
    await tick();
    release();
    await tick();
    expect(seen).toEqual(['r']);
    await queue.enqueue({ runId: 'r', teamId: 't' });
    await tick();
    expect(seen).toEqual(['r', 'r']);
    release();
    await queue.close();
  });

  it('aborts running jobs when close passes its grace period', async () => {
    const queue = new InProcessRunQueue({ concurrency: 1, closeGraceMs: 20 });
    let aborted = false;
    await queue.process(
      (_job, signal) =>
        new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          }),
        ),
    );
    await queue.enqueue({ runId: 'r', teamId: 't' });
    await tick();
    await queue.close();
    expect(aborted).toBe(true);
  });
});
