import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entityManagerServiceIdentifier, preparedStatementsServiceIdentifier, type PreparedStatements } from '@trellis/core';
import { startTestKernel, testDatabases, type TestKernel } from '@trellis/test-support';
import { Run } from '../src/modules/runs/entities/run.entity.js';
import { readRun } from '../src/modules/runs/queries.js';

/**
 * The prepared read of a whole run record (what a process reads of a run it executes but did not
 * accept) answers what the ORM's read does, field by field, on both databases: JSON columns
 * parsed (strings, arrays, objects, null), datetimes as dates, booleans, integers, nullable text.
 */
describe.each(testDatabases())('the prepared read of a run on $name', (db) => {
  let t: TestKernel;
  let root: EntityManager;
  let sql: PreparedStatements;

  beforeAll(async () => {
    t = await startTestKernel(db);
    root = t.kernel.container.get(entityManagerServiceIdentifier);
    sql = t.kernel.container.get(preparedStatementsServiceIdentifier);
  });
  afterAll(() => t?.close());

  const record = (overrides: Partial<Run>): Run => {
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    return {
      id: randomUUID(), documentId: null, projectId: null, teamId: null, userId: randomUUID(), source: 'api', version: 'v3', status: 'waiting',
      inputs: { n: 21, list: [1, 'two', null], nested: { 'ü': true } }, content: { type: 'doc', content: [] }, cursor: 2,
      sessions: [{ blockId: 'a', status: 'completed' }], ctx: [{ a: 1 }], output: 'a JSON string', error: null, usage: { models: {}, sandboxMs: 3 },
      onError: 'stop', timeoutSeconds: 30, timedOut: true, reservationId: randomUUID(), reservedCredits: 4, usedCredits: null, seqCeiling: 4096,
      attempt: 2, waiting: { blockId: 'ask', question: '?' }, answer: null, cancelRequested: true, heartbeatAt: now, startedAt: now,
      deadlineAt: new Date(now.getTime() + 30_000), finishedAt: null, durationMs: null, idempotencyKey: 'key-1', idempotencyScope: null,
      requestHash: null, parentRunId: null, parentBlockId: 'block-7', depth: 2, budgetCredits: 50, budgetRootId: null, createdAt: now, updatedAt: now,
      ...overrides,
    } as Run;
  };

  it('answers every field as the ORM reads it', async () => {
    for (const run of [record({}), record({ output: [1, { b: 'x' }], inputs: {}, timedOut: false, cancelRequested: false, version: null, attempt: 0, usedCredits: 0, finishedAt: new Date(), durationMs: 1234 })]) {
      await root.fork().insert(Run, run);
      const viaOrm = await root.fork().findOneOrFail(Run, { id: run.id });
      const prepared = await readRun(sql, run.id);
      expect(prepared).toBeDefined();
      for (const field of Object.keys(run) as (keyof Run)[]) {
        expect(prepared![field], field).toEqual(viaOrm[field]);
      }
      expect(prepared).toMatchObject({ output: run.output, inputs: run.inputs, version: run.version, timedOut: run.timedOut });
    }
    expect(await readRun(sql, randomUUID())).toBeUndefined();
  });
});
