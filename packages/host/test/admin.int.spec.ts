import { randomUUID } from 'node:crypto';
import { AuditEntry, AuditService, authenticatorServiceIdentifier, User, UserService, type RouteDefinition } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let userCounter = 0;

/** A user created through the kernel's UserService with the given permission flags, logged in over HTTP. */
async function userWith(t: TestHost, flags: { isDeveloper?: boolean; isAdministrator?: boolean; isSiteAdmin?: boolean } = {}) {
  const email = `adm${++userCounter}-${process.pid}-${Date.now()}@example.com`;
  const password = 'correct horse battery';
  await t.kernel.get(UserService).create(t.kernel.fork(), { email, password, ...flags });
  const login = await t.request('POST', '/auth/login', { body: { email, password } });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  return { token: login.body.token as string, userId: login.body.user.id as string, email };
}

const concrete = (route: RouteDefinition) => route.path.replace(/:[A-Za-z0-9_]+/g, () => randomUUID());
const hasBody = (route: RouteDefinition) => route.method === 'POST' || route.method === 'PUT';

describe.each(testDatabases())('administrator API on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let admin: Awaited<ReturnType<typeof userWith>>;
    let routes: RouteDefinition[];

    beforeAll(async () => {
      t = await startTestHost(db, transport);
      admin = await userWith(t, { isAdministrator: true });
      routes = [...(t.kernel.modules.find((m) => m.name === 'admin')!.routes as RouteDefinition[])];
    });
    afterAll(() => t?.close());

    describe('guards', () => {
      it('answers every administrator route with 401 without a token or with a bad one', async () => {
        expect(routes.length).toBe(12);
        for (const route of routes) {
          const path = concrete(route);
          const none = await t.request(route.method, path);
          expect(none.status, `${route.method} ${route.path}`).toBe(401);
          expect(none.body.error).toBe('missing_credentials');
          const bad = await t.request(route.method, path, { token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl' });
          expect(bad.status, `${route.method} ${route.path}`).toBe(401);
          expect(bad.body.error).toBe('invalid_token');
        }
      });

      it('answers every administrator route with 403 without the administrator permission', async () => {
        const plain = await t.register();
        const developer = await userWith(t, { isDeveloper: true });
        for (const route of routes) {
          const path = concrete(route);
          for (const token of [plain.token, developer.token]) {
            const r = await t.request(route.method, path, { token, ...(hasBody(route) ? { body: {} } : {}) });
            expect(r.status, `${route.method} ${route.path}`).toBe(403);
            expect(r.body.error).toBe('permission_denied');
          }
        }
      });

      it('lets site administrators in and accepts an administrator\'s API key', async () => {
        const site = await userWith(t, { isSiteAdmin: true });
        expect((await t.request('GET', '/admin/user/count', { token: site.token })).status).toBe(200);
        const key = await t.request('POST', '/auth/api-keys', { token: admin.token, body: { name: 'ops' } });
        expect((await t.request('GET', '/admin/user/count', { token: key.body.token })).status).toBe(200);
      });
    });

    describe('users', () => {
      it('lists and counts users by role and status, with paging', async () => {
        const count = async (query = '') => (await t.request('GET', `/admin/user/count${query}`, { token: admin.token })).body.count as number;
        const before = {
          all: await count(),
          user: await count('?role=user'),
          developer: await count('?role=developer'),
          administrator: await count('?role=administrator'),
          site: await count('?role=site_admin'),
          disabled: await count('?status=disabled'),
          disabledUsers: await count('?role=user&status=disabled'),
        };
        const plain = await userWith(t);
        const dev = await userWith(t, { isDeveloper: true });
        await userWith(t, { isAdministrator: true });
        await userWith(t, { isSiteAdmin: true });
        await t.kernel.get(UserService).update(t.kernel.fork(), plain.userId, { status: 'disabled' });

        expect(await count()).toBe(before.all + 4);
        expect(await count('?role=user')).toBe(before.user + 1);
        // A site administrator holds the developer and administrator permissions too.
        expect(await count('?role=developer')).toBe(before.developer + 2);
        expect(await count('?role=administrator')).toBe(before.administrator + 2);
        expect(await count('?role=site_admin')).toBe(before.site + 1);
        expect(await count('?status=disabled')).toBe(before.disabled + 1);
        expect(await count('?role=user&status=disabled')).toBe(before.disabledUsers + 1);

        const page = await t.request('GET', '/admin/user/list?size=2', { token: admin.token });
        expect(page.status).toBe(200);
        expect(page.body).toMatchObject({ total: before.all + 4, page: 1, size: 2 });
        expect(page.body.items).toHaveLength(2);
        const developers = await t.request('GET', '/admin/user/list?role=developer&size=100', { token: admin.token });
        expect(developers.body.items.map((u: { id: string }) => u.id)).toContain(dev.userId);
        for (const u of developers.body.items) expect(u.roles).toContain('developer');
        const disabled = await t.request('GET', '/admin/user/list?status=disabled', { token: admin.token });
        expect(disabled.body.items.map((u: { id: string }) => u.id)).toContain(plain.userId);

        for (const bad of ['role=root', 'status=gone', 'size=101', 'page=0']) {
          const r = await t.request('GET', `/admin/user/list?${bad}`, { token: admin.token });
          expect(r.status, bad).toBe(422);
        }
        expect((await t.request('GET', '/admin/user/count?role=everyone', { token: admin.token })).status).toBe(422);
      });

      it('reads one user', async () => {
        const u = await userWith(t, { isDeveloper: true });
        const r = await t.request('GET', `/admin/user/${u.userId}`, { token: admin.token });
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ id: u.userId, email: u.email, username: u.email.split('@')[0], phone: null, profile: null, status: 'active', roles: ['developer'], isDeveloper: true });
        const schema = await t.request('GET', '/admin/schema?type=user', { token: admin.token });
        expect(Object.keys(r.body).sort()).toEqual(Object.keys(schema.body.properties).sort());
        const missing = await t.request('GET', `/admin/user/${randomUUID()}`, { token: admin.token });
        expect(missing.status).toBe(404);
        expect(missing.body.error).toBe('user_not_found');
        expect((await t.request('GET', '/admin/user/42', { token: admin.token })).status).toBe(404);
      });

      it('updates username, email, phone, status and profile, and audits it', async () => {
        const u = await userWith(t);
        const r = await t.request('PUT', `/admin/user/${u.userId}`, {
          token: admin.token,
          body: { username: 'Renamed', email: `New.${u.email}`, phone: '+49 30 123456', profile: { company: 'ACME', tags: ['a'] } },
        });
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ username: 'Renamed', email: `new.${u.email}`.toLowerCase(), phone: '+49 30 123456', profile: { company: 'ACME', tags: ['a'] } });
        const stored = await t.kernel.fork().findOneOrFail(User, { id: u.userId });
        expect(stored).toMatchObject({ name: 'Renamed', phone: '+49 30 123456' });
        const cleared = await t.request('PUT', `/admin/user/${u.userId}`, { token: admin.token, body: { phone: null, profile: null } });
        expect(cleared.body).toMatchObject({ username: 'Renamed', phone: null, profile: null });

        const audit = await t.kernel.fork().find(AuditEntry, { action: 'admin.user.update', targetId: u.userId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
        expect(audit).toHaveLength(2);
        expect(audit[0]).toMatchObject({ actorId: admin.userId, targetType: 'user', data: { fields: ['email', 'phone', 'profile', 'username'] } });
      });

      it('refuses bad values, a taken email and unknown users', async () => {
        const u = await userWith(t);
        const taken = await t.request('PUT', `/admin/user/${u.userId}`, { token: admin.token, body: { email: admin.email } });
        expect(taken.status).toBe(409);
        expect(taken.body.error).toBe('email_taken');
        for (const body of [{ email: 'nope' }, { status: 'banned' }, { phone: 'call me' }, { profile: [1] }, { username: '' }, { username: null }, { role: 'admin' }]) {
          const r = await t.request('PUT', `/admin/user/${u.userId}`, { token: admin.token, body });
          expect(r.status, JSON.stringify(body)).toBe(422);
        }
        expect((await t.request('PUT', `/admin/user/${randomUUID()}`, { token: admin.token, body: { username: 'x' } })).status).toBe(404);
        const still = await t.request('GET', `/admin/user/${u.userId}`, { token: admin.token });
        expect(still.body.email).toBe(u.email);
      });

      it('disabling a user makes every credential of theirs fail at once, enabling restores them', async () => {
        const u = await userWith(t);
        const key = (await t.request('POST', '/auth/api-keys', { token: u.token, body: { name: 'k' } })).body.token as string;
        // Both credentials are now verified and cached by the authenticator.
        expect((await t.request('GET', '/auth/me', { token: u.token })).status).toBe(200);
        expect((await t.request('GET', '/auth/me', { token: key })).status).toBe(200);

        const disabled = await t.request('PUT', `/admin/user/${u.userId}`, { token: admin.token, body: { status: 'disabled' } });
        expect(disabled.status).toBe(200);
        expect(disabled.body.status).toBe('disabled');
        expect((await t.request('GET', '/auth/me', { token: u.token })).status).toBe(401);
        expect((await t.request('GET', '/auth/me', { token: key })).status).toBe(401);
        const login = await t.request('POST', '/auth/login', { body: { email: u.email, password: 'correct horse battery' } });
        expect(login.body.error).toBe('account_disabled');

        await t.request('PUT', `/admin/user/${u.userId}`, { token: admin.token, body: { status: 'active' } });
        expect((await t.request('GET', '/auth/me', { token: u.token })).status).toBe(200);
      });

      it('grants and withdraws permissions, effective at once', async () => {
        const u = await userWith(t);
        expect((await t.request('GET', '/dev/task/list', { token: u.token })).status).toBe(403);
        const granted = await t.request('PUT', `/admin/user/${u.userId}`, { token: admin.token, body: { isDeveloper: true } });
        expect(granted.status).toBe(200);
        expect(granted.body).toMatchObject({ isDeveloper: true, roles: ['developer'] });
        expect((await t.request('GET', '/dev/task/list', { token: u.token })).status).toBe(200);
        await t.request('PUT', `/admin/user/${u.userId}`, { token: admin.token, body: { isDeveloper: false, isAdministrator: true } });
        expect((await t.request('GET', '/dev/task/list', { token: u.token })).status).toBe(403);
        expect((await t.request('GET', '/admin/user/count', { token: u.token })).status).toBe(200);

        const elevate = await t.request('PUT', `/admin/user/${u.userId}`, { token: admin.token, body: { isSiteAdmin: true } });
        expect(elevate.status).toBe(403);
        expect(elevate.body.error).toBe('site_admin_protected');
        const own = await t.request('PUT', `/admin/user/${admin.userId}`, { token: admin.token, body: { isDeveloper: true } });
        expect(own.status).toBe(403);
        expect(own.body.error).toBe('cannot_change_own_permissions');
        expect((await t.request('PUT', `/admin/user/${u.userId}`, { token: admin.token, body: { isDeveloper: 'yes' } })).status).toBe(422);
        const site = await userWith(t, { isSiteAdmin: true });
        const bySite = await t.request('PUT', `/admin/user/${u.userId}`, { token: site.token, body: { isSiteAdmin: true } });
        expect(bySite.body.roles).toEqual(['site_admin', 'administrator', 'developer']);
      });

      it('keeps administrators from disabling themselves or touching site administrators', async () => {
        const self = await t.request('PUT', `/admin/user/${admin.userId}`, { token: admin.token, body: { status: 'disabled' } });
        expect(self.status).toBe(403);
        expect(self.body.error).toBe('cannot_disable_self');
        const site = await userWith(t, { isSiteAdmin: true });
        const touched = await t.request('PUT', `/admin/user/${site.userId}`, { token: admin.token, body: { email: 'takeover@example.com' } });
        expect(touched.status).toBe(403);
        expect(touched.body.error).toBe('site_admin_protected');
        expect((await t.request('GET', '/auth/me', { token: site.token })).body.user.email).toBe(site.email);
        const bySite = await t.request('PUT', `/admin/user/${admin.userId}`, { token: site.token, body: { phone: '+1 555 0100' } });
        expect(bySite.status).toBe(200);
      });
    });

    describe('become', () => {
      it('returns a token for the user that names the administrator as actor, and audits it', async () => {
        const u = await userWith(t, { isDeveloper: true });
        const r = await t.request('POST', `/admin/user/${u.userId}/become`, { token: admin.token });
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ tokenType: 'Bearer', expiresIn: 900, actorId: admin.userId, user: { id: u.userId } });
        const claims = JSON.parse(Buffer.from(r.body.token.split('.')[1], 'base64url').toString());
        expect(claims).toMatchObject({ sub: u.userId, act: { sub: admin.userId } });

        const me = await t.request('GET', '/auth/me', { token: r.body.token });
        expect(me.status).toBe(200);
        expect(me.body.user.id).toBe(u.userId);
        expect(me.body.credential).toEqual({ kind: 'jwt', actorId: admin.userId });
        // The token carries the user's permissions, not the administrator's.
        expect((await t.request('GET', '/dev/bot/list', { token: r.body.token })).status).toBe(200);
        expect((await t.request('GET', '/admin/user/count', { token: r.body.token })).status).toBe(403);

        const audit = await t.request('GET', '/admin/list?type=audit&size=100', { token: admin.token });
        expect(audit.status).toBe(200);
        expect(audit.body.items).toContainEqual(
          expect.objectContaining({ action: 'admin.user.become', actorId: admin.userId, targetType: 'user', targetId: u.userId, data: { expiresIn: 900 }, ip: expect.any(String) }),
        );
      });

      it('refuses yourself, nested impersonation, disabled users, administrators, site administrators and unknown users', async () => {
        const self = await t.request('POST', `/admin/user/${admin.userId}/become`, { token: admin.token });
        expect(self.status).toBe(400);
        expect(self.body.error).toBe('cannot_become_self');

        const otherAdmin = await userWith(t, { isAdministrator: true });
        const asAdmin = await t.request('POST', `/admin/user/${otherAdmin.userId}/become`, { token: admin.token });
        expect(asAdmin.status).toBe(403);
        expect(asAdmin.body.error).toBe('cannot_become_administrator');
        const plain = await userWith(t);
        const first = await t.request('POST', `/admin/user/${plain.userId}/become`, { token: admin.token });
        const target = await userWith(t);
        // A become token carries the user's permissions: no administrator API, so no nested become.
        const nested = await t.request('POST', `/admin/user/${target.userId}/become`, { token: first.body.token });
        expect(nested.status).toBe(403);
        expect(nested.body.error).toBe('permission_denied');

        const site = await userWith(t, { isSiteAdmin: true });
        const protectedSite = await t.request('POST', `/admin/user/${site.userId}/become`, { token: admin.token });
        expect(protectedSite.status).toBe(403);
        expect(protectedSite.body.error).toBe('cannot_become_administrator');

        await t.request('PUT', `/admin/user/${target.userId}`, { token: admin.token, body: { status: 'disabled' } });
        const disabled = await t.request('POST', `/admin/user/${target.userId}/become`, { token: admin.token });
        expect(disabled.status).toBe(409);
        expect(disabled.body.error).toBe('user_disabled');

        expect((await t.request('POST', `/admin/user/${randomUUID()}/become`, { token: admin.token })).status).toBe(404);
      });
    });

    describe('impersonation bounds', () => {
      const become = async (by: { token: string }, userId: string) => {
        const r = await t.request('POST', `/admin/user/${userId}/become`, { token: by.token });
        expect(r.status).toBe(200);
        return r.body.token as string;
      };

      it('issues short-lived tokens marked with act', async () => {
        const u = await userWith(t);
        const token = await become(admin, u.userId);
        const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
        expect(claims.act).toEqual({ sub: admin.userId });
        expect(claims.exp - claims.iat).toBe(900);
      });

      it('refuses credential minting, OAuth consent, password, team and permission changes while impersonating', async () => {
        const u = await userWith(t, { isDeveloper: true });
        const token = await become(admin, u.userId);
        const refused = async (method: string, path: string, body?: unknown) => {
          const r = await t.request(method, path, { token, body });
          expect({ path, status: r.status, error: r.body.error }).toEqual({ path, status: 403, error: 'impersonation_forbidden' });
        };
        await refused('POST', '/auth/api-keys', { name: 'forever' });
        await refused('POST', '/auth/agent-tokens', { name: 'forever' });
        await refused('POST', '/auth/password', { currentPassword: 'x', newPassword: 'a long new password' });
        await refused('POST', `/dev/app/${randomUUID()}/token`);
        await refused('POST', `/dev/hardware/${randomUUID()}/token`);
        // The OAuth protocol routes answer in RFC 6749 form.
        const consent = await t.request('POST', '/oauth/authorize', { token, body: { client_id: 'any', redirect_uri: 'https://x.example/cb', response_type: 'code' } });
        expect(consent.status).toBe(403);
        expect(consent.body).toMatchObject({ error: 'access_denied', error_description: expect.stringMatching(/administrator acts as this user/) });
        const team = await t.request('POST', '/teams', { token: u.token, body: { name: 'Imp team' } });
        const teamId = team.body.id as string;
        await refused('POST', `/teams/${teamId}/members`, { email: admin.email, role: 'admin' });
        await refused('PATCH', `/teams/${teamId}/members/${u.userId}`, { role: 'member' });
        await refused('DELETE', `/teams/${teamId}/members/${u.userId}`);
        // Nothing was minted; reading stays allowed.
        expect((await t.request('GET', '/auth/api-keys', { token: u.token })).body.items).toEqual([]);
        expect((await t.request('GET', '/auth/me', { token })).status).toBe(200);
      });

      it('stops the token as soon as the administrator is disabled or loses the permission', async () => {
        const actor = await userWith(t, { isAdministrator: true });
        const u = await userWith(t);
        const token = await become(actor, u.userId);
        expect((await t.request('GET', '/auth/me', { token })).status).toBe(200);
        expect((await t.request('PUT', `/admin/user/${actor.userId}`, { token: admin.token, body: { isAdministrator: false } })).status).toBe(200);
        const lost = await t.request('GET', '/auth/me', { token });
        expect(lost.status).toBe(401);
        expect(lost.body.error).toBe('invalid_token');

        const actor2 = await userWith(t, { isAdministrator: true });
        const token2 = await become(actor2, u.userId);
        expect((await t.request('GET', '/auth/me', { token: token2 })).status).toBe(200);
        expect((await t.request('PUT', `/admin/user/${actor2.userId}`, { token: admin.token, body: { status: 'disabled' } })).status).toBe(200);
        expect((await t.request('GET', '/auth/me', { token: token2 })).status).toBe(401);
        // The user's own session is untouched.
        expect((await t.request('GET', '/auth/me', { token: u.token })).status).toBe(200);
      });

      it('writes the real administrator into audit entries made with a become token', async () => {
        const u = await userWith(t);
        const token = await become(admin, u.userId);
        const principal = await t.kernel.get(authenticatorServiceIdentifier).authenticate(token, { ip: '127.0.0.1', userAgent: 'test' });
        const em = t.kernel.fork();
        const entry = await t.kernel.get(AuditService).record(em, { principal, action: 'test.impersonated', targetType: 'user', targetId: u.userId, data: { n: 1 } }, { flush: true });
        expect(entry.actorId).toBe(admin.userId);
        expect(entry.data).toEqual({ n: 1, impersonatedUserId: u.userId });
      });
    });

    describe('hardware', () => {
      let dev: Awaited<ReturnType<typeof userWith>>;
      let dev2: Awaited<ReturnType<typeof userWith>>;
      beforeAll(async () => {
        dev = await userWith(t, { isDeveloper: true });
        dev2 = await userWith(t, { isDeveloper: true });
      });

      it('lists every developer\'s devices, filtered by status', async () => {
        const a = (await t.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'a' } })).body.id;
        const b = (await t.request('POST', '/dev/hardware', { token: dev2.token, body: { name: 'b' } })).body.id;
        await t.request('POST', `/admin/hardware/${b}/reset`, { token: admin.token });

        const all = await t.request('GET', '/admin/hardware/list?size=100', { token: admin.token });
        expect(all.status).toBe(200);
        const ids = all.body.items.map((h: { id: string }) => h.id);
        expect(ids).toEqual(expect.arrayContaining([a, b]));
        expect(all.body.total).toBe(all.body.items.length);
        const pending = await t.request('GET', '/admin/hardware/list?status=pending&size=100', { token: admin.token });
        expect(pending.body.items.map((h: { id: string }) => h.id)).toContain(a);
        expect(pending.body.items.map((h: { id: string }) => h.id)).not.toContain(b);
        for (const h of pending.body.items) expect(h.status).toBe('pending');
        const resetting = await t.request('GET', '/admin/hardware/list?status=resetting', { token: admin.token });
        expect(resetting.body.items.map((h: { id: string }) => h.id)).toContain(b);
        const one = await t.request('GET', '/admin/hardware/list?size=1&page=2', { token: admin.token });
        expect(one.body).toMatchObject({ page: 2, size: 1, total: all.body.total });
        expect(one.body.items).toEqual([all.body.items[1]]);
        expect((await t.request('GET', '/admin/hardware/list?status=broken', { token: admin.token })).status).toBe(422);
      });

      it('updates any device', async () => {
        const id = (await t.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'old', config: { a: 1 } } })).body.id;
        const r = await t.request('PUT', `/admin/hardware/${id}`, { token: admin.token, body: { name: 'new', description: 'fixed by ops', config: { b: 2 } } });
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ id, ownerId: dev.userId, name: 'new', description: 'fixed by ops', config: { b: 2 } });
        expect((await t.request('GET', `/dev/hardware/${id}`, { token: dev.token })).body).toMatchObject({ name: 'new', config: { b: 2 } });
        expect((await t.request('PUT', `/admin/hardware/${id}`, { token: admin.token, body: { name: '' } })).status).toBe(422);
        expect((await t.request('PUT', `/admin/hardware/${id}`, { token: admin.token, body: { status: 'active' } })).status).toBe(422);
        expect((await t.request('PUT', `/admin/hardware/${randomUUID()}`, { token: admin.token, body: { name: 'x' } })).status).toBe(404);
      });

      it('syncs the SIM information the device reported', async () => {
        const id = (await t.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'cellular' } })).body.id;
        const early = await t.request('POST', `/admin/hardware/${id}/sync_sim`, { token: admin.token });
        expect(early.status).toBe(409);
        expect(early.body.error).toBe('sim_not_reported');

        const sim = { iccid: '89490200001234567890', imsi: '262011234567890', carrier: 'ACME' };
        await t.request('POST', `/dev/hardware/${id}/logs`, { token: dev.token, body: { type: 'sim', content: JSON.stringify(sim) } });
        const synced = await t.request('POST', `/admin/hardware/${id}/sync_sim`, { token: admin.token });
        expect(synced.status).toBe(200);
        expect(synced.body.sim).toMatchObject({ reported: sim, synced: sim });
        expect(Date.parse(synced.body.sim.syncedAt)).not.toBeNaN();
        expect((await t.request('GET', `/dev/hardware/${id}`, { token: dev.token })).body.sim.synced).toEqual(sim);
        expect((await t.request('POST', `/admin/hardware/${randomUUID()}/sync_sim`, { token: admin.token })).status).toBe(404);
        const audit = await t.kernel.fork().count(AuditEntry, { action: 'admin.hardware.sync_sim', targetId: id, actorId: admin.userId });
        expect(audit).toBe(1);
      });

      it('resets a device: control sent, status resetting, logged and audited', async () => {
        const id = (await t.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'stuck' } })).body.id;
        const r = await t.request('POST', `/admin/hardware/${id}/reset`, { token: admin.token, body: { mode: 'factory' } });
        expect(r.status).toBe(200);
        expect(r.body.control).toEqual({ command: 'reset', target: 'device', params: { mode: 'factory' } });
        expect(r.body.hardware).toMatchObject({ id, status: 'resetting' });
        const logs = await t.request('GET', `/dev/hardware/${id}/logs`, { token: dev.token });
        expect(logs.body.items[0]).toMatchObject({ type: 'control', content: JSON.stringify(r.body.control) });
        const soft = await t.request('POST', `/admin/hardware/${id}/reset`, { token: admin.token });
        expect(soft.body.control.params).toEqual({ mode: 'soft' });
        expect(await t.kernel.fork().count(AuditEntry, { action: 'admin.hardware.reset', targetId: id })).toBe(2);

        expect((await t.request('POST', `/admin/hardware/${id}/reset`, { token: admin.token, body: { mode: 'a b' } })).status).toBe(422);
        expect((await t.request('POST', `/admin/hardware/${id}/reset`, { token: admin.token, body: { mode: 'soft', extra: 1 } })).status).toBe(422);
        expect((await t.request('POST', `/admin/hardware/${randomUUID()}/reset`, { token: admin.token })).status).toBe(404);
      });
    });

    describe('schema, pointer and list', () => {
      it('serves the schemas of user, hardware and audit, pointers into them, and lists', async () => {
        for (const type of ['user', 'hardware', 'audit']) {
          const schema = await t.request('GET', `/admin/schema?type=${type}`, { token: admin.token });
          expect(schema.status).toBe(200);
          expect(schema.body).toMatchObject({ $id: `urn:trellis:admin:${type}`, type: 'object', title: type });
          const list = await t.request('GET', `/admin/list?type=${type}&size=5`, { token: admin.token });
          expect(list.status).toBe(200);
          expect(list.body).toMatchObject({ page: 1, size: 5 });
          expect(list.body.items.length).toBeGreaterThan(0);
          for (const item of list.body.items) expect(Object.keys(item).sort()).toEqual(Object.keys(schema.body.properties).sort());
        }
        const users = await t.request('GET', '/admin/list?type=user&size=100', { token: admin.token });
        expect(users.body.total).toBe((await t.request('GET', '/admin/user/count', { token: admin.token })).body.count);

        const status = await t.request('GET', `/admin/pointer?type=user&pointer=${encodeURIComponent('/properties/status/enum')}`, { token: admin.token });
        expect(status.body).toEqual({ type: 'user', pointer: '/properties/status/enum', value: ['active', 'disabled'] });
        const bad = await t.request('GET', '/admin/pointer?type=user&pointer=properties', { token: admin.token });
        expect(bad.status).toBe(400);
        expect(bad.body.error).toBe('invalid_pointer');
        const nothing = await t.request('GET', '/admin/pointer?type=audit&pointer=/properties/secret', { token: admin.token });
        expect(nothing.status).toBe(404);
        expect(nothing.body.error).toBe('pointer_not_found');
        for (const path of ['/admin/schema?type=order', '/admin/pointer?type=user', '/admin/list', '/admin/list?type=user&size=0']) {
          expect((await t.request('GET', path, { token: admin.token })).status, path).toBe(422);
        }
      });
    });
  });
});
