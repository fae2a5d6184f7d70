import { entityManagerServiceIdentifier } from '@trellis/core';
import { testDatabases } from '@trellis/test-support';
import type * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorize, discover, exchange, startOAuthHost, type AdminApp, type OAuthTestHost } from './oauth-helpers.js';

/**
 * Refresh-token rotations that arrive together share one transaction on SQLite (a group commit,
 * one WAL sync for all); on PostgreSQL each is its own. Grouped or not, every grant claims its own
 * token with a conditional update: each rotates exactly once, and a token presented twice in the
 * same group is reuse, which revokes its family (no grace window here).
 */
describe.each(testDatabases())('refresh-token rotations in groups on $name', (db) => {
  let t: OAuthTestHost;
  let app: AdminApp;
  let as: oauth.AuthorizationServer;
  let user: { token: string; userId: string };
  let commits = 0;
  let restore: () => void = () => undefined;

  beforeAll(async () => {
    t = await startOAuthHost(db, 'node', { auth: { principalCacheTtlMs: 0 }, oauth: { refreshGraceSeconds: 0 } });
    app = await t.createApp();
    as = await discover(t);
    user = await t.register();
    // Every transaction of the process commits through this one connection object.
    const connection = t.kernel.container.get(entityManagerServiceIdentifier).getConnection('write') as unknown as Record<string, (...args: unknown[]) => unknown>;
    const commit = connection['commit']!;
    connection['commit'] = function (this: unknown, ...args: unknown[]) {
      commits++;
      return commit.apply(this, args);
    };
    restore = () => (connection['commit'] = commit);
  });
  afterAll(async () => {
    restore();
    await t?.close();
  });

  const newFamily = async () => (await exchange(as, app, await authorize(t, app, user.token))).refresh_token!;
  const refresh = (refreshToken: string) => t.form('/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: app.client_id });
  const me = (accessToken: string) => t.request('GET', '/auth/me', { token: accessToken });

  it('rotates each of many concurrent grants exactly once, in fewer commits than grants on SQLite', async () => {
    const tokens = await Promise.all(Array.from({ length: 8 }, newFamily));
    const before = commits;
    const answers = await Promise.all(tokens.map(refresh));
    const used = commits - before;
    for (const answer of answers) expect(answer.status, answer.text).toBe(200);
    const next = answers.map((answer) => answer.body.refresh_token as string);
    expect(new Set([...tokens, ...next]).size).toBe(16);
    if (db.name === 'sqlite') expect(used).toBeLessThan(tokens.length);
    else expect(used).toBe(tokens.length);
    // Each new pair works, and each old token is spent.
    for (const answer of answers) expect((await me(answer.body.access_token)).status).toBe(200);
    const again = await Promise.all(next.map(refresh));
    for (const answer of again) expect(answer.status, answer.text).toBe(200);
  });

  it('takes a token presented twice in one group as reuse and revokes its family, and only its family', async () => {
    const [reused, ...others] = await Promise.all(Array.from({ length: 6 }, newFamily));
    const answers = await Promise.all([refresh(reused!), refresh(reused!), ...others.map(refresh)]);
    const [first, second, ...rest] = answers;
    // One of the two presentations rotates the token; the other is refused.
    const statuses = [first!.status, second!.status].sort();
    expect(statuses, `${first!.text} ${second!.text}`).toEqual([200, 400]);
    const winner = first!.status === 200 ? first! : second!;
    const loser = first!.status === 200 ? second! : first!;
    expect(loser.body.error).toBe('invalid_grant');
    // The reuse revoked the family: the winner's new tokens are dead too.
    expect((await refresh(winner.body.refresh_token)).body.error).toBe('invalid_grant');
    expect((await me(winner.body.access_token)).status).toBe(401);
    // The other families of the group rotated and live on.
    for (const answer of rest) {
      expect(answer.status, answer.text).toBe(200);
      expect((await me(answer.body.access_token)).status).toBe(200);
      expect((await refresh(answer.body.refresh_token)).status).toBe(200);
    }
  });

  it('still revokes a family whose rotated token comes back later, while other grants are in flight', async () => {
    const [family, ...others] = await Promise.all(Array.from({ length: 4 }, newFamily));
    const rotated = await refresh(family!);
    expect(rotated.status).toBe(200);
    const answers = await Promise.all([refresh(family!), ...others.map(refresh)]);
    expect(answers[0]!.body.error).toBe('invalid_grant');
    expect((await refresh(rotated.body.refresh_token)).body.error).toBe('invalid_grant');
    for (const answer of answers.slice(1)) expect(answer.status, answer.text).toBe(200);
  });
});
