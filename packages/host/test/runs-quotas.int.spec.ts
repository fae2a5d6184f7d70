import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, eventually, type Actor } from './documents.fixtures.js';
import { expectDense, wf, workflowDocument } from './runs.fixtures.js';
import { readSse } from './support/run-clients.js';

const QUOTA = 3_000;

// Issue 23: code blocks that emit in an endless loop, and teams that keep the sandbox busy. Over
// real sockets; no time is asserted (the machine is shared): the mechanisms are (quotas, the
// host answering, the order in which runs end).
describe.each(testDatabases())('output quotas and a fair sandbox on $name', (db) => {
  let t: TestHost;
  let attacker: Actor;
  let victim: Actor;
  beforeAll(async () => {
    t = await startTestHost(db, 'uws', {
      config: { runs: { maxBlockEvents: QUOTA, codeTimeoutMs: 60_000, sandboxWorkers: 2, sandboxWorkersPerTeam: 1 } } as never,
    });
    attacker = await actor(t);
    victim = await actor(t);
  });
  afterAll(() => t?.close());

  const start = (who: Actor, documentId: string, body: Record<string, unknown> = {}) =>
    t.request('POST', `/documents/${documentId}/run`, { token: who.token, body: { stream: false, ...body } });

  it('stops 8 concurrent emit loops at the block quota with output_limit_exceeded, stores no more than the quota, and the host answers throughout', async () => {
    const { documentId } = await workflowDocument(t, attacker.token, wf.doc(wf.code('flood', 'for (;;) emit("x")')));
    let running = true;
    const health: number[] = [];
    const probing = (async () => {
      while (running) {
        health.push((await fetch(`${t.url}/healthz`)).status);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const answers = await Promise.all(Array.from({ length: 8 }, () => start(attacker, documentId)));
    running = false;
    await probing;
    expect(health.length).toBeGreaterThan(0);
    expect(health.every((status) => status === 200)).toBe(true);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.body.status).toBe('failed');
      expect(answer.body.error).toMatchObject({ code: 'output_limit_exceeded' });
      expect(answer.body.error.message).toMatch(/runs\.maxBlockEvents/);
    }
    // The log of one of them: exactly the quota's chunks, then the block's failure.
    const { events } = await readSse(`${t.url}/documents/${documentId}/runs/${answers[0]!.body.runId}/events`, { token: attacker.token });
    expectDense(events.map((e) => e.seq));
    expect(events.filter((e) => e.type === 'block_chunk')).toHaveLength(QUOTA);
    expect(events.find((e) => e.type === 'block_error')!.data).toMatchObject({ code: 'output_limit_exceeded' });
  });

  it('runs another team\'s trivial code while one team keeps 8 endless loops waiting for the sandbox: the victim\'s runs end first', async () => {
    const loops = await workflowDocument(t, attacker.token, wf.doc(wf.code('spin', 'for (;;) {}')));
    const trivial = await workflowDocument(t, victim.token, wf.doc(wf.code('sum', 'return 1 + 1')));
    const attackersTrivial = await workflowDocument(t, attacker.token, wf.doc(wf.code('sum', 'return 1 + 1')));
    // Both sandbox workers started (one per team at once), so no run below waits for a worker to load.
    await Promise.all([start(attacker, attackersTrivial.documentId), start(victim, trivial.documentId)]);
    const order: string[] = [];
    // The loops' deadline is far past the victim's five runs (over 8 s at load 25, well under a
    // second when quiet): they end when cancelled once the victim's runs ended, or, had the victim
    // waited for them, at that deadline, before the victim's.
    const attack = Array.from({ length: 8 }, (_, i) => start(attacker, loops.documentId, { timeout: 60 }).then((r) => {
      order.push(`loop${i}`);
      return r;
    }));
    // The loops took their team's worker (and their team's share of the run slots).
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let i = 0; i < 5; i++) {
      const answer = await start(victim, trivial.documentId);
      expect(answer.body).toMatchObject({ status: 'completed', output: 2 });
      order.push(`victim${i}`);
    }
    expect(order).toEqual(['victim0', 'victim1', 'victim2', 'victim3', 'victim4']);
    const runs = await eventually(async () => (await t.request('GET', `/documents/${loops.documentId}/runs`, { token: attacker.token })).body.items as Array<{ id: string }>, (items) => items.length === 8, 'the 8 loops');
    for (const { id } of runs) expect((await t.request('POST', `/documents/${loops.documentId}/runs/${id}/cancel`, { token: attacker.token })).status).toBe(202);
    for (const answer of await Promise.all(attack)) expect(answer.body).toMatchObject({ status: 'cancelled', error: { code: 'run_cancelled' } });
  }, 90_000);

  it('stops 8 endless loops of one team at their run\'s deadline, the runs waiting for the team\'s worker or run slots included', async () => {
    const loops = await workflowDocument(t, attacker.token, wf.doc(wf.code('spin', 'for (;;) {}')));
    // One loop holds the team's worker, five wait for it and two for a run slot of the team (six of
    // eight). The wait for a worker counts against a run's timeout, so the six end together at 5 s
    // and the two queued ones (whose timeout counts from their start) 5 s later: about 10 s. Had
    // the wait not counted, the loops would have taken the worker in turn, 40 s, past the limit.
    const answers = await Promise.all(Array.from({ length: 8 }, () => start(attacker, loops.documentId, { timeout: 5 })));
    for (const answer of answers) {
      expect(answer.body.status).toBe('timed_out');
      expect(answer.body.error).toMatchObject({ code: 'run_timeout' });
    }
  }, 30_000);
});
