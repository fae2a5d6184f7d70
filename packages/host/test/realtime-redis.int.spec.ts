import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provide, pubSubServiceIdentifier, PushService, UserService } from '@trellis/core';
import { RedisPubSub } from '@trellis/pubsub-redis';
import { sharedDatabase, startTestHost, testDatabases, testRedisUrl, transports, type TestHost } from '@trellis/test-support';
import { nextEvent, openRpcClient, rpcCall, WsProbe } from './support/realtime-clients.js';

const redisUrl = testRedisUrl ?? '';


// Two host processes' worth of kernels share one database and one Redis: a push published by one
// reaches the sockets held by the other.
describe.skipIf(!testRedisUrl).each(testDatabases())('realtime across hosts through Redis on $name', (base) => {
  describe.each(transports)('over %s', (transport) => {
    const db = sharedDatabase(base);
    // A prefix of its own, so parallel runs sharing the Redis server do not hear each other.
    const channelPrefix = `trellis-test:${process.pid}:${randomUUID()}:`;
    let a: TestHost;
    let b: TestHost;
    const wss = (host: TestHost, path: string, token: string) => `${host.wsUrl}${path}?token=${encodeURIComponent(token)}`;

    beforeAll(async () => {
      const start = () =>
        startTestHost(db, transport, {
          adapters: [provide(pubSubServiceIdentifier, new RedisPubSub({ url: redisUrl, channelPrefix }))],
        });
      a = await start();
      b = await start();
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
      await db.cleanup();
    });

    it('delivers a push published on one host to a user connected to the other (rpc-websockets)', async () => {
      const user = await a.register();
      const client = await openRpcClient(wss(b, '/v3/wss', user.token));
      try {
        expect(await rpcCall(client, 'auth', { token: user.token })).toMatchObject({ status: 'authenticated', userId: user.userId });
        const received = nextEvent(client, 'system');
        await a.kernel.get(PushService).toUser(user.userId, 'system', { type: 'notice', content: 'from host a' });
        expect(await received).toEqual({ type: 'notice', content: 'from host a', seq: 1 });
      } finally {
        client.close();
      }
    });

    it('delivers one push to the sockets of a user on both hosts, and binary-safe unicode intact', async () => {
      const user = await b.register();
      const onA = await WsProbe.open(wss(a, '/v3/wss', user.token));
      const onB = await WsProbe.open(wss(b, '/v3/wss', user.token));
      try {
        await onA.request('auth', { token: user.token });
        await onB.request('auth', { token: user.token });
        await b.kernel.get(PushService).toUser(user.userId, 'conversation', { convId: 'c', type: 'delta', content: 'héllo ✓ 世界' });
        for (const probe of [onA, onB]) {
          expect((await probe.next((m) => m.method === 'conversation')).params).toEqual({ convId: 'c', type: 'delta', content: 'héllo ✓ 世界', seq: 1 });
        }
      } finally {
        onA.close();
        onB.close();
      }
    });

    /** A user with developer or administrator permission, created on `host` and logged in there. */
    async function userWith(host: TestHost, flags: { isDeveloper?: boolean; isAdministrator?: boolean }) {
      const email = `rt-${randomUUID()}@example.com`;
      const password = 'correct horse battery';
      await host.kernel.get(UserService).create(host.kernel.fork(), { email, password, ...flags });
      const login = await host.request('POST', '/auth/login', { body: { email, password } });
      return { token: login.body.token as string, userId: login.body.user.id as string };
    }

    it('delivers an administrator\'s reset on one host to the device connected to the other (developer module, device token)', async () => {
      const dev = await userWith(a, { isDeveloper: true });
      const admin = await userWith(a, { isAdministrator: true });
      const hdId = (await a.request('POST', '/dev/hardware', { token: dev.token, body: { name: 'sensor-box' } })).body.id as string;
      const deviceToken = (await a.request('POST', `/dev/hardware/${hdId}/token`, { token: dev.token })).body.token as string;
      const device = await WsProbe.open(wss(b, `/v3/wss/${hdId}`, deviceToken));
      try {
        expect((await device.request('auth', { token: deviceToken, hdId })).result).toMatchObject({ status: 'authenticated', hdId });
        const reset = await a.request('POST', `/admin/hardware/${hdId}/reset`, { token: admin.token, body: { mode: 'soft' } });
        expect(reset.status).toBe(200);
        expect((await device.next((m) => m.method === 'control')).params).toMatchObject({ command: 'reset', target: 'device', params: { mode: 'soft' }, seq: 1 });
        // What the device reports on host b is stored in the shared database, readable on host a.
        expect((await device.request('status', { type: 'boot', data: { cpu: 5 } })).result).toEqual({ recorded: true });
        const logs = await a.request('GET', `/dev/hardware/${hdId}/logs`, { token: dev.token });
        expect(logs.body.items.map((e: { type: string }) => e.type)).toContain('status');
      } finally {
        device.close();
      }
    });

    it('delivers an application push from one host to the application connected to the other (rpc-websockets)', async () => {
      const dev = await userWith(b, { isDeveloper: true });
      const appId = (await b.request('POST', '/dev/app', { token: dev.token, body: { name: 'dashboard' } })).body.id as string;
      const app = await openRpcClient(wss(b, `/v3/wss/${appId}`, dev.token));
      try {
        expect(await rpcCall(app, 'auth', { token: dev.token, appId })).toMatchObject({ status: 'authenticated', appId });
        const task = nextEvent(app, 'task');
        await a.kernel.get(PushService).toApplication(appId, 'task', { taskId: 't', status: 'done', result: { success: true, data: null } });
        expect(await task).toEqual({ taskId: 't', status: 'done', result: { success: true, data: null }, seq: 1 });
      } finally {
        app.close();
      }
    });
  });
});
