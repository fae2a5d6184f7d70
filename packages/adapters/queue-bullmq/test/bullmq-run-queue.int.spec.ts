import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunJob } from '@trellis/core';
import { BullMqRunQueue, type BullMqRunQueueOptions } from '@trellis/queue-bullmq';

const url = process.env.TRELLIS_TEST_REDIS_URL;
const root = fileURLToPath(new URL('../../../../', import.meta.url));
const fixture = fileURLToPath(new URL('./fixtures/run-worker.ts', import.meta.url));


const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

interface LogEntry {
  worker: string;
  pid: number;
  event: 'ready' | 'start' | 'done' | 'aborted' | 'error';
  runId?: string;
  aborted?: boolean;
  reason?: string;
  message?: string;
}

describe.skipIf(!url)(`BullMqRunQueue (real Redis${url ? '' : ': skipped, TRELLIS_TEST_REDIS_URL is not set'})`, () => {
  let redis: Redis;
  const queues: BullMqRunQueue[] = [];
  const children: ChildProcess[] = [];
  const prefixes: string[] = [];

  const newPrefix = () => {
    const prefix = `tq${randomUUID().slice(0, 8)}`;
    prefixes.push(prefix);
    return prefix;
  };
  const make = (options: BullMqRunQueueOptions) => {
    const queue = new BullMqRunQueue({ url, ...options });
    queues.push(queue);
    return queue;
  };
  const readLog = async (prefix: string): Promise<LogEntry[]> => (await redis.lrange(`${prefix}:log`, 0, -1)).map((line) => JSON.parse(line) as LogEntry);

  /** Starts a worker process (the fixture) and waits until it takes jobs. */
  async function startWorker(prefix: string, name: string, settings: { lockMs: number; stalledMs: number; maxStalled: number; concurrency?: number }) {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
      cwd: root,
      env: {
        ...process.env,
        TSX_TSCONFIG_PATH: fileURLToPath(new URL('./fixtures/tsconfig.json', import.meta.url)),
        QUEUE_REDIS_URL: url,
        QUEUE_PREFIX: prefix,
        QUEUE_WORKER_NAME: name,
        QUEUE_CONCURRENCY: String(settings.concurrency ?? 1),
        QUEUE_LOCK_MS: String(settings.lockMs),
        QUEUE_STALLED_MS: String(settings.stalledMs),
        QUEUE_MAX_STALLED: String(settings.maxStalled),
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(child);
    await waitFor(`worker ${name} to start`, async () => ((await readLog(prefix)).some((e) => e.worker === name && e.event === 'ready') ? true : undefined), 60_000);
    return child;
  }

  beforeAll(async () => {
    redis = new Redis(url!, { connectTimeout: 3_000, maxRetriesPerRequest: 1, retryStrategy: () => null });
    // Set but unreachable is a failure, not a skip.
    expect(await redis.ping()).toBe('PONG');
  });

  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(queues.splice(0).map((queue) => queue.close()));
    for (const prefix of prefixes.splice(0)) {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
  });

  afterAll(async () => {
    await redis?.quit();
  });

  it('refuses bad options before connecting', () => {
    expect(() => new BullMqRunQueue({ url: 'http://127.0.0.1:6379' })).toThrow(/redis:\/\//);
    expect(() => new BullMqRunQueue({ concurrency: 0 })).toThrow(/concurrency/);
    expect(() => new BullMqRunQueue({ prefix: 'a b' })).toThrow(/prefix/);
    expect(() => new BullMqRunQueue({ maxStalledCount: -1 })).toThrow(/maxStalledCount/);
  });

  it('executes every job once with at most `concurrency` handlers at a time; a queued duplicate is a no-op', async () => {
    const prefix = newPrefix();
    const queue = make({ prefix, concurrency: 2 });
    let current = 0;
    let peak = 0;
    const done: string[] = [];
    const jobs = Array.from({ length: 6 }, (_, i) => ({ runId: `run${i}`, teamId: 'team' }));
    for (const job of jobs) await queue.enqueue(job);
    await queue.enqueue(jobs[0]);
    await queue.process(async (job) => {
      current += 1;
      peak = Math.max(peak, current);
      await sleep(120);
      current -= 1;
      done.push(job.runId);
    });
    await waitFor('six runs', () => (done.length >= 6 ? true : undefined));
    await sleep(300);
    expect(done.sort()).toEqual(jobs.map((job) => job.runId).sort());
    expect(peak).toBe(2);
  });

  it('runs a run again when it is enqueued after it finished (a continuation), and once more when enqueued while executing', async () => {
    const prefix = newPrefix();
    const host = make({ prefix });
    const worker = make({ prefix, concurrency: 1 });
    const calls: string[] = [];
    let release: (() => void) | undefined;
    await worker.process(async (job) => {
      calls.push(job.runId);
      if (calls.length === 2) await new Promise<void>((resolve) => (release = resolve));
    });
    const job: RunJob = { runId: 'cont', teamId: 'team' };
    await host.enqueue(job);
    await waitFor('first execution', () => (calls.length === 1 ? true : undefined));
    await sleep(200);
    await host.enqueue(job); // after completion: a continuation
    await waitFor('second execution', () => (release ? true : undefined));
    await host.enqueue(job); // while executing: once more afterwards
    await host.enqueue(job); // still executing: the same request, not a third
    release!();
    await waitFor('third execution', () => (calls.length === 3 ? true : undefined));
    await sleep(500);
    expect(calls).toEqual(['cont', 'cont', 'cont']);
  });

  it('shares capacity between teams: a burst of one team does not make another team wait behind it', async () => {
    const prefix = newPrefix();
    const queue = make({ prefix, concurrency: 1 });
    for (let i = 1; i <= 5; i++) await queue.enqueue({ runId: `a${i}`, teamId: 'burst' });
    for (let i = 1; i <= 2; i++) await queue.enqueue({ runId: `b${i}`, teamId: 'quiet' });
    const order: string[] = [];
    await queue.process(async (job) => {
      order.push(job.runId);
    });
    await waitFor('seven runs', () => (order.length === 7 ? true : undefined));
    expect(order).toEqual(['a1', 'b1', 'a2', 'b2', 'a3', 'a4', 'a5']);
  });

  it('close waits for running handlers to finish, without aborting them', async () => {
    const prefix = newPrefix();
    const queue = make({ prefix, closeGraceMs: 5_000 });
    let finished = false;
    let abortedSeen = false;
    let started = false;
    await queue.process(async (_job, signal) => {
      started = true;
      await sleep(400);
      abortedSeen = signal.aborted;
      finished = true;
    });
    await queue.enqueue({ runId: 'slow', teamId: 'team' });
    await waitFor('handler start', () => (started ? true : undefined));
    await queue.close();
    expect(finished).toBe(true);
    expect(abortedSeen).toBe(false);
    await expect(queue.enqueue({ runId: 'late', teamId: 'team' })).rejects.toThrow(/closed/);
  });

  it('close past its grace period aborts the handler (queue_closing) and puts the run back for another worker', async () => {
    const prefix = newPrefix();
    const first = make({ prefix, closeGraceMs: 150 });
    let reason: unknown;
    let started = false;
    await first.process(async (_job, signal) => {
      started = true;
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      reason = signal.reason;
    });
    await first.enqueue({ runId: 'interrupted', teamId: 'team' });
    await waitFor('handler start', () => (started ? true : undefined));
    await first.close();
    expect((reason as { code?: string }).code).toBe('queue_closing');
    const second = make({ prefix });
    const again: string[] = [];
    await second.process(async (job) => {
      again.push(job.runId);
    });
    await waitFor('the run on the next worker', () => (again.length === 1 ? true : undefined));
    expect(again).toEqual(['interrupted']);
  });

  it('two worker processes share the jobs, each run executed exactly once', async () => {
    const prefix = newPrefix();
    const settings = { lockMs: 5_000, stalledMs: 5_000, maxStalled: 1 };
    await Promise.all([startWorker(prefix, 'w1', settings), startWorker(prefix, 'w2', settings)]);
    const host = make({ prefix });
    const ids = Array.from({ length: 8 }, (_, i) => `share${i}-150`);
    for (const runId of ids) await host.enqueue({ runId, teamId: `team${ids.indexOf(runId) % 2}` });
    const log = await waitFor('eight runs done', async () => {
      const entries = await readLog(prefix);
      return entries.filter((e) => e.event === 'done').length === 8 ? entries : undefined;
    }, 30_000);
    const done = log.filter((e) => e.event === 'done');
    expect(done.map((e) => e.runId).sort()).toEqual([...ids].sort());
    expect(new Set(done.map((e) => e.worker))).toEqual(new Set(['w1', 'w2']));
    expect(log.filter((e) => e.event === 'start')).toHaveLength(8);
  }, 90_000);

  it('kill -9 of a worker mid-run hands the run to the other worker after the stalled interval', async () => {
    const prefix = newPrefix();
    const settings = { lockMs: 1_000, stalledMs: 500, maxStalled: 1 };
    const [w1, w2] = await Promise.all([startWorker(prefix, 'w1', settings), startWorker(prefix, 'w2', settings)]);
    const workers = { w1, w2 };
    const host = make({ prefix });
    await host.enqueue({ runId: 'victim-2500', teamId: 'team' });
    const first = await waitFor('the run to start', async () => (await readLog(prefix)).find((e) => e.event === 'start'));
    const killedAt = Date.now();
    workers[first.worker as 'w1' | 'w2'].kill('SIGKILL');
    const survivor = first.worker === 'w1' ? 'w2' : 'w1';
    const second = await waitFor('the run on the surviving worker', async () => (await readLog(prefix)).find((e) => e.event === 'start' && e.worker === survivor), 20_000);
    expect(second.runId).toBe('victim-2500');
    expect(second.aborted).toBe(false);
    // Not before the lock expired; soon after (lock + two stalled checks, with slack for a busy machine).
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(500);
    const done = await waitFor('the run to finish', async () => (await readLog(prefix)).find((e) => e.event === 'done'), 20_000);
    expect(done.worker).toBe(survivor);
  }, 90_000);

  it('gives up on a run whose workers keep dying: the next worker gets an aborted signal (run_worker_lost)', async () => {
    const prefix = newPrefix();
    const settings = { lockMs: 1_000, stalledMs: 500, maxStalled: 0 };
    const [w1, w2] = await Promise.all([startWorker(prefix, 'w1', settings), startWorker(prefix, 'w2', settings)]);
    const workers = { w1, w2 };
    const host = make({ prefix });
    await host.enqueue({ runId: 'doomed-5000', teamId: 'team' });
    const first = await waitFor('the run to start', async () => (await readLog(prefix)).find((e) => e.event === 'start'));
    workers[first.worker as 'w1' | 'w2'].kill('SIGKILL');
    const survivor = first.worker === 'w1' ? 'w2' : 'w1';
    const second = await waitFor('the hand-out to the surviving worker', async () => (await readLog(prefix)).find((e) => e.event === 'start' && e.worker === survivor), 20_000);
    expect(second.aborted).toBe(true);
    expect(second.reason).toBe('run_worker_lost');
  }, 90_000);
});
