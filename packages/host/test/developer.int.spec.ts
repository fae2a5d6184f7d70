import { createHash, randomUUID } from 'node:crypto';
import {
  AiModel,
  AiTool,
  authenticatorServiceIdentifier,
  Bot,
  clockServiceIdentifier,
  Conversation,
  Hardware,
  HardwareLog,
  ManualClock,
  provide,
  UserService,
  type RouteDefinition,
} from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const devTypes = ['hardware', 'model', 'bot', 'conv', 'task', 'tool', 'app'] as const;
type DevType = (typeof devTypes)[number];

let userCounter = 0;

/** A user created through the kernel's UserService with the given permission flags, logged in over HTTP. */
async function userWith(t: TestHost, flags: { isDeveloper?: boolean; isAdministrator?: boolean; isSiteAdmin?: boolean }) {
  const email = `dev${++userCounter}-${process.pid}-${Date.now()}@example.com`;
  const password = 'correct horse battery';
  await t.kernel.get(UserService).create(t.kernel.fork(), { email, password, ...flags });
  const login = await t.request('POST', '/auth/login', { body: { email, password } });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  return { token: login.body.token as string, userId: login.body.user.id as string, email };
}

/** A valid create body for each type. */
function createBody(type: DevType, n = 1): Record<string, unknown> {
  if (type === 'conv') return { title: `Conversation ${n}`, description: 'about things', config: { lang: 'en' } };
  if (type === 'model') return { name: `model-${n}`, type: 'chat', description: 'a model', config: { temperature: 0.2 } };
  return { name: `${type}-${n}`, description: `a ${type}`, config: { n } };
}

/** A concrete path for a route pattern, with a random UUID for every parameter. */
const concrete = (route: RouteDefinition) => route.path.replace(/:[A-Za-z0-9_]+/g, () => randomUUID());

