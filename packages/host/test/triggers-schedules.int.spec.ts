import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { Schedule } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, createProject, eventually, type Actor } from './documents.fixtures.js';
import { sharedDatabase, wf } from './runs.fixtures.js';
import { trellis } from './support/cli.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/**
 * Schedules on hosts sharing one database: two kernels in this process and a `trellis start` in
 * another OS process all look for due schedules; each due time of a per-second schedule starts
 * exactly one run. Pause, resume and delete through the API and `trellis schedules`; the
 * missed-time policies after downtime.
 */

const cliBin = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));

/** `trellis start` (the built CLI) on `url` in a child process, with a fast schedule pass, once it listens. */
async function startProcess(url: string): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  if (!existsSync(cliBin)) throw new Error(`${cliBin} is missing: build the workspace first (pnpm build)`);
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('TRELLIS_')) env[name] = value;
  Object.assign(env, { TRELLIS__TRIGGERS__SCHEDULES__TICK_MS: '150', TRELLIS__TRIGGERS__SCHEDULES__GRACE_SECONDS: '5', TRELLIS__AUTH__JWT_SECRET: 'p'.repeat(40), TRELLIS_LOG_FORMAT: 'json' });
  const child = spawn(process.execPath, [cliBin, 'start', '--port', '0', '--host', '127.0.0.1', '--transport', 'node', '--database', url], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`trellis start did not listen: ${output}`)), 90_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on http:\/\//.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    void exited.then(() => reject(new Error(`trellis start exited: ${output}`)));
  });
  return {
    child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

type Json = Record<string, any>;

const flow = wf.doc(wf.input('n', { type: 'number', required: true }), wf.code('calc', 'return inputs.n * 2;'), wf.output('out', '{{ calc }}'));
const config = { triggers: { schedules: { tickMs: 150, graceSeconds: 5 } } };
let counter = 0;

describe.each(testDatabases())('schedules on two hosts on $name', (base) => {
  const db = sharedDatabase(base);
  let a: TestHost;
  let b: TestHost;
  let other: Awaited<ReturnType<typeof startProcess>>;
  let url: string;
  let owner: Actor;
  let outsider: Actor;
  let bid: string;

  beforeAll(async () => {
    a = await startTestHost(db, 'node', { config });
    b = await startTestHost(db, 'node', { config });
    url = (await db.create()).url;
    other = await startProcess(url);
    owner = await actor(a);
    outsider = await actor(a);
    const projectId = (await createProject(a, owner.token, { access: 'private' })).id;
    bid = (await a.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: `Timed ${++counter}`, type: 'workflow', content: flow } })).body.id;
    expect((await a.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'private' } })).status).toBe(201);
  });
  afterAll(async () => {
    await other?.stop();
    await b?.close();
    await a?.close();
    await db.cleanup();
  });

  const fires = async (id: string): Promise<Json[]> => {
    const all: Json[] = [];
    for (let page = 1; ; page++) {
      const r = await a.request('GET', `/schedules/${id}/runs?size=100&page=${page}`, { token: owner.token });
      expect(r.status).toBe(200);
      all.push(...r.body.items);
      // The count and the page are two queries: a fire inserted between them makes `total` one more
      // than the rows, so a short page (not the total) is the end.
      if (r.body.items.length < 100) return all;
    }
  };

  it('a schedule due every second for 10 s starts exactly one run per due time across three hosts in two processes', async () => {
    const created = await a.request('POST', `/block/${bid}/schedules`, { token: owner.token, body: { cron: '* * * * * *', inputs: { n: 4 }, name: 'every second' } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    // A failure below must not leave a per-second schedule spending the team's credits for the tests after it.
    onTestFinished(async () => void (await a.request('DELETE', `/schedules/${id}`, { token: owner.token })));
    expect(created.body).toMatchObject({ blockId: bid, timezone: 'UTC', missed: 'skip', paused: false, inputs: { n: 4 } });
    await eventually(() => fires(id), (list) => list.length >= 10, '10 due times');
    // Paused through the other host; a pass that began before sees the cursor it moved, nothing more.
    const paused = await b.request('POST', `/schedules/${id}/pause`, { token: owner.token });
    expect(paused.body).toMatchObject({ paused: true, nextDueAt: null });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const done = await fires(id);
    const seconds = done.map((f) => Date.parse(f.dueAt) / 1000).sort((x, y) => x - y);
    // One row per due second, none skipped, none twice, each with its run.
    expect(new Set(seconds).size).toBe(seconds.length);
    expect(seconds.at(-1)! - seconds[0]! + 1).toBe(seconds.length);
    expect(done.every((f) => typeof f.runId === 'string' && f.error === null)).toBe(true);
    // And the runs: exactly those, each of the deployed version with the schedule's inputs.
    const runs = await eventually(
      async () => (await a.request('GET', `/documents/${bid}/runs?size=100`, { token: owner.token })).body.items as Json[],
      (items) => items.length === done.length && items.every((r) => r.status === 'completed'),
      'scheduled runs',
    );
    expect(new Set(runs.map((r) => r.id))).toEqual(new Set(done.map((f) => f.runId)));
    expect(runs.every((r) => r.source === 'schedule' && r.version === '1' && r.output === 8 && r.inputs.n === 4)).toBe(true);
    // Nothing more while paused.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect((await fires(id)).length).toBe(done.length);
  });

  it('API: list, get, change, pause, resume, delete; errors; outsiders see nothing', async () => {
    const created = await a.request('POST', `/block/${bid}/schedules`, { token: owner.token, body: { cron: '0 9 * * 1-5', timezone: 'Europe/Paris', inputs: { n: 1 }, paused: true } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    expect(created.body.nextDueAt).toBeNull();
    expect((await a.request('GET', `/block/${bid}/schedules`, { token: owner.token })).body.items.map((s: Json) => s.id)).toContain(id);
    expect((await a.request('GET', '/schedules', { token: owner.token })).body.items.map((s: Json) => s.id)).toContain(id);
    expect((await a.request('GET', `/schedules?blockId=${bid}`, { token: owner.token })).body.total).toBeGreaterThan(0);
    const resumed = await a.request('POST', `/schedules/${id}/resume`, { token: owner.token });
    expect(resumed.body.paused).toBe(false);
    // 09:00 in Paris is 07:00 or 08:00 UTC.
    expect(new Date(resumed.body.nextDueAt).getUTCHours()).toBeGreaterThanOrEqual(7);
    expect(new Date(resumed.body.nextDueAt).getUTCHours()).toBeLessThanOrEqual(8);
    const changed = await a.request('PATCH', `/schedules/${id}`, { token: owner.token, body: { cron: '30 6 * * *', timezone: 'UTC', missed: 'runOnce' } });
    expect(changed.body).toMatchObject({ cron: '30 6 * * *', missed: 'runOnce' });
    expect(new Date(changed.body.nextDueAt).toISOString()).toMatch(/T06:30:00\.000Z$/);

    for (const [body, code] of [
      [{ cron: 'every day' }, 'invalid_cron'],
      [{ cron: '* * * * *', timezone: 'Mars/Olympus' }, 'invalid_timezone'],
      [{ cron: '* * * * *', missed: 'sometimes' }, 'validation_failed'],
    ] as const) {
      const r = await a.request('POST', `/block/${bid}/schedules`, { token: owner.token, body });
      expect(r.status).toBe(422);
      expect(r.body.error).toBe(code);
    }
    expect((await a.request('GET', `/schedules/${id}`, { token: outsider.token })).status).toBe(404);
    expect((await a.request('POST', `/schedules/${id}/pause`, { token: outsider.token })).status).toBe(404);
    expect((await a.request('POST', `/block/${bid}/schedules`, { token: outsider.token, body: { cron: '* * * * *' } })).status).toBe(404);
    expect((await a.request('DELETE', `/schedules/${id}`, { token: owner.token })).status).toBe(204);
    expect((await a.request('GET', `/schedules/${id}`, { token: owner.token })).status).toBe(404);
  });

  it('after downtime, skip drops missed due times and runOnce starts one run for them all', async () => {
    const make = async (missed: string) => (await a.request('POST', `/block/${bid}/schedules`, { token: owner.token, body: { cron: '0 0 1 1 *', inputs: { n: 5 }, missed } })).body.id as string;
    const skip = await make('skip');
    const once = await make('runOnce');
    // As if no process had run since mid-2024: the first of January of 2025 and 2026 were missed.
    const em = a.kernel.fork();
    for (const id of [skip, once]) await em.nativeUpdate(Schedule, { id }, { cursorAt: new Date('2024-06-01T00:00:00Z'), nextDueAt: new Date('2025-01-01T00:00:00Z') });
    const moved = (id: string) => eventually(() => a.request('GET', `/schedules/${id}`, { token: owner.token }), (r) => Date.parse(r.body.nextDueAt) > Date.now(), 'the cursor to move');
    await moved(skip);
    await moved(once);
    expect(await fires(skip)).toEqual([]);
    const caught = await fires(once);
    expect(caught).toHaveLength(1);
    expect(caught[0]).toMatchObject({ dueAt: '2026-01-01T00:00:00.000Z', error: null });
    const run = await eventually(() => a.request('GET', `/documents/${bid}/runs/${caught[0]!.runId}`, { token: owner.token }), (r) => r.body.status === 'completed', 'the catch-up run');
    expect(run.body.output).toBe(10);
    expect(run.body.source).toBe('schedule');
  });

  it('trellis schedules list, pause, resume and delete on the hosts\' database', async () => {
    const id = (await a.request('POST', `/block/${bid}/schedules`, { token: owner.token, body: { cron: '0 12 * * *', inputs: { n: 1 }, name: 'noon' } })).body.id as string;
    const listed = await trellis(['schedules', 'list', '-d', url, '--block', bid, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).items.map((s: Json) => s.id)).toContain(id);
    const text = await trellis(['schedules', 'list', '-d', url, '--active']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(id);
    expect(text.stdout).toContain('noon');

    const paused = await trellis(['schedules', 'pause', id, '-d', url]);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toContain(`Schedule ${id} is paused.`);
    expect((await a.request('GET', `/schedules/${id}`, { token: owner.token })).body.paused).toBe(true);
    const onlyPaused = await trellis(['schedules', 'list', '-d', url, '--paused', '--json']);
    expect(JSON.parse(onlyPaused.stdout).items.every((s: Json) => s.paused)).toBe(true);
    const resumed = await trellis(['schedules', 'resume', id, '-d', url, '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ id, paused: false });
    const deleted = await trellis(['schedules', 'delete', id, '-d', url]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await a.request('GET', `/schedules/${id}`, { token: owner.token })).status).toBe(404);

    const missing = await trellis(['schedules', 'pause', id, '-d', url]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('schedule_not_found');
    const bad = await trellis(['schedules', 'delete', 'not-an-id', '-d', url]);
    expect(bad.code).toBe(2);
  });
});
