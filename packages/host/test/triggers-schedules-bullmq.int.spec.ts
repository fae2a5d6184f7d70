import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { provide, scheduleTimerServiceIdentifier } from '@trellis/core';
import { BullMqScheduleTimer } from '@trellis/queue-bullmq';
import { describeWithRedis, startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, createProject, eventually, type Actor } from './documents.fixtures.js';
import { sharedDatabase, wf } from './runs.fixtures.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/**
 * Schedules through BullMQ job schedulers: two hosts share one database and one Redis, each
 * with its own BullMQ worker on the schedules queue; the database pass is off (a bound timer
 * replaces it), so every run comes from a job of the scheduler, and each due time starts one.
 */

type Json = Record<string, any>;

const flow = wf.doc(wf.input('n', { type: 'number', required: true }), wf.code('calc', 'return inputs.n * 3;'), wf.output('out', '{{ calc }}'));

describeWithRedis('schedules through BullMQ job schedulers', (redisUrl) => {
  describe.each(testDatabases())('on $name', (base) => {
    const db = sharedDatabase(base);
    const prefix = `trellis-test-${process.pid}-${randomUUID()}`;
    let a: TestHost;
    let b: TestHost;
    let owner: Actor;
    let bid: string;
    let timers: BullMqScheduleTimer[] = [];

    beforeAll(async () => {
      timers = [new BullMqScheduleTimer({ url: redisUrl, prefix }), new BullMqScheduleTimer({ url: redisUrl, prefix })];
      a = await startTestHost(db, 'node', { adapters: [provide(scheduleTimerServiceIdentifier, timers[0]!)] });
      b = await startTestHost(db, 'node', { adapters: [provide(scheduleTimerServiceIdentifier, timers[1]!)] });
      owner = await actor(a);
      const projectId = (await createProject(a, owner.token)).id;
      bid = (await a.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: `Bull ${randomUUID()}`, type: 'workflow', content: flow } })).body.id;
      expect((await a.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'private' } })).status).toBe(201);
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
      await db.cleanup();
    });

    const fires = async (id: string): Promise<Json[]> => (await a.request('GET', `/schedules/${id}/runs?size=100`, { token: owner.token })).body.items;

    it('a per-second schedule for 10 s: one job scheduler, one run per due time, none after pause', async () => {
      const created = await a.request('POST', `/block/${bid}/schedules`, { token: owner.token, body: { cron: '* * * * * *', inputs: { n: 2 } } });
      expect(created.status, created.text).toBe(201);
      const id = created.body.id;
      expect(await timers[0]!.scheduled()).toEqual([id]);
      await eventually(() => fires(id), (list) => list.length >= 10, '10 due times');
      const paused = await b.request('POST', `/schedules/${id}/pause`, { token: owner.token });
      expect(paused.body.paused).toBe(true);
      expect(await timers[0]!.scheduled()).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const done = await fires(id);
      const seconds = done.map((f) => Date.parse(f.dueAt) / 1000).sort((x, y) => x - y);
      expect(seconds.every((s) => Number.isInteger(s))).toBe(true);
      expect(new Set(seconds).size).toBe(seconds.length);
      expect(seconds.at(-1)! - seconds[0]! + 1).toBe(seconds.length);
      expect(done.every((f) => typeof f.runId === 'string' && f.error === null)).toBe(true);
      const runs = await eventually(
        async () => (await a.request('GET', `/documents/${bid}/runs?size=100`, { token: owner.token })).body.items as Json[],
        (items) => items.length === done.length && items.every((r) => r.status === 'completed'),
        'scheduled runs',
      );
      expect(new Set(runs.map((r) => r.id))).toEqual(new Set(done.map((f) => f.runId)));
      expect(runs.every((r) => r.output === 6)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      expect((await fires(id)).length).toBe(done.length);

      // Resume puts the scheduler back; delete removes it.
      expect((await a.request('POST', `/schedules/${id}/resume`, { token: owner.token })).body.paused).toBe(false);
      expect(await timers[0]!.scheduled()).toEqual([id]);
      expect((await a.request('DELETE', `/schedules/${id}`, { token: owner.token })).status).toBe(204);
      expect(await timers[0]!.scheduled()).toEqual([]);
    });
  });
});
