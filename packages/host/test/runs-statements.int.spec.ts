import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entityManagerServiceIdentifier, preparedStatementsServiceIdentifier, RunService, type PreparedStatements, type SqlStatement } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, createProject, type Actor } from './documents.fixtures.js';
import { wf } from './runs.fixtures.js';

/**
 * What one trivial run (input → code → output through `POST /block/{bid}/api` with
 * `stream: false`, the benchmark's workflow) costs the database: every SQL statement the host
 * sends while the run is accepted, executed and answered is counted, so the cheap path cannot
 * silently regress (the ORM's statements and the prepared ones). The budget (docs/runs.md, "What a
 * run costs"): the Block API's lookup (1 read of the block, its project and its document for a
 * caller without a credential; the deployed version is kept in memory), the credit
 * hold with the run record, stored already claimed when an in-process queue slot is free (1
 * transaction; on PostgreSQL 1 statement), and the final record with every event, `run_complete`
 * and the settlement (1 transaction; on PostgreSQL 1 statement). The input and code blocks need no
 * checkpoint of their own.
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
      // The background jobs that poll the database often (outbound webhook deliveries, knowledge
      // ingestion) look rarely here: a run that takes over a second on a loaded machine otherwise
      // counted their statements in each of the three runs measured (a 15 for a budget of 14).
      t = await startTestHost(db, transport, { config: { triggers: { outbound: { pollMs: 60_000 } }, knowledge: { ingestion: { pollIntervalMs: 600_000 } } } });
      owner = await actor(t);
      const project = await createProject(t, owner.token, { access: 'team' });
      const created = await t.request('POST', `/block/${project.id}`, { token: owner.token, body: { name: 'Counted flow', type: 'workflow', content: flow } });
      expect(created.status, created.text).toBe(201);
      bid = created.body.id;
      expect((await t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'public' } })).status).toBe(201);
      const em = t.kernel.container.get(entityManagerServiceIdentifier);
      const knex = (em.getConnection() as unknown as { getKnex(): { on(event: 'query', listener: (query: { sql: string }) => void): void } }).getKnex();
      knex.on('query', (query) => trace?.sql.push(query.sql));
      // Prepared statements run on the driver's connections, past knex's query event: counted here.
      const prepared = t.kernel.container.get(preparedStatementsServiceIdentifier) as { -readonly [K in keyof PreparedStatements]: PreparedStatements[K] };
      for (const method of ['all', 'first', 'run'] as const) {
        const original = prepared[method] as (statement: SqlStatement, ...rest: unknown[]) => Promise<never>;
        (prepared as unknown as Record<string, unknown>)[method] = (statement: SqlStatement, ...rest: unknown[]) => {
          trace?.sql.push(statement.text.replace(/\s+/g, ' ').trim());
          return original(statement, ...rest);
        };
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
      if (process.env.TRELLIS_PRINT_RUN_STATEMENTS) console.log(`${db.name} ${transport}:\n${report}`);

      expect(body).toMatchObject({ status: 'completed', output: 'bench=42', timedOut: false, error: null });
      expect(body.sessions.map((s: Json) => s.status)).toEqual(['completed', 'completed', 'completed']);
      // Billing: no existence count of the team's subscription once it exists; one reservation, one settlement.
      expect(count(/billing_subscriptions/i), report).toBe(0);
      // No savepoints: the hold and the settlement are written with the run's own writes.
      expect(count(/savepoint/i), report).toBe(0);
      expect(count(/from .blocks./i), report).toBe(1);
      expect(count(/from .documents./i), report).toBe(0);
      if (db.name === 'postgres') {
        // Three statements and no transaction (PgRunStore): the Block API's lookup; the run's
        // record with its credit hold (the team's share lock, the grant credits, the reservation
        // and its ledger entry); the final record with the settlement and every event.
        expect(count(/^(begin|commit)/i), report).toBe(0);
        expect(sql.length, report).toBe(3);
        const [create, finish] = [sql[1]!, sql[2]!];
        expect(create, report).toMatch(/^with "t" as \( select "id" from "teams" where "id" = \?::uuid for share \), "b" as \( update "billing_credit_balances"/i);
        for (const part of [/insert into "billing_credit_reservations"/, /insert into "billing_credit_ledger"/, /insert into "runs"/]) expect(create, report).toMatch(part);
        expect(finish, report).toMatch(/^with "f" as \(update "runs" set/i);
        for (const part of [/update "billing_credit_reservations"/, /update "billing_credit_balances"/, /insert into "billing_credit_ledger"/, /insert into "run_events"/]) expect(finish, report).toMatch(part);
        expect(count(/from "run_events"/i), report).toBe(0);
      } else {
        // Each transaction is a commit (a sync of the WAL, shared with the other runs' writes of the moment).
        expect(count(/^begin/i), report).toBeLessThanOrEqual(2);
        // The event log is written once, with the final record, and never read back for a run executed here.
        expect(count(/^insert into .run_events./i), report).toBe(1);
        expect(count(/^select .* from .run_events./i), report).toBe(0);
        // The run: inserted already claimed (no claim of its own, not read back), the final record.
        expect(count(/^insert into .runs./i), report).toBe(1);
        expect(count(/^update .runs./i), report).toBe(1);
        expect(count(/^select .* from .runs./i), report).toBe(0);
        expect(count(/^insert into .billing_credit_ledger./i), report).toBe(2);
        expect(sql.length, report).toBeLessThanOrEqual(14);
      }

      // The answer given from memory is the stored run.
      const stored = await t.request('GET', `/documents/${bid}/runs/${body.runId}`, { token: owner.token });
      expect(stored.status).toBe(200);
      expect(stored.body).toMatchObject({ status: 'completed', output: body.output, duration: body.duration, usedCredits: 1, globalCtx: body.globalCtx, sessions: body.sessions });
    });

    it('streams a run it executes without reading the event log: every event once, in order, from the sink', async () => {
      expect((await counted()).body).toMatchObject({ status: 'completed' });
      trace = { sql: [] };
      const r = await t.request('POST', `/block/${bid}/api`, { body: { stream: true, format: 'sse', inputs: { n: 21 } } });
      const sql = trace.sql;
      trace = null;
      expect(r.status, r.text).toBe(200);
      const seqs = [...r.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      expect(seqs.length).toBeGreaterThan(5);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
      expect([...r.text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]).at(-1)).toBe('run_complete');
      // The reader took what the run's sink had published from memory: the log is written, never read.
      const report = sql.map((text, i) => `${i + 1}. ${text.slice(0, 120)}`).join('\n');
      expect(sql.filter((text) => /^select .* from .run_events./i.test(text)), report).toEqual([]);
      expect(sql.filter((text) => /insert into .run_events./i.test(text) || /"run_events"/i.test(text)).length, report).toBeGreaterThan(0);
    });

    it('charges each of many parallel runs of one team exactly once: balance, ledger and reservations agree', async () => {
      const connection = t.kernel.container.get(entityManagerServiceIdentifier).getConnection() as unknown as { execute(sql: string, params?: unknown[]): Promise<Json[]> };
      const first = await counted();
      const [{ team_id: teamId }] = (await connection.execute('select "team_id" from "runs" where "id" = ?', [first.body.runId])) as [{ team_id: string }];
      const balance = async () => {
        const [row] = await connection.execute('select "grant_credits" + "purchase_credits" as "total" from "billing_credit_balances" where "team_id" = ?', [teamId]);
        return Number(row!.total);
      };
      const before = await balance();
      const answers = await Promise.all(Array.from({ length: 40 }, () => t.request('POST', `/block/${bid}/api`, { body: { stream: false, inputs: { n: 21 } } })));
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
      expect(answers.every((a) => a.body.status === 'completed')).toBe(true);
      // One credit a run.
      expect(await balance()).toBe(before - 40);
      const ids = answers.map((a) => a.body.runId as string);
      const marks = ids.map(() => '?').join(', ');
      const runs = await connection.execute(`select "reservation_id", "reserved_credits", "used_credits" from "runs" where "id" in (${marks})`, ids);
      expect(runs).toHaveLength(40);
      expect(runs.every((r) => Number(r.reserved_credits) === 1 && Number(r.used_credits) === 1 && r.reservation_id)).toBe(true);
      const reservationIds = runs.map((r) => r.reservation_id as string);
      const reservations = await connection.execute(`select "status", "used_credits" from "billing_credit_reservations" where "id" in (${marks})`, reservationIds);
      expect(reservations.map((r) => `${r.status} ${Number(r.used_credits)}`)).toEqual(reservations.map(() => 'settled 1'));
      const ledger = await connection.execute(`select "kind", "grant_delta" + "purchase_delta" as "delta" from "billing_credit_ledger" where "reservation_id" in (${marks})`, reservationIds);
      expect(ledger.filter((e) => e.kind === 'reservation').map((e) => Number(e.delta))).toEqual(reservationIds.map(() => -1));
      expect(ledger.filter((e) => e.kind === 'settlement').map((e) => Number(e.delta))).toEqual(reservationIds.map(() => 0));
      // The team's whole ledger adds up to its balance.
      const [sum] = await connection.execute('select sum("grant_delta" + "purchase_delta") as "total" from "billing_credit_ledger" where "team_id" = ?', [teamId]);
      expect(Number(sum!.total)).toBe(await balance());
    });

    it('answers a run it did not execute from its stored record (one prepared read): the same answer as the executing process gave', async () => {
      const { body: executed } = await counted();
      const runs = t.kernel.container.get(RunService);
      const handle = await runs.attach(t.kernel.fork(), executed.documentId, executed.runId);
      expect(handle).not.toBeNull();
      trace = { sql: [] };
      const answer = await handle!.result();
      const sql = trace.sql;
      trace = null;
      expect(answer).toEqual(executed);
      expect(sql.filter((s) => /^select .* from .runs./i.test(s)), sql.join('\n')).toEqual([expect.stringMatching(/^select "id", "document_id" as "documentId", "status"/)]);
    });
  });
});
