import { randomUUID } from 'node:crypto';
import { UserService } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WsProbe } from './support/realtime-clients.js';

let userCounter = 0;

async function userWith(t: TestHost, flags: { isDeveloper?: boolean; isAdministrator?: boolean }) {
  const email = `chan${++userCounter}-${process.pid}-${Date.now()}@example.com`;
  const password = 'correct horse battery';
  await t.kernel.get(UserService).create(t.kernel.fork(), { email, password, ...flags });
  const login = await t.request('POST', '/auth/login', { body: { email, password } });
  return { token: login.body.token as string, userId: login.body.user.id as string };
}

// Hardware devices and applications of the developer API on their realtime channel
// (`/v3/wss/{id}`), with the real developer module behind the realtime ports, spoken by a plain
// `ws` client as a device would.
describe.each(testDatabases())('developer devices on the realtime channel on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let dev: Awaited<ReturnType<typeof userWith>>;
    let admin: Awaited<ReturnType<typeof userWith>>;
    const sockets: WsProbe[] = [];
    const wss = (id: string, token: string) => `${t.wsUrl}/v3/wss/${id}?token=${encodeURIComponent(token)}`;
    const open = async (url: string) => {
      const probe = await WsProbe.open(url);
      sockets.push(probe);
      return probe;
    };

    /** A new device of `dev` with a device token. */
    async function device(kind: 'hardware' | 'app' = 'hardware') {
      const id = (await t.request('POST', `/dev/${kind}`, { token: dev.token, body: { name: `${kind}-${randomUUID().slice(0, 8)}` } })).body.id as string;
      const token = (await t.request('POST', `/dev/${kind}/${id}/token`, { token: dev.token })).body.token as string;
      return { id, token };
    }

    beforeAll(async () => {
      t = await startTestHost(db, transport);
      dev = await userWith(t, { isDeveloper: true });
      admin = await userWith(t, { isAdministrator: true });
    });
    afterAll(async () => {
      for (const socket of sockets) socket.close();
      await t?.close();
    });

    it('connects a device with its own token and delivers an administrator\'s reset as a control notification', async () => {
      const hd = await device();
      const socket = await open(wss(hd.id, hd.token));
      const auth = await socket.request('auth', { token: hd.token, hdId: hd.id });
      expect(auth.result).toMatchObject({ status: 'authenticated', hdId: hd.id });

      const reset = await t.request('POST', `/admin/hardware/${hd.id}/reset`, { token: admin.token, body: { mode: 'factory' } });
      expect(reset.status).toBe(200);
      const control = await socket.next((m) => m.method === 'control');
      expect(control).toMatchObject({ jsonrpc: '2.0', method: 'control', params: { command: 'reset', target: 'device', params: { mode: 'factory' } } });
      expect(control.id).toBeUndefined();
      expect((await t.request('GET', `/dev/hardware/${hd.id}`, { token: dev.token })).body.status).toBe('resetting');

      // The device reports after the reset: recorded as logs, and the device is active again.
      const status = await socket.request('status', { type: 'boot', data: { cpu: 3, memory: 20, temperature: 40 } });
      expect(status.result).toEqual({ recorded: true });
      const sensor = await socket.request('sensor', { sensorId: 'door', type: 'contact', value: true });
      expect(sensor.result).toEqual({ recorded: true });
      const logs = await t.request('GET', `/dev/hardware/${hd.id}/logs`, { token: dev.token });
      expect(logs.body.items.map((e: { type: string }) => e.type)).toEqual(['sensor', 'status', 'control']);
      expect(JSON.parse(logs.body.items[1].content)).toEqual({ type: 'boot', data: { cpu: 3, memory: 20, temperature: 40 } });
      const after = await t.request('GET', `/dev/hardware/${hd.id}`, { token: dev.token });
      expect(after.body.status).toBe('active');
      expect(after.body.lastSeenAt).not.toBeNull();
    });

    it('lets the owner connect with their own JWT, and an application with its token', async () => {
      const hd = await device();
      const owner = await open(wss(hd.id, dev.token));
      expect((await owner.request('auth', { token: dev.token, hdId: hd.id })).result).toMatchObject({ status: 'authenticated', hdId: hd.id });

      const app = await device('app');
      const appSocket = await open(wss(app.id, app.token));
      expect((await appSocket.request('auth', { token: app.token, appId: app.id })).result).toMatchObject({ status: 'authenticated', appId: app.id });
    });

    it('refuses another developer, replaced tokens and unknown devices', async () => {
      const hd = await device();
      const stranger = await userWith(t, { isDeveloper: true });
      const foreign = await open(wss(hd.id, stranger.token));
      const denied = await foreign.request('auth', { token: stranger.token, hdId: hd.id });
      expect(denied.error).toMatchObject({ code: -32002 });

      await t.request('POST', `/dev/hardware/${hd.id}/token`, { token: dev.token });
      await expect(WsProbe.open(wss(hd.id, hd.token))).rejects.toMatchObject({ status: 401 });
      const other = await device();
      await expect(WsProbe.open(wss(randomUUID(), other.token))).rejects.toMatchObject({ status: 404 });
    });

    it('closes a device\'s open socket when its token is replaced or the device deleted', async () => {
      const hd = await device();
      const socket = await open(wss(hd.id, hd.token));
      expect((await socket.request('auth', { token: hd.token, hdId: hd.id })).result).toMatchObject({ status: 'authenticated' });
      await t.request('POST', `/dev/hardware/${hd.id}/token`, { token: dev.token });
      expect((await socket.closed).code).toBe(4403);

      const gone = await device();
      const second = await open(wss(gone.id, gone.token));
      expect((await second.request('auth', { token: gone.token, hdId: gone.id })).result).toMatchObject({ status: 'authenticated' });
      expect((await t.request('DELETE', `/dev/hardware/${gone.id}`, { token: dev.token })).status).toBe(204);
      expect((await second.closed).code).toBe(4403);
    });

    it('confines a device token to its own device\'s channel', async () => {
      const a = await device();
      const b = await device();
      const wrong = await open(wss(b.id, a.token));
      const auth = await wrong.request('auth', { token: a.token, hdId: b.id });
      expect(auth.result, 'a device token must not open another device of the same owner').toBeUndefined();
      expect(auth.error).toMatchObject({ code: -32001, data: { error: 'hardware_auth_failed', reason: 'device_token_mismatch' } });
      // Nor an application's channel.
      const app = await device('app');
      const onApp = await open(wss(app.id, a.token));
      expect((await onApp.request('auth', { token: a.token, appId: app.id })).error).toMatchObject({ code: -32001 });
    });

    it('keeps a device token off its owner\'s user channel', async () => {
      const hd = await device();
      const socket = await open(`${t.wsUrl}/v3/wss?token=${encodeURIComponent(hd.token)}`);
      const auth = await socket.request('auth', { token: hd.token });
      expect(auth.result, 'a device token must not receive its owner\'s user pushes').toBeUndefined();
      expect(auth.error).toMatchObject({ code: -32001, data: { error: 'user_auth_failed', reason: 'credential_not_allowed' } });
    });
  });
});
