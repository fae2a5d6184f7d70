import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, type Actor } from './documents.fixtures.js';
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
    // Each loop is stopped by its run's timeout (the wait for a worker counts against it): 20 s, as
    // the victim's five runs took over 8 s at load 25 (they end in well under a second when quiet).
    const attack = Array.from({ length: 8 }, (_, i) => start(attacker, loops.documentId, { timeout: 20 }).then((r) => {
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
    const loopAnswers = await Promise.all(attack);
    expect(order.slice(0, 5)).toEqual(['victim0', 'victim1', 'victim2', 'victim3', 'victim4']);
    for (const answer of loopAnswers) {
      expect(answer.body.status).toBe('timed_out');
      expect(answer.body.error).toMatchObject({ code: 'run_timeout' });
    }
  }, 90_000);
});
