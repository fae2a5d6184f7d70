import { preparedStatementsServiceIdentifier, type PreparedStatements, type SqlStatement } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * GET /auth/me reads the caller's teams through one prepared statement (`identity.teams_of_user`)
 * and keeps them per user for `auth.principalCacheTtlMs`; every team change made in this process
 * shows at once (the cache entry is dropped), long before the TTL would end it.
 */

/** Counts the prepared statements run, by name, while the suite runs. */
function countStatements(t: TestHost): { counts: Map<string, number>; restore(): void } {
  const sql = t.kernel.container.get(preparedStatementsServiceIdentifier) as { -readonly [K in keyof PreparedStatements]: PreparedStatements[K] };
  const counts = new Map<string, number>();
  const all = sql.all;
  sql.all = ((statement: SqlStatement, ...rest: unknown[]) => {
    counts.set(statement.name, (counts.get(statement.name) ?? 0) + 1);
    return (all as (...args: unknown[]) => unknown)(statement, ...rest);
  }) as PreparedStatements['all'];
  return { counts, restore: () => (sql.all = all) };
}

interface MeTeam {
  id: string;
  name: string;
  personal: boolean;
  role: string;
}

describe.each(testDatabases())('GET /auth/me teams on $name', (db) => {
  describe.each([
    { name: 'a 60 s principal cache', ttl: 60_000 },
    { name: 'no principal cache', ttl: 0 },
  ])('with $name', ({ ttl }) => {
    let t: TestHost;
    let counter: ReturnType<typeof countStatements>;
    beforeAll(async () => {
      t = await startTestHost(db, 'node', { config: { auth: { principalCacheTtlMs: ttl } } });
      counter = countStatements(t);
    });
    afterAll(async () => {
      counter?.restore();
      await t?.close();
    });

    const teamsOf = async (token: string): Promise<MeTeam[]> => {
      const me = await t.request('GET', '/auth/me', { token });
      expect(me.status, me.text).toBe(200);
      return me.body.teams;
    };
    const teamReads = () => counter.counts.get('identity.teams_of_user') ?? 0;

    it('reads the teams with one prepared statement, once per user while cached', async () => {
      const user = await t.register();
      const before = teamReads();
      const first = await teamsOf(user.token);
      expect(first).toHaveLength(1);
      expect(first[0]).toMatchObject({ personal: true, role: 'owner' });
      expect(teamReads() - before).toBe(1);
      await teamsOf(user.token);
      await teamsOf(user.token);
      expect(teamReads() - before).toBe(ttl > 0 ? 1 : 3);
    });

    it('shows every team change made in this process at once', async () => {
      const owner = await t.register();
      const mate = await t.register();
      // Both users' teams are read (and cached) before each change.
      expect((await teamsOf(owner.token)).map((team) => team.personal)).toEqual([true]);
      expect(await teamsOf(mate.token)).toHaveLength(1);

      const created = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Crew' } });
      expect(created.status, created.text).toBe(201);
      const teamId = created.body.id as string;
      expect((await teamsOf(owner.token)).map((team) => [team.name, team.role])).toEqual([
        [expect.any(String), 'owner'],
        ['Crew', 'owner'],
      ]);

      expect((await t.request('POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: mate.email, role: 'member' } })).status).toBe(201);
      expect((await teamsOf(mate.token)).find((team) => team.id === teamId)).toMatchObject({ name: 'Crew', role: 'member', personal: false });

      expect((await t.request('PATCH', `/teams/${teamId}/members/${mate.userId}`, { token: owner.token, body: { role: 'admin' } })).status).toBe(200);
      expect((await teamsOf(mate.token)).find((team) => team.id === teamId)?.role).toBe('admin');

      expect((await t.request('PATCH', `/teams/${teamId}`, { token: owner.token, body: { name: 'Renamed crew' } })).status).toBe(200);
      expect((await teamsOf(owner.token)).find((team) => team.id === teamId)?.name).toBe('Renamed crew');
      expect((await teamsOf(mate.token)).find((team) => team.id === teamId)?.name).toBe('Renamed crew');

      // Ownership moves: both roles change.
      expect((await t.request('PATCH', `/teams/${teamId}/members/${mate.userId}`, { token: owner.token, body: { role: 'owner' } })).status).toBe(200);
      expect((await teamsOf(mate.token)).find((team) => team.id === teamId)?.role).toBe('owner');
      expect((await teamsOf(owner.token)).find((team) => team.id === teamId)?.role).toBe('admin');

      // The former owner leaves.
      expect((await t.request('DELETE', `/teams/${teamId}/members/${owner.userId}`, { token: owner.token })).status).toBe(204);
      expect((await teamsOf(owner.token)).map((team) => team.id)).not.toContain(teamId);

      expect((await t.request('DELETE', `/teams/${teamId}`, { token: mate.token })).status).toBe(204);
      expect((await teamsOf(mate.token)).map((team) => team.id)).toEqual([expect.any(String)]);
    });
  });
});
