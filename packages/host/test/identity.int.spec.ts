import { createHash } from 'node:crypto';
import { AccessKey, User, UserService } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe.each(testDatabases())('identity on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    beforeAll(async () => {
      t = await startTestHost(db, transport);
    });
    afterAll(() => t?.close());

    describe('accounts', () => {
      it('registers a user with a personal team and logs in', async () => {
        const email = `Ada.${transport}@Example.com`;
        const r = await t.request('POST', '/auth/register', { body: { email, password: 'correct horse', name: 'Ada' } });
        expect(r.status).toBe(201);
        expect(r.body).toMatchObject({ tokenType: 'Bearer', expiresIn: 86400, user: { email: email.toLowerCase(), name: 'Ada', isSiteAdmin: false } });
        const teams = await t.request('GET', '/teams', { token: r.body.token });
        expect(teams.body.items).toEqual([expect.objectContaining({ personal: true, role: 'owner' })]);

        const login = await t.request('POST', '/auth/login', { body: { email: email.toUpperCase(), password: 'correct horse' } });
        expect(login.status).toBe(200);
        const me = await t.request('GET', '/auth/me', { token: login.body.token });
        expect(me.body).toEqual({ user: r.body.user, teams: [expect.objectContaining({ personal: true, role: 'owner' })], credential: { kind: 'jwt' } });
      });

      it('stores an Argon2id hash, never the password', async () => {
        const { userId } = await t.register('hash-check-' + transport + '@example.com', 'a secret password');
        const user = await t.kernel.fork().findOneOrFail(User, { id: userId });
        expect(user.passwordHash).toMatch(/^\$argon2id\$/);
        expect(user.passwordHash).not.toContain('a secret password');
      });

      it('refuses a taken email, a short password and wrong credentials', async () => {
        const { email } = await t.register();
        const taken = await t.request('POST', '/auth/register', { body: { email, password: 'another one' } });
        expect(taken.status).toBe(409);
        expect(taken.body.error).toBe('email_taken');
        const weak = await t.request('POST', '/auth/register', { body: { email: `weak-${transport}@example.com`, password: 'short' } });
        expect(weak.status).toBe(422);
        expect(weak.body.error).toBe('weak_password');
        const wrong = await t.request('POST', '/auth/login', { body: { email, password: 'not the password' } });
        expect(wrong.status).toBe(401);
        expect(wrong.body.error).toBe('invalid_credentials');
        const unknown = await t.request('POST', '/auth/login', { body: { email: `nobody-${transport}@example.com`, password: 'whatever1' } });
        expect(unknown.status).toBe(401);
        expect(unknown.body).toEqual(wrong.body);
      });

      it('updates the profile and changes the password', async () => {
        const { token, email } = await t.register();
        const patched = await t.request('PATCH', '/auth/me', { token, body: { name: 'Grace', avatarUrl: 'https://img.example/g.png' } });
        expect(patched.status).toBe(200);
        expect(patched.body).toMatchObject({ name: 'Grace', avatarUrl: 'https://img.example/g.png' });
        expect((await t.request('GET', '/auth/me', { token })).body.user.name).toBe('Grace');
        // An IRI is stored as its URI (the answer's documented format; the route fuzzer found it stored as given).
        const iri = await t.request('PATCH', '/auth/me', { token, body: { avatarUrl: 'https://example.com/üb?q=ä' } });
        expect(iri.status, iri.text).toBe(200);
        expect(iri.body.avatarUrl).toBe('https://example.com/%C3%BCb?q=%C3%A4');
        const nullName = await t.request('PATCH', '/auth/me', { token, body: { name: null } });
        expect(nullName.status).toBe(422);
        expect(nullName.body.details[0].field).toBe('name');
        const cleared = await t.request('PATCH', '/auth/me', { token, body: { avatarUrl: null } });
        expect(cleared.body).toMatchObject({ name: 'Grace', avatarUrl: null });

        const bad = await t.request('POST', '/auth/password', { token, body: { currentPassword: 'nope', newPassword: 'brand new pass' } });
        expect(bad.status).toBe(403);
        expect(bad.body.error).toBe('invalid_current_password');
        const ok = await t.request('POST', '/auth/password', { token, body: { currentPassword: 'correct horse battery', newPassword: 'brand new pass' } });
        expect(ok.status).toBe(204);
        expect((await t.request('POST', '/auth/login', { body: { email, password: 'brand new pass' } })).status).toBe(200);
        expect((await t.request('POST', '/auth/login', { body: { email, password: 'correct horse battery' } })).status).toBe(401);
      });

      it('locks out a disabled user at once, even with a cached credential', async () => {
        const { token, userId } = await t.register();
        expect((await t.request('GET', '/auth/me', { token })).status).toBe(200);
        await t.kernel.get(UserService).update(t.kernel.fork(), userId, { status: 'disabled' });
        const r = await t.request('GET', '/auth/me', { token });
        expect(r.status).toBe(401);
        expect(r.body.error).toBe('invalid_token');
      });
    });

    describe('API keys and agent tokens', () => {
      it('issues a key shown once, stored as SHA-256, usable as Bearer or X-API-Key, then revoked', async () => {
        const { token } = await t.register();
        const issued = await t.request('POST', '/auth/api-keys', { token, body: { name: 'deploy', expiresInDays: 30 } });
        expect(issued.status).toBe(201);
        const key: string = issued.body.token;
        expect(key).toMatch(/^trk_[A-Za-z0-9_-]{43}$/);
        expect(issued.body.credential).toMatchObject({ kind: 'api_key', name: 'deploy', prefix: key.slice(0, 12), revokedAt: null });

        const stored = await t.kernel.fork().findOneOrFail(AccessKey, { id: issued.body.credential.id });
        expect(stored.tokenHash).toBe(createHash('sha256').update(key).digest('hex'));

        const list = await t.request('GET', '/auth/api-keys', { token });
        expect(list.body.items).toHaveLength(1);
        expect(JSON.stringify(list.body)).not.toContain(key);

        expect((await t.request('GET', '/auth/me', { token: key })).body.credential).toEqual({ kind: 'api_key' });
        expect((await t.request('GET', '/auth/me', { headers: { 'x-api-key': key } })).status).toBe(200);

        const revoked = await t.request('DELETE', `/auth/api-keys/${issued.body.credential.id}`, { token });
        expect(revoked.status).toBe(200);
        expect(revoked.body.revokedAt).not.toBeNull();
        const after = await t.request('GET', '/auth/me', { token: key });
        expect(after.status).toBe(401);
        expect(after.body.error).toBe('invalid_token');
      });

      it('keeps credential kinds apart: only a JWT issues keys, keys of one user are invisible to another', async () => {
        const alice = await t.register();
        const bob = await t.register();
        const agent = await t.request('POST', '/auth/agent-tokens', { token: alice.token, body: { name: 'writer bot', scopes: ['documents:write', 'profile:read'] } });
        expect(agent.status).toBe(201);
        expect(agent.body.token).toMatch(/^tra_/);
        const me = await t.request('GET', '/auth/me', { token: agent.body.token });
        expect(me.body.credential).toEqual({ kind: 'agent_token', scopes: ['documents:write', 'profile:read'] });

        const byAgent = await t.request('POST', '/auth/api-keys', { token: agent.body.token, body: { name: 'x' } });
        expect(byAgent.status).toBe(403);
        expect(byAgent.body.error).toBe('credential_not_allowed');

        const foreign = await t.request('DELETE', `/auth/agent-tokens/${agent.body.credential.id}`, { token: bob.token });
        expect(foreign.status).toBe(404);
        expect(foreign.body.error).toBe('credential_not_found');
        expect((await t.request('GET', '/auth/agent-tokens', { token: bob.token })).body.items).toEqual([]);
      });

      it('refuses an expired key', async () => {
        const { token } = await t.register();
        const issued = await t.request('POST', '/auth/api-keys', { token, body: { name: 'short-lived', expiresInDays: 1 } });
        await t.kernel.fork().nativeUpdate(AccessKey, { id: issued.body.credential.id }, { expiresAt: new Date(Date.now() - 1000) });
        const r = await t.request('GET', '/auth/me', { token: issued.body.token });
        expect(r.status).toBe(401);
      });
    });

    describe('teams', () => {
      it('manages members and roles, and keeps outsiders out', async () => {
        const owner = await t.register();
        const admin = await t.register();
        const member = await t.register();
        const outsider = await t.register();

        const team = await t.request('POST', '/teams', { token: owner.token, body: { name: '  Research  ' } });
        expect(team.status).toBe(201);
        expect(team.body).toMatchObject({ name: 'Research', personal: false, role: 'owner' });
        const id = team.body.id;

        expect((await t.request('POST', `/teams/${id}/members`, { token: owner.token, body: { email: admin.email, role: 'admin' } })).status).toBe(201);
        const added = await t.request('POST', `/teams/${id}/members`, { token: admin.token, body: { email: member.email, role: 'member' } });
        expect(added.body).toMatchObject({ userId: member.userId, role: 'member' });
        const again = await t.request('POST', `/teams/${id}/members`, { token: owner.token, body: { email: member.email, role: 'member' } });
        expect(again.status).toBe(409);
        expect(again.body.error).toBe('already_member');

        const byMember = await t.request('POST', `/teams/${id}/members`, { token: member.token, body: { email: outsider.email, role: 'member' } });
        expect(byMember.status).toBe(403);
        expect(byMember.body.error).toBe('team_role_required');

        const peek = await t.request('GET', `/teams/${id}`, { token: outsider.token });
        expect(peek.status).toBe(404);
        expect(peek.body.error).toBe('team_not_found');

        const members = await t.request('GET', `/teams/${id}/members`, { token: member.token });
        expect(members.body.items.map((m: { role: string }) => m.role)).toEqual(['owner', 'admin', 'member']);

        // Ownership moves in one step; the previous owner becomes admin.
        const transfer = await t.request('PATCH', `/teams/${id}/members/${admin.userId}`, { token: owner.token, body: { role: 'owner' } });
        expect(transfer.status).toBe(200);
        const roles = (await t.request('GET', `/teams/${id}/members`, { token: owner.token })).body.items;
        expect(roles.find((m: { userId: string }) => m.userId === owner.userId).role).toBe('admin');
        expect(roles.find((m: { userId: string }) => m.userId === admin.userId).role).toBe('owner');

        const ownerLeaves = await t.request('DELETE', `/teams/${id}/members/${admin.userId}`, { token: admin.token });
        expect(ownerLeaves.status).toBe(409);
        expect(ownerLeaves.body.error).toBe('last_owner');
        expect((await t.request('DELETE', `/teams/${id}/members/${member.userId}`, { token: member.token })).status).toBe(204);
        expect((await t.request('GET', `/teams/${id}`, { token: member.token })).status).toBe(404);

        expect((await t.request('DELETE', `/teams/${id}`, { token: owner.token })).status).toBe(403);
        expect((await t.request('DELETE', `/teams/${id}`, { token: admin.token })).status).toBe(204);
        expect((await t.request('GET', `/teams/${id}`, { token: admin.token })).status).toBe(404);
      });

      it('protects the personal team', async () => {
        const a = await t.register();
        const b = await t.register();
        const personal = (await t.request('GET', '/teams', { token: a.token })).body.items[0];
        const add = await t.request('POST', `/teams/${personal.id}/members`, { token: a.token, body: { email: b.email, role: 'member' } });
        expect(add.status).toBe(409);
        expect(add.body.error).toBe('personal_team');
        const del = await t.request('DELETE', `/teams/${personal.id}`, { token: a.token });
        expect(del.status).toBe(409);
        expect(del.body.error).toBe('personal_team');
      });

      it('answers 404 for a malformed team id and 422 for an invalid role', async () => {
        const a = await t.register();
        expect((await t.request('GET', '/teams/not-a-uuid', { token: a.token })).status).toBe(404);
        const team = await t.request('POST', '/teams', { token: a.token, body: { name: 'T' } });
        const bad = await t.request('POST', `/teams/${team.body.id}/members`, { token: a.token, body: { email: 'x@example.com', role: 'owner' } });
        expect(bad.status).toBe(422);
        expect(bad.body.details[0]).toMatchObject({ field: 'role', constraint: 'isIn' });
      });
    });
  });
});

describe('registration switch', () => {
  it('refuses registration when auth.allowRegistration is false', async () => {
    const [sqlite] = testDatabases();
    const t = await startTestHost(sqlite!, 'node', { config: { auth: { allowRegistration: false } } });
    try {
      const r = await t.request('POST', '/auth/register', { body: { email: 'closed@example.com', password: 'long enough' } });
      expect(r.status).toBe(403);
      expect(r.body.error).toBe('registration_closed');
    } finally {
      await t.close();
    }
  });
});
