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

  it('ignores a job whose run is already queued', async () => {
    const queue = new InProcessRunQueue({ concurrency: 1 });
    const seen: string[] = [];
    await queue.enqueue({ runId: 'r', teamId: 't' });
    await queue.enqueue({ runId: 'r', teamId: 't' });
    await queue.process(async (job) => void seen.push(job.runId));
    await tick();
    await tick();
    expect(seen).toEqual(['r']);
    await queue.close();
  });

  it('executes a run enqueued while it executes once more, after the current execution (a resume during the pause)', async () => {
    const queue = new InProcessRunQueue({ concurrency: 1 });
    const seen: string[] = [];
    const releases: (() => void)[] = [];
    await queue.process(async (job) => {
      seen.push(job.runId);
      await new Promise<void>((resolve) => releases.push(resolve));
    });
    await queue.enqueue({ runId: 'r', teamId: 't' });
    await tick();
    // Enqueued twice while executing: one more execution, and not before this one ended.
    await queue.enqueue({ runId: 'r', teamId: 't' });
    await queue.enqueue({ runId: 'r', teamId: 't' });
    await tick();
    expect(seen).toEqual(['r']);
    releases.shift()!();
    await tick();
    expect(seen).toEqual(['r', 'r']);
    releases.shift()!();
    await tick();
    expect(seen).toEqual(['r', 'r']);
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

  it('lends a slot to a sub-workflow\'s child whatever the limits, so parents waiting for children cannot starve them', async () => {
    // Before: with every slot held by a parent waiting for its child, the child was queued behind
    // the other parents and never started (each parent then timed out).
    const queue = new InProcessRunQueue({ concurrency: 1, teamConcurrency: 1 });
    const seen: string[] = [];
    const gates = new Map<string, () => void>();
    await queue.process(async (job) => {
      seen.push(job.runId);
      await new Promise<void>((resolve) => gates.set(job.runId, resolve));
    });
    await queue.enqueue({ runId: 'parent1', teamId: 't' });
    await queue.enqueue({ runId: 'parent2', teamId: 't' });
    await tick();
    expect(seen).toEqual(['parent1']);
    expect(queue.claim('child1', 't')).toBeNull();
    const child = queue.claim('child1', 't', { lent: true })!;
    expect(child).not.toBeNull();
    child.start({ runId: 'child1', teamId: 't' });
    await tick();
    expect(seen).toEqual(['parent1', 'child1']);
    expect(queue.active).toBe(2);
    gates.get('child1')!();
    gates.get('parent1')!();
    await tick();
    await tick();
    // The waiting parent goes next, once the slots are back within the limit.
    expect(seen).toEqual(['parent1', 'child1', 'parent2']);
    gates.get('parent2')!();
    await queue.close();
  });

  it('claims a free slot for a job about to exist, and none while the slots are taken or jobs wait', async () => {
    const queue = new InProcessRunQueue({ concurrency: 2, teamConcurrency: 2 });
    expect(queue.claim('early', 't')).toBeNull(); // no handler yet
    const seen: string[] = [];
    const gates = new Map<string, () => void>();
    await queue.process(async (job) => {
      seen.push(job.runId);
      await new Promise<void>((resolve) => gates.set(job.runId, resolve));
    });
    const first = queue.claim('c1', 't')!;
    expect(first).not.toBeNull();
    expect(queue.active).toBe(1);
    // A cancelled claim gives its slot back.
    const cancelled = queue.claim('c2', 't')!;
    expect(queue.claim('c3', 't')).toBeNull();
    cancelled.cancel();
    expect(queue.active).toBe(1);
    first.start({ runId: 'c1', teamId: 't' });
    await tick();
    expect(seen).toEqual(['c1']);
    // Both slots busy: a job waits in its line, and no claim passes it.
    await queue.enqueue({ runId: 'q1', teamId: 'u' });
    await queue.enqueue({ runId: 'q2', teamId: 'u' });
    await tick();
    expect(seen).toEqual(['c1', 'q1']);
    expect(queue.waiting).toBe(1);
    gates.get('c1')!();
    await tick();
    expect(seen).toEqual(['c1', 'q1', 'q2']);
    expect(queue.claim('c4', 't')).toBeNull();
    gates.get('q1')!();
    await tick();
    const later = queue.claim('c4', 't')!;
    expect(later).not.toBeNull();
    gates.get('q2')!();
    await tick();
    await queue.close();
    // Started after close: dropped, not run.
    const dropped: string[] = [];
    queue.onDropped((job) => dropped.push(job.runId));
    later.start({ runId: 'c4', teamId: 't' });
    expect(dropped).toEqual(['c4']);
    expect(seen).toEqual(['c1', 'q1', 'q2']);
  });

  it('runs at most teamConcurrency jobs of one team at once: another team\'s job takes a free slot at once, even behind a long line', async () => {
    const queue = new InProcessRunQueue({ concurrency: 4 });
    const seen: string[] = [];
    const gates = new Map<string, () => void>();
    await queue.process(async (job) => {
      seen.push(job.runId);
      await new Promise<void>((resolve) => gates.set(job.runId, resolve));
    });
    // Eight endless jobs of one team: three run (three quarters of 4), five wait.
    for (let i = 0; i < 8; i++) await queue.enqueue({ runId: `loop${i}`, teamId: 'attacker' });
    await tick();
    expect(seen).toEqual(['loop0', 'loop1', 'loop2']);
    expect(queue.active).toBe(3);
    expect(queue.waiting).toBe(5);
    // The team at its share claims no slot either; another team does.
    expect(queue.claim('loop8', 'attacker')).toBeNull();
    const victim = queue.claim('v1', 'victim')!;
    expect(victim).not.toBeNull();
    victim.start({ runId: 'v1', teamId: 'victim' });
    await tick();
    gates.get('v1')!();
    await tick();
    // Through the line, too: the victim's next run starts at once while the attacker's wait.
    await queue.enqueue({ runId: 'v2', teamId: 'victim' });
    await tick();
    expect(seen).toEqual(['loop0', 'loop1', 'loop2', 'v1', 'v2']);
    gates.get('v2')!();
    // An attacker job that ends lets its next one in.
    gates.get('loop0')!();
    await tick();
    expect(seen.at(-1)).toBe('loop3');
    for (const gate of gates.values()) gate();
    await queue.close();
  });
});