describe.each(testDatabases())('developer API on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let clock: ManualClock;
    let dev: Awaited<ReturnType<typeof userWith>>;
    let other: Awaited<ReturnType<typeof userWith>>;
    let routes: RouteDefinition[];

    beforeAll(async () => {
      clock = new ManualClock(Date.parse('2026-03-01T10:00:00.000Z'));
      t = await startTestHost(db, transport, { adapters: [provide(clockServiceIdentifier, clock)] });
      dev = await userWith(t, { isDeveloper: true });
      other = await userWith(t, { isDeveloper: true });
      routes = [...(t.kernel.modules.find((m) => m.name === 'developer')!.routes as RouteDefinition[])];
    });
    afterAll(() => t?.close());

    describe('guards', () => {
      it('answers every developer route with 401 without a token or with a bad one', async () => {
        expect(routes.length).toBeGreaterThanOrEqual(7 * 5 + 4 + 2 + 3);
        for (const route of routes) {
          const path = concrete(route);
          const none = await t.request(route.method, path);
          expect(none.status, `${route.method} ${route.path}`).toBe(401);
          expect(none.body.error).toBe('missing_credentials');
          const bad = await t.request(route.method, path, { token: 'trk_not-a-real-key' });
          expect(bad.status, `${route.method} ${route.path}`).toBe(401);
          expect(bad.body.error).toBe('invalid_token');
        }
      });

      it('answers every developer route with 403 for a user without the developer permission', async () => {
        const plain = await t.register();
        const admin = await userWith(t, { isAdministrator: true });
        for (const route of routes) {
          const path = concrete(route);
          for (const token of [plain.token, admin.token]) {
            const r = await t.request(route.method, path, { token, ...(route.method === 'POST' || route.method === 'PUT' ? { body: {} } : {}) });
            expect(r.status, `${route.method} ${route.path}`).toBe(403);
            expect(r.body.error).toBe('permission_denied');
          }
        }
      });

      it('lets a site administrator in, and accepts API keys of developers', async () => {
        const site = await userWith(t, { isSiteAdmin: true });
        expect((await t.request('GET', '/dev/bot/list', { token: site.token })).status).toBe(200);
        const key = await t.request('POST', '/auth/api-keys', { token: dev.token, body: { name: 'ci' } });
        const r = await t.request('GET', '/dev/task/list', { headers: { 'x-api-key': key.body.token } });
        expect(r.status).toBe(200);
      });
    });

    describe.each(devTypes)('%s', (type) => {
      it('creates, reads, lists, updates and deletes', async () => {
        const created = await t.request('POST', `/dev/${type}`, { token: dev.token, body: createBody(type) });
        expect(created.status).toBe(201);
        const id = created.body.id as string;
        expect(id).toMatch(/^[0-9a-f-]{36}$/);
        expect(created.body).toMatchObject({ ...createBody(type), ownerId: dev.userId });
        expect(Date.parse(created.body.createdAt)).not.toBeNaN();

        const read = await t.request('GET', `/dev/${type}/${id}`, { token: dev.token });
        expect(read.status).toBe(200);
        expect(read.body).toEqual(created.body);

        const nameField = type === 'conv' ? 'title' : 'name';
        const renamed = await t.request('PUT', `/dev/${type}/${id}`, { token: dev.token, body: { [nameField]: 'renamed' } });
        expect(renamed.status).toBe(200);
        expect(renamed.body).toMatchObject({ [nameField]: 'renamed', description: created.body.description });
        // A conversation's title lives in its conf too; everything else stays.
        expect(renamed.body.config).toEqual(type === 'conv' ? { ...created.body.config, title: 'renamed' } : created.body.config);

        const reconfigured = await t.request('PUT', `/dev/${type}/${id}`, { token: dev.token, body: { config: { replaced: true }, description: null } });
        expect(reconfigured.status).toBe(200);
        expect(reconfigured.body.description).toBeNull();
        expect(reconfigured.body[nameField]).toBe('renamed');
        if (type === 'bot' || type === 'conv') expect(reconfigured.body.config).toMatchObject({ replaced: true });
        else expect(reconfigured.body.config).toEqual({ replaced: true });
        expect((await t.request('GET', `/dev/${type}/${id}`, { token: dev.token })).body).toEqual(reconfigured.body);

        const deleted = await t.request('DELETE', `/dev/${type}/${id}`, { token: dev.token });
        expect(deleted.status).toBe(204);
        const gone = await t.request('GET', `/dev/${type}/${id}`, { token: dev.token });
        expect(gone.status).toBe(404);
        expect(gone.body.error).toMatch(/_not_found$/);
        expect((await t.request('DELETE', `/dev/${type}/${id}`, { token: dev.token })).status).toBe(404);
        expect((await t.request('PUT', `/dev/${type}/${id}`, { token: dev.token, body: { config: {} } })).status).toBe(404);
      });

      it('pages the list, newest first, within the caller\'s own resources', async () => {
        const owner = await userWith(t, { isDeveloper: true });
        const ids: string[] = [];
        for (let n = 1; n <= 3; n++) {
          const r = await t.request('POST', `/dev/${type}`, { token: owner.token, body: createBody(type, n) });
          ids.push(r.body.id);
        }
        await t.request('POST', `/dev/${type}`, { token: other.token, body: createBody(type, 9) });

        const first = await t.request('GET', `/dev/${type}/list?size=2`, { token: owner.token });
        expect(first.status).toBe(200);
        expect(first.body).toMatchObject({ total: 3, page: 1, size: 2 });
        expect(first.body.items.map((i: { id: string }) => i.id)).toEqual([ids[2], ids[1]]);
        const second = await t.request('GET', `/dev/${type}/list?page=2&size=2`, { token: owner.token });
        expect(second.body.items.map((i: { id: string }) => i.id)).toEqual([ids[0]]);
        const defaults = await t.request('GET', `/dev/${type}/list`, { token: owner.token });
        expect(defaults.body).toMatchObject({ total: 3, page: 1, size: 20 });

        const generic = await t.request('GET', `/dev/list?type=${type}&page=2&size=2`, { token: owner.token });
        expect(generic.status).toBe(200);
        expect(generic.body).toEqual(second.body);

        for (const bad of ['size=0', 'size=101', 'page=0', 'page=x']) {
          const r = await t.request('GET', `/dev/${type}/list?${bad}`, { token: owner.token });
          expect(r.status, bad).toBe(422);
          expect(r.body.error).toBe('validation_failed');
        }
      });

      it('hides other developers\' resources behind 404', async () => {
        const mine = await t.request('POST', `/dev/${type}`, { token: other.token, body: createBody(type) });
        const id = mine.body.id as string;
        for (const [method, body] of [['GET', undefined], ['PUT', { config: { stolen: true } }], ['DELETE', undefined]] as const) {
          const r = await t.request(method, `/dev/${type}/${id}`, { token: dev.token, body });
          expect(r.status, method).toBe(404);
        }
        const intact = await t.request('GET', `/dev/${type}/${id}`, { token: other.token });
        expect(intact.status).toBe(200);
        expect(intact.body.config).toEqual(mine.body.config);
      });

      it('validates bodies and ids', async () => {
        const required = type === 'conv' ? 'title' : 'name';
        const missing = await t.request('POST', `/dev/${type}`, { token: dev.token, body: { description: 'no name' } });
        expect(missing.status).toBe(422);
        expect(missing.body.details).toContainEqual(expect.objectContaining({ field: required }));
        const empty = await t.request('POST', `/dev/${type}`, { token: dev.token, body: { ...createBody(type), [required]: '  ' } });
        expect(empty.status).toBe(422);
        const arrayConfig = await t.request('POST', `/dev/${type}`, { token: dev.token, body: { ...createBody(type), config: [1, 2] } });
        expect(arrayConfig.status).toBe(422);
        expect(arrayConfig.body.details).toContainEqual(expect.objectContaining({ field: 'config' }));
        const unknown = await t.request('POST', `/dev/${type}`, { token: dev.token, body: { ...createBody(type), ownerId: other.userId } });
        expect(unknown.status).toBe(422);
        expect(unknown.body.details).toContainEqual(expect.objectContaining({ field: 'ownerId', constraint: 'whitelistValidation' }));
        const nullName = await t.request('PUT', `/dev/${type}/${randomUUID()}`, { token: dev.token, body: { [required]: null } });
        expect(nullName.status).toBe(422);
        const broken = await t.request('POST', `/dev/${type}`, { token: dev.token, raw: '{"name":', headers: { 'content-type': 'application/json' } });
        expect(broken.status).toBe(400);
        expect(broken.body.error).toBe('invalid_json');
        const malformedId = await t.request('GET', `/dev/${type}/not-a-uuid`, { token: dev.token });
        expect(malformedId.status).toBe(404);
      });

      it('answers with exactly the fields its JSON Schema lists', async () => {
        const schema = await t.request('GET', `/dev/schema?type=${type}`, { token: dev.token });
        expect(schema.status).toBe(200);
        expect(schema.body).toMatchObject({ $schema: 'https://json-schema.org/draft/2020-12/schema', $id: `urn:trellis:dev:${type}`, title: type, type: 'object' });
        const created = await t.request('POST', `/dev/${type}`, { token: dev.token, body: createBody(type) });
        expect(Object.keys(created.body).sort()).toEqual(Object.keys(schema.body.properties).sort());
        for (const field of schema.body.required) expect(created.body, field).toHaveProperty(field);
      });
    });

    describe('shared entities', () => {
      it('stores bots, conversations, models and tools in their areas\' entities, mapped as documented', async () => {
        const bot = await t.request('POST', '/dev/bot', { token: dev.token, body: { name: 'Helper', description: 'helps', config: { avatar: 'a.png', modelId: 'm1' } } });
        const conv = await t.request('POST', '/dev/conv', { token: dev.token, body: { title: 'Chat', description: 'about', config: { title: 'ignored', x: 1 } } });
        const model = await t.request('POST', '/dev/model', { token: dev.token, body: { name: 'gpt', type: 'chat', description: 'fast', config: { k: 1 } } });
        const tool = await t.request('POST', '/dev/tool', { token: dev.token, body: { name: 'search', description: 'finds', config: { url: 'https://x' } } });
        const em = t.kernel.fork();

        const b = await em.findOneOrFail(Bot, { id: bot.body.id }, { populate: ['owner'] });
        expect(b).toMatchObject({ name: 'Helper', conf: { avatar: 'a.png', modelId: 'm1', desc: 'helps' } });
        expect(b.owner.id).toBe(dev.userId);

        const c = await em.findOneOrFail(Conversation, { id: conv.body.id });
        expect(c).toMatchObject({ name: 'Chat', conf: { title: 'Chat', description: 'about', x: 1 }, members: [dev.userId], bot: null });
        expect(conv.body).toMatchObject({ title: 'Chat', description: 'about', botId: null, members: [dev.userId] });

        const m = await em.findOneOrFail(AiModel, { id: model.body.id });
        expect(m).toMatchObject({ name: 'gpt', type: 'chat', desc: 'fast', conf: { k: 1 }, service: null });

        const tl = await em.findOneOrFail(AiTool, { id: tool.body.id });
        expect(tl).toMatchObject({ name: 'search', desc: 'finds', conf: { url: 'https://x' }, actions: [] });

        // A description sent alone keeps the config; a config sent alone keeps the description.
        const described = await t.request('PUT', `/dev/bot/${bot.body.id}`, { token: dev.token, body: { description: 'helps more' } });
        expect(described.body.config).toEqual({ avatar: 'a.png', modelId: 'm1', desc: 'helps more' });
        const reconf = await t.request('PUT', `/dev/bot/${bot.body.id}`, { token: dev.token, body: { config: { avatar: 'b.png' } } });
        expect(reconf.body).toMatchObject({ description: 'helps more', config: { avatar: 'b.png', desc: 'helps more' } });
        const retitled = await t.request('PUT', `/dev/conv/${conv.body.id}`, { token: dev.token, body: { title: 'Renamed' } });
        expect(retitled.body).toMatchObject({ title: 'Renamed', description: 'about' });
        expect((await t.kernel.fork().findOneOrFail(Conversation, { id: conv.body.id })).name).toBe('Renamed');
      });

      it('deletes the conversations of a deleted bot', async () => {
        const bot = await t.request('POST', '/dev/bot', { token: dev.token, body: { name: 'Doomed' } });
        const em = t.kernel.fork();
        const conv = em.create(Conversation, {
          id: randomUUID(),
          owner: dev.userId,
          name: 'bot chat',
          bot: bot.body.id,
          conf: {},
          members: [dev.userId],
        } as never);
        await em.flush();
        expect((await t.request('DELETE', `/dev/bot/${bot.body.id}`, { token: dev.token })).status).toBe(204);
        expect(await t.kernel.fork().count(Conversation, { id: (conv as Conversation).id })).toBe(0);
      });
    });

    describe('hardware logs', () => {
      let hdId: string;
      beforeAll(async () => {
        hdId = (await t.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'probe' } })).body.id;
      });

      it('appends entries and reads them newest first within a time window', async () => {
        const times = ['2026-03-01T10:00:00.000Z', '2026-03-01T11:00:00.000Z', '2026-03-01T12:00:00.000Z', '2026-03-01T13:00:00.000Z'];
        for (const [i, time] of times.entries()) {
          clock.set(Date.parse(time));
          const r = await t.request('POST', `/dev/hardware/${hdId}/logs`, { token: dev.token, body: { type: i % 2 ? 'error' : 'info', content: `entry ${i}` } });
          expect(r.status).toBe(201);
          expect(r.body).toEqual({ id: expect.any(String), hardwareId: hdId, type: i % 2 ? 'error' : 'info', content: `entry ${i}`, createdAt: time });
        }
        const all = await t.request('GET', `/dev/hardware/${hdId}/logs`, { token: dev.token });
        expect(all.status).toBe(200);
        expect(all.body).toMatchObject({ total: 4, page: 1, size: 20 });
        expect(all.body.items.map((e: { content: string }) => e.content)).toEqual(['entry 3', 'entry 2', 'entry 1', 'entry 0']);

        const window = await t.request('GET', `/dev/hardware/${hdId}/logs?start_time=2026-03-01T11:00:00Z&end_time=${Date.parse(times[2]!)}`, { token: dev.token });
        expect(window.status).toBe(200);
        expect(window.body.total).toBe(2);
        expect(window.body.items.map((e: { content: string }) => e.content)).toEqual(['entry 2', 'entry 1']);

        const from = await t.request('GET', `/dev/hardware/${hdId}/logs?start_time=2026-03-01T12:30:00%2B01:00&size=1&page=1`, { token: dev.token });
        // 12:30+01:00 is 11:30Z: entries 2 and 3.
        expect(from.body).toMatchObject({ total: 2, size: 1 });
        expect(from.body.items[0].content).toBe('entry 3');
      });

      it('refuses bad windows, bad entries and foreign devices', async () => {
        for (const q of ['start_time=yesterday', 'end_time=2026-03-01', 'start_time=2026-03-01T10:00:00']) {
          const r = await t.request('GET', `/dev/hardware/${hdId}/logs?${q}`, { token: dev.token });
          expect(r.status, q).toBe(422);
          expect(r.body.error).toBe('validation_failed');
        }
        const reversed = await t.request('GET', `/dev/hardware/${hdId}/logs?start_time=2026-03-02T00:00:00Z&end_time=2026-03-01T00:00:00Z`, { token: dev.token });
        expect(reversed.status).toBe(422);
        expect(reversed.body.error).toBe('invalid_time_range');

        for (const body of [{ type: 'info' }, { content: 'x' }, { type: '', content: 'x' }, { type: 'info', content: '' }, { type: 'a b', content: 'x' }, { type: 'info', content: 'x'.repeat(65_537) }]) {
          const r = await t.request('POST', `/dev/hardware/${hdId}/logs`, { token: dev.token, body });
          expect(r.status, JSON.stringify(body).slice(0, 40)).toBe(422);
        }
        expect((await t.request('GET', `/dev/hardware/${hdId}/logs`, { token: other.token })).status).toBe(404);
        const foreign = await t.request('POST', `/dev/hardware/${hdId}/logs`, { token: other.token, body: { type: 'info', content: 'spoof' } });
        expect(foreign.status).toBe(404);
        expect(foreign.body.error).toBe('hardware_not_found');
        expect((await t.request('GET', `/dev/hardware/${randomUUID()}/logs`, { token: dev.token })).status).toBe(404);
      });

      it('records a sim entry holding a JSON object as the reported SIM information', async () => {
        clock.set(Date.parse('2026-03-02T08:00:00.000Z'));
        await t.request('POST', `/dev/hardware/${hdId}/logs`, { token: dev.token, body: { type: 'sim', content: 'not json' } });
        expect((await t.request('GET', `/dev/hardware/${hdId}`, { token: dev.token })).body.sim.reported).toBeNull();
        await t.request('POST', `/dev/hardware/${hdId}/logs`, { token: dev.token, body: { type: 'sim', content: JSON.stringify({ iccid: '8949', carrier: 'ACME' }) } });
        const hw = await t.request('GET', `/dev/hardware/${hdId}`, { token: dev.token });
        expect(hw.body.sim).toEqual({ reported: { iccid: '8949', carrier: 'ACME' }, reportedAt: '2026-03-02T08:00:00.000Z', synced: null, syncedAt: null });
      });

      it('deletes the logs with their device', async () => {
        const hd = (await t.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'short-lived' } })).body.id;
        await t.request('POST', `/dev/hardware/${hd}/logs`, { token: dev.token, body: { type: 'info', content: 'bye' } });
        expect(await t.kernel.fork().count(HardwareLog, { hardware: hd })).toBe(1);
        expect((await t.request('DELETE', `/dev/hardware/${hd}`, { token: dev.token })).status).toBe(204);
        expect(await t.kernel.fork().count(HardwareLog, { hardware: hd })).toBe(0);
      });
    });

    describe('device tokens', () => {
      for (const [type, kind] of [['hardware', 'hardware'], ['app', 'application']] as const) {
        it(`issues, rotates and revokes the token of ${kind === 'hardware' ? 'a device' : 'an application'}`, async () => {
          const id = (await t.request('POST', `/dev/${type}`, { token: dev.token, body: { name: 'tokened' } })).body.id as string;
          const issued = await t.request('POST', `/dev/${type}/${id}/token`, { token: dev.token });
          expect(issued.status).toBe(201);
          expect(issued.body).toMatchObject({ kind, id, prefix: issued.body.token.slice(0, 12) });
          expect(issued.body.token).toMatch(/^tdv_[A-Za-z0-9_-]{43}$/);
          const view = await t.request('GET', `/dev/${type}/${id}`, { token: dev.token });
          expect(view.body.token).toEqual({ prefix: issued.body.prefix, issuedAt: issued.body.issuedAt });
          expect(view.text).not.toContain(issued.body.token);

          // Only the SHA-256 digest is stored.
          const em = t.kernel.fork();
          const row = (await em.getConnection().execute(`select * from ${type === 'hardware' ? 'hardware_devices' : 'applications'} where id = ?`, [id]))[0];
          expect(row.token_hash).toBe(createHash('sha256').update(issued.body.token).digest('hex'));
          expect(JSON.stringify(row)).not.toContain(issued.body.token);

          const authenticator = t.kernel.get(authenticatorServiceIdentifier);
          const meta = { ip: '127.0.0.1', userAgent: 'test' };
          const principal = await authenticator.authenticate(issued.body.token, meta);
          expect(principal).toMatchObject({ kind: 'device', userId: dev.userId, user: { id: dev.userId }, device: { kind, id } });

          // A device token opens the device's channel only: HTTP routes refuse it as a credential kind.
          const me = await t.request('GET', '/auth/me', { token: issued.body.token });
          expect(me.status).toBe(403);
          expect(me.body.error).toBe('credential_not_allowed');
          expect((await t.request('GET', `/dev/${type}/list`, { token: issued.body.token })).status).toBe(403);

          const rotated = await t.request('POST', `/dev/${type}/${id}/token`, { token: dev.token });
          expect(rotated.body.token).not.toBe(issued.body.token);
          await expect(authenticator.authenticate(issued.body.token, meta)).rejects.toMatchObject({ code: 'invalid_token' });
          expect((await t.request('GET', '/auth/me', { token: issued.body.token })).status).toBe(401);
          await expect(authenticator.authenticate(rotated.body.token, meta)).resolves.toMatchObject({ device: { id } });

          expect((await t.request('POST', `/dev/${type}/${id}/token`, { token: other.token })).status).toBe(404);
          expect((await t.request('DELETE', `/dev/${type}/${id}/token`, { token: other.token })).status).toBe(404);
          const revoked = await t.request('DELETE', `/dev/${type}/${id}/token`, { token: dev.token });
          expect(revoked.status).toBe(204);
          await expect(authenticator.authenticate(rotated.body.token, meta)).rejects.toMatchObject({ code: 'invalid_token' });
          expect((await t.request('GET', `/dev/${type}/${id}`, { token: dev.token })).body.token).toBeNull();

          const again = await t.request('POST', `/dev/${type}/${id}/token`, { token: dev.token });
          await authenticator.authenticate(again.body.token, meta);
          expect((await t.request('DELETE', `/dev/${type}/${id}`, { token: dev.token })).status).toBe(204);
          await expect(authenticator.authenticate(again.body.token, meta)).rejects.toMatchObject({ code: 'invalid_token' });
        });
      }

      it('lets a device write its own logs with its token, and no other device\'s', async () => {
        const hd = (await t.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'self-reporting' } })).body.id as string;
        const sibling = (await t.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'sibling' } })).body.id as string;
        const app = (await t.request('POST', '/dev/app', { token: dev.token, body: { name: 'an app' } })).body.id as string;
        const deviceToken = (await t.request('POST', `/dev/hardware/${hd}/token`, { token: dev.token })).body.token as string;
        const appToken = (await t.request('POST', `/dev/app/${app}/token`, { token: dev.token })).body.token as string;
        clock.set(Date.parse('2026-03-04T07:00:00.000Z'));

        const sim = { iccid: '8949020000', carrier: 'ACME' };
        const own = await t.request('POST', `/dev/hardware/${hd}/logs`, { token: deviceToken, body: { type: 'sim', content: JSON.stringify(sim) } });
        expect(own.status).toBe(201);
        const view = (await t.request('GET', `/dev/hardware/${hd}`, { token: dev.token })).body;
        expect(view).toMatchObject({ status: 'active', lastSeenAt: '2026-03-04T07:00:00.000Z', sim: { reported: sim, reportedAt: '2026-03-04T07:00:00.000Z' } });

        const cross = await t.request('POST', `/dev/hardware/${sibling}/logs`, { token: deviceToken, body: { type: 'info', content: 'spoof' } });
        expect(cross.status).toBe(403);
        expect(cross.body.error).toBe('device_token_mismatch');
        const byApp = await t.request('POST', `/dev/hardware/${hd}/logs`, { token: appToken, body: { type: 'info', content: 'spoof' } });
        expect(byApp.status).toBe(403);
        expect(byApp.body.error).toBe('device_token_mismatch');
        expect((await t.request('GET', `/dev/hardware/${hd}/logs`, { token: deviceToken })).status).toBe(403);
        expect(await t.kernel.fork().count(HardwareLog, { hardware: sibling })).toBe(0);
      });

      it('refuses the token of a device whose owner is disabled', async () => {
        const owner = await userWith(t, { isDeveloper: true });
        const id = (await t.request('POST', '/dev/hardware', { token: owner.token, body: { name: 'orphan' } })).body.id;
        const { token } = (await t.request('POST', `/dev/hardware/${id}/token`, { token: owner.token })).body;
        const authenticator = t.kernel.get(authenticatorServiceIdentifier);
        const meta = { ip: '127.0.0.1', userAgent: 'test' };
        await authenticator.authenticate(token, meta);
        await t.kernel.get(UserService).update(t.kernel.fork(), owner.userId, { status: 'disabled' });
        await expect(authenticator.authenticate(token, meta)).rejects.toMatchObject({ code: 'invalid_token' });
      });
    });

    describe('schema, pointer and list', () => {
      it('answers RFC 6901 pointers into a type\'s schema', async () => {
        const whole = await t.request('GET', '/dev/pointer?type=hardware&pointer=', { token: dev.token });
        expect(whole.status).toBe(200);
        expect(whole.body.value).toEqual((await t.request('GET', '/dev/schema?type=hardware', { token: dev.token })).body);
        const name = await t.request('GET', '/dev/pointer?type=model&pointer=/properties/type', { token: dev.token });
        expect(name.body).toEqual({ type: 'model', pointer: '/properties/type', value: { type: 'string', minLength: 1, maxLength: 64 } });
        const first = await t.request('GET', `/dev/pointer?type=conv&pointer=${encodeURIComponent('/required/0')}`, { token: dev.token });
        expect(first.body.value).toBe('id');
        const status = await t.request('GET', `/dev/pointer?type=hardware&pointer=${encodeURIComponent('/properties/status/enum/2')}`, { token: dev.token });
        expect(status.body.value).toBe('resetting');
        const fragment = await t.request('GET', `/dev/pointer?type=app&pointer=${encodeURIComponent('#/properties/name/maxLength')}`, { token: dev.token });
        expect(fragment.body.value).toBe(200);
        const schemaKey = await t.request('GET', `/dev/pointer?type=app&pointer=${encodeURIComponent('/$id')}`, { token: dev.token });
        expect(schemaKey.body.value).toBe('urn:trellis:dev:app');
      });

      it('refuses unknown types, malformed pointers and pointers to nothing', async () => {
        for (const path of ['/dev/schema', '/dev/schema?type=vdb', '/dev/pointer?type=bot', '/dev/pointer?pointer=/x', '/dev/list', '/dev/list?type=users']) {
          const r = await t.request('GET', path, { token: dev.token });
          expect(r.status, path).toBe(422);
          expect(r.body.error).toBe('validation_failed');
        }
        for (const pointer of ['properties', '/properties/~2', '/~']) {
          const r = await t.request('GET', `/dev/pointer?type=bot&pointer=${encodeURIComponent(pointer)}`, { token: dev.token });
          expect(r.status, pointer).toBe(400);
          expect(r.body.error).toBe('invalid_pointer');
        }
        for (const pointer of ['/properties/nope', '/required/99', '/required/-', '/properties/name/type/x']) {
          const r = await t.request('GET', `/dev/pointer?type=bot&pointer=${encodeURIComponent(pointer)}`, { token: dev.token });
          expect(r.status, pointer).toBe(404);
          expect(r.body.error).toBe('pointer_not_found');
        }
      });
    });

    describe('channel ports', () => {
      it('resolves device and application ids for the realtime channel, and stores what devices report', async () => {
        const { channelTargetResolverServiceIdentifier, hardwareMessageSinkServiceIdentifier } = await import('@trellis/core');
        const hd = (await t.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'reporter' } })).body.id as string;
        const app = (await t.request('POST', '/dev/app', { token: dev.token, body: { name: 'viewer' } })).body.id as string;
        const resolver = t.kernel.get(channelTargetResolverServiceIdentifier);
        expect(await resolver.resolve(t.kernel.fork(), hd)).toEqual({ kind: 'hardware', id: hd, ownerId: dev.userId });
        expect(await resolver.resolve(t.kernel.fork(), app)).toEqual({ kind: 'application', id: app, ownerId: dev.userId });
        expect(await resolver.resolve(t.kernel.fork(), randomUUID())).toBeNull();
        expect(await resolver.resolve(t.kernel.fork(), 'not-a-uuid')).toBeNull();

        const sink = t.kernel.get(hardwareMessageSinkServiceIdentifier);
        clock.set(Date.parse('2026-03-03T09:00:00.000Z'));
        await sink.record(t.kernel.fork(), hd, { method: 'status', params: { type: 'heartbeat', data: { cpu: 12, memory: 40, temperature: 51 } } });
        await sink.record(t.kernel.fork(), hd, { method: 'sensor', params: { sensorId: 't1', type: 'temperature', value: 21.5, unit: 'C' } });
        await sink.record(t.kernel.fork(), hd, { method: 'status', params: { type: 'sim', data: { iccid: '1234' } } });
        const logs = await t.request('GET', `/dev/hardware/${hd}/logs`, { token: dev.token });
        expect(logs.body.items.map((e: { type: string; content: string }) => [e.type, JSON.parse(e.content)])).toEqual([
          ['sim', { iccid: '1234' }],
          ['sensor', { sensorId: 't1', type: 'temperature', value: 21.5, unit: 'C' }],
          ['status', { type: 'heartbeat', data: { cpu: 12, memory: 40, temperature: 51 } }],
        ]);
        const device = await t.request('GET', `/dev/hardware/${hd}`, { token: dev.token });
        expect(device.body).toMatchObject({ status: 'active', lastSeenAt: '2026-03-03T09:00:00.000Z', sim: { reported: { iccid: '1234' } } });
        await expect(sink.record(t.kernel.fork(), randomUUID(), { method: 'sensor', params: { sensorId: 'x', type: 't', value: 1 } })).rejects.toMatchObject({
          code: 'hardware_not_found',
        });
        expect(await t.kernel.fork().count(Hardware, { id: hd, status: 'active' })).toBe(1);
      });
    });
  });
});
