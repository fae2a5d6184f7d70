import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entityManagerServiceIdentifier, preparedStatementsServiceIdentifier, type PreparedStatements } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, createProject, type Actor } from './documents.fixtures.js';
import { wf } from './runs.fixtures.js';

/**
 * What one trivial run (input → code → output through `POST /block/{bid}/api` with
 * `stream: false`, the benchmark's workflow) costs the database: every SQL statement the host
 * sends while the run is accepted, executed and answered is counted, so the cheap path cannot
 * silently regress. The budget (docs/runs.md, "What a run costs"): the Block API's lookups (2;
 * the deployed version is kept in memory), the credit hold with the run record (1 transaction),
 * the claim (1 transaction), and the final record with every event, `run_complete` and the
 * settlement (1 transaction). The input and code blocks need no checkpoint of their own.
 */

type Json = Record<string, any>;

const flow = wf.doc(wf.input('n', { type: 'number', required: true }), wf.code('calc', 'return inputs.n * 2;'), wf.output('out', 'bench={{ calc }}'));

describe.each(testDatabases())('statements of one trivial run on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let bid: string;
    let trace: { sql: string[] } | null = null;

    beforeAll(async () => {
      t = await startTestHost(db, transport);
      owner = await actor(t);
      const project = await createProject(t, owner.token, { access: 'team' });
      const created = await t.request('POST', `/block/${project.id}`, { token: owner.token, body: { name: 'Counted flow', type: 'workflow', content: flow } });
      expect(created.status, created.text).toBe(201);
      bid = created.body.id;
      expect((await t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'public' } })).status).toBe(201);
      const em = t.kernel.container.get(entityManagerServiceIdentifier);
      const knex = (em.getConnection() as unknown as { getKnex(): { on(event: 'query', listener: (query: { sql: string }) => void): void } }).getKnex();
      knex.on('query', (query) => trace?.sql.push(query.sql));
      // Prepared statements (the event log's rows) do not pass through knex: counted here.
      const statements = t.kernel.container.get(preparedStatementsServiceIdentifier) as { -readonly [K in keyof PreparedStatements]: PreparedStatements[K] };
      for (const method of ['all', 'first', 'run'] as const) {
        const inner = statements[method].bind(statements) as (...args: unknown[]) => Promise<never>;
        statements[method] = ((statement: { text: string }, ...rest: unknown[]) => {
          trace?.sql.push(statement.text);
          return inner(statement, ...rest);
        }) as never;
      }
    });
    afterAll(() => t?.close());

    async function counted(): Promise<{ body: Json; sql: string[] }> {
      trace = { sql: [] };
      const r = await t.request('POST', `/block/${bid}/api`, { body: { stream: false, inputs: { n: 21 } } });
      const sql = trace.sql;
      trace = null;
      expect(r.status, r.text).toBe(200);
      return { body: r.body, sql };
    }

    it('stays within its statement and transaction budget, and the answer is the stored run', async () => {
      // The first runs create the team's billing records and warm the sandbox.
      for (let i = 0; i < 2; i++) expect((await counted()).body).toMatchObject({ status: 'completed', output: 'bench=42' });
      // Background jobs (expiry, lost-run recovery) can only add statements: the cheapest of three runs is the run's own cost.
      const runs = [await counted(), await counted(), await counted()];
      const { body, sql } = runs.reduce((a, b) => (b.sql.length < a.sql.length ? b : a));
      const report = sql.map((s, i) => `${i + 1}. ${s.slice(0, 120)}`).join('\n');
      const count = (pattern: RegExp) => sql.filter((s) => pattern.test(s)).length;

      expect(body).toMatchObject({ status: 'completed', output: 'bench=42', timedOut: false, error: null });
      expect(body.sessions.map((s: Json) => s.status)).toEqual(['completed', 'completed', 'completed']);
      // Each transaction is a commit (SQLite: a sync of the WAL, shared with the other runs' writes of the moment).
      expect(count(/^begin/i), report).toBeLessThanOrEqual(3);
      // The event log is written once, with the final record, and never read back for a run executed here.
      expect(count(/^insert into .run_events./i), report).toBe(1);
      expect(count(/^select .* from .run_events./i), report).toBe(0);
      // The run: inserted, claimed (from memory, not read back), the final record.
      expect(count(/^insert into .runs./i), report).toBe(1);
      expect(count(/^update .runs./i), report).toBe(2);
      expect(count(/^select .* from .runs./i), report).toBe(0);
      // Billing: no existence count of the team's subscription once it exists; one reservation, one settlement.
      expect(count(/billing_subscriptions/i), report).toBe(0);
      expect(count(/^insert into .billing_credit_ledger./i), report).toBe(2);
      // PostgreSQL also takes the team's share lock in each billing transaction.
      expect(sql.length, report).toBeLessThanOrEqual(db.name === 'postgres' ? 29 : 27);

      // The answer given from memory is the stored run.
      const stored = await t.request('GET', `/documents/${bid}/runs/${body.runId}`, { token: owner.token });
      expect(stored.status).toBe(200);
      expect(stored.body).toMatchObject({ status: 'completed', output: body.output, duration: body.duration, usedCredits: 1, globalCtx: body.globalCtx, sessions: body.sessions });
    });
  });
});
