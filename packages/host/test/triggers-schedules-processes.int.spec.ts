import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { describeWithRedis, testDatabases, type TestHost } from '@trellis/test-support';
import { sharedDatabase, wf } from './runs.fixtures.js';
import { overHttp, spawnTrellis, waitFor, type TrellisProcess } from './support/processes.js';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 420_000 });

/**
 * The deployment the issue names: PostgreSQL and Redis, two `trellis start` host processes
 * (`runs.execute: false`, BullMQ queue) and two `trellis worker` processes, each an OS process of
 * its own. A schedule due every second for 30 s starts exactly one run per due second, executed
 * by the workers; then the missed-time policies, with a due time left pending in Redis by a
 * downtime.
 */

type Json = Record<string, any>;
type Child = TrellisProcess;

const flow = wf.doc(wf.input('n', { type: 'number', required: true }), wf.code('calc', 'return inputs.n * 7;'), wf.output('out', '{{ calc }}'));
const postgres = testDatabases().filter((db) => db.name === 'postgres');

describeWithRedis('schedules on two host processes and two BullMQ worker processes', (redisUrl) => {
  if (postgres.length === 0) it.skip('needs TRELLIS_TEST_POSTGRES_URL', () => undefined);
  describe.each(postgres)('on $name', (base) => {
    const db = sharedDatabase(base);
    const redisPrefix = `trellis-test-${process.pid}-${randomUUID()}:`;
    const children: Child[] = [];
    let api: TestHost['request'];
    let token: string;
    let bid: string;
    let queue: Queue;

    beforeAll(async () => {
      const url = (await db.create()).url;
      const env = {
        TRELLIS__AUTH__JWT_SECRET: 'q'.repeat(40),
        TRELLIS_LOG_FORMAT: 'json',
        TRELLIS__ADAPTERS__QUEUE: 'bullmq',
        TRELLIS__ADAPTERS__REDIS_URL: redisUrl,
        TRELLIS__ADAPTERS__REDIS_PREFIX: redisPrefix,
      };
      const host = (extra: Record<string, string> = {}) =>
        spawnTrellis(['start', '--port', '0', '--host', '127.0.0.1', '--transport', 'node', '--database', url], { ...env, TRELLIS__RUNS__EXECUTE: 'false', ...extra }, /listening on (http:\/\/[^\s"]+)/);
      const worker = () => spawnTrellis(['worker', '--database', url, '--concurrency', '4'], env, /Trellis worker is executing runs/);
      // The first host applies the migrations; the others start on the migrated database.
      const first = await host();
      children.push(first);
      children.push(...(await Promise.all([host({ TRELLIS__DATABASE__MIGRATE_ON_START: 'false' }), worker(), worker()])));
      const baseUrl = first.match[1]!.replace(/\/$/, '');
      const t = overHttp(baseUrl);
      api = t.request;
      const registered = await api('POST', '/auth/register', { body: { email: `sched-${randomUUID()}@example.com`, password: 'schedules-password-123' } });
      expect(registered.status, registered.text).toBe(201);
      token = registered.body.token;
      const project = await api('POST', '/project', { token, body: { name: `Processes ${randomUUID()}`, tools: [], access: 'private' } });
      expect(project.status, project.text).toBe(201);
      const block = await api('POST', `/block/${project.body.id}`, { token, body: { name: `Every second ${randomUUID()}`, type: 'workflow', content: flow } });
      expect(block.status, block.text).toBe(201);
      bid = block.body.id;
      expect((await api('POST', `/block/${bid}/deploy`, { token, body: { access: 'private' } })).status).toBe(201);
      const queuePrefix = `${redisPrefix}queue`.replace(/[^A-Za-z0-9_.-]/g, '-').slice(-100);
      const redis = new URL(redisUrl);
      queue = new Queue('schedules', { connection: { host: redis.hostname, port: Number(redis.port || 6379), db: Number(redis.pathname.slice(1) || 0) }, prefix: queuePrefix });
    });
    afterAll(async () => {
      await queue?.close();
      await Promise.all(children.map((child) => child.stop()));
      await db.cleanup();
    });

    /** Every recorded due time of a schedule: pages until a short one (the count runs beside the page query). */
    const fires = async (id: string): Promise<Json[]> => {
      const all: Json[] = [];
      for (let page = 1; ; page++) {
        const r = await api('GET', `/schedules/${id}/runs?size=100&page=${page}`, { token });
        expect(r.status).toBe(200);
        all.push(...r.body.items);
        if (r.body.items.length < 100) return all;
      }
    };
    const runsOfBlock = async (): Promise<Json[]> => {
      const all: Json[] = [];
      for (let page = 1; ; page++) {
        const r = await api('GET', `/documents/${bid}/runs?size=100&page=${page}`, { token });
        expect(r.status).toBe(200);
        all.push(...r.body.items);
        if (r.body.items.length < 100) return all;
      }
    };

    it('a schedule due every second for 30 s starts exactly one run per due second', async () => {
      const created = await api('POST', `/block/${bid}/schedules`, { token, body: { cron: '* * * * * *', inputs: { n: 6 }, name: 'every second, 30 s' } });
      expect(created.status, created.text).toBe(201);
      const from = Date.now();
      const id = created.body.id;
      onTestFinished(async () => void (await api('DELETE', `/schedules/${id}`, { token })));
      await new Promise((resolve) => setTimeout(resolve, 30_000));
      const paused = await api('POST', `/schedules/${id}/pause`, { token });
      const to = Date.now();
      expect(paused.body.paused).toBe(true);
      // A due time taken just before the pause may still be recorded: wait for the count to settle.
      let done = await fires(id);
      for (let settled = 0; settled < 3; ) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const again = await fires(id);
        settled = again.length === done.length ? settled + 1 : 0;
        done = again;
      }
      const seconds = done.map((f) => Date.parse(f.dueAt) / 1000).sort((x, y) => x - y);
      // Whole seconds, none twice, none missing between the first and the last.
      expect(seconds.every((s) => Number.isInteger(s))).toBe(true);
      expect(new Set(seconds).size).toBe(seconds.length);
      const missing = Array.from({ length: seconds.at(-1)! - seconds[0]! + 1 }, (_, i) => seconds[0]! + i).filter((s) => !seconds.includes(s));
      expect(missing.map((s) => new Date(s * 1000).toISOString()), `due seconds without a run (created ${new Date(from).toISOString()})`).toEqual([]);
      // The due seconds between creation and pause, give or take the one at each boundary.
      const window = Math.floor(to / 1000) - Math.ceil(from / 1000) + 1;
      expect(seconds.length).toBeGreaterThanOrEqual(window - 2);
      expect(seconds.length).toBeLessThanOrEqual(window + 1);
      expect(seconds.length).toBeGreaterThanOrEqual(28);
      expect(seconds[0]! * 1000).toBeGreaterThanOrEqual(from - 1000);
      expect(done.every((f) => typeof f.runId === 'string' && f.error === null)).toBe(true);
      // Exactly those runs, executed by the workers (the hosts execute none).
      const runs = await waitFor(runsOfBlock, (items) => items.length >= done.length && items.every((r) => r.status === 'completed'), 'the scheduled runs to complete', 120_000);
      expect(runs).toHaveLength(done.length);
      expect(new Set(runs.map((r) => r.id))).toEqual(new Set(done.map((f) => f.runId)));
      expect(runs.every((r) => r.output === 42 && r.inputs.n === 6)).toBe(true);
    });

    it('a due time left pending in Redis by a downtime: skip drops it, runOnce runs it once', async () => {
      const make = async (missed: string) => {
        const r = await api('POST', `/block/${bid}/schedules`, { token, body: { cron: '0 0 1 1 *', inputs: { n: 1 }, missed } });
        expect(r.status, r.text).toBe(201);
        onTestFinished(async () => void (await api('DELETE', `/schedules/${r.body.id}`, { token })));
        return r.body.id as string;
      };
      const skip = await make('skip');
      const once = await make('runOnce');
      // What a scheduler leaves behind when no process ran at its due time: its job, due an hour
      // ago (past the default 60 s grace; its due time is the job's timestamp plus its delay, none), taken
      // by a worker as soon as one runs again.
      const late = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
      const lateJobs = [skip, once].map((scheduleId) => queue.add('due', { scheduleId }, { jobId: `downtime-${scheduleId}`, timestamp: late }));
      await Promise.all(lateJobs);
      // Both taken: only the two schedulers' next (future) jobs are left, delayed.
      await waitFor(async () => (await queue.getJobCounts('wait', 'active', 'prioritized')) as Record<string, number>, (counts) => (counts.wait ?? 0) + (counts.active ?? 0) + (counts.prioritized ?? 0) === 0, 'the late jobs to be taken');
      const caught = await waitFor(() => fires(once), (list) => list.length === 1, 'the runOnce fire');
      expect(caught[0]).toMatchObject({ dueAt: new Date(late).toISOString(), error: null });
      const run = await waitFor(() => api('GET', `/documents/${bid}/runs/${caught[0]!.runId}`, { token }), (r) => r.body.status === 'completed', 'the catch-up run', 60_000);
      expect(run.body.output).toBe(7);
      // The skipped one recorded nothing, and its schedule still waits for its next due time.
      expect(await fires(skip)).toEqual([]);
      const kept = await api('GET', `/schedules/${skip}`, { token });
      expect(Date.parse(kept.body.nextDueAt)).toBeGreaterThan(Date.now());
    });
  });
});
