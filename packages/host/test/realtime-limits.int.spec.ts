import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelTargetResolverServiceIdentifier, coreModules, defineModule, provide } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { openRpcClient, rpcError, TestTargets, WsProbe } from './support/realtime-clients.js';

const echoModule = defineModule({
  name: 'realtime-test-echo',
  dependsOn: ['realtime'],
  rpcMethods: [{ channels: ['user'], method: 'echo', handler: (params) => params ?? null }],
});

// Limits of the realtime channels, each answered with its documented close code. The deadlines
// are short here so the suite does not wait the production defaults (10 s, 90 s); nothing below
// asserts how long anything took.
describe.each(testDatabases())('realtime limits on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    const targets = new TestTargets();
    const wss = (path: string, token: string) => `${t.wsUrl}${path}?token=${encodeURIComponent(token)}`;

    beforeAll(async () => {
      t = await startTestHost(db, transport, {
        modules: [...coreModules, echoModule],
        adapters: [provide(channelTargetResolverServiceIdentifier, targets)],
        config: {
          realtime: { authTimeoutMs: 2_000, heartbeatTimeoutMs: 3_000, maxMessageBytes: 2_048, maxConnectionsPerUser: 2, maxConnectionsPerTarget: 1 },
        },
      });
    });
    afterAll(() => t?.close());

    it('closes a socket that never sends auth with 4401', async () => {
      const user = await t.register();
      const probe = await WsProbe.open(wss('/v3/wss', user.token));
      expect(await probe.closed).toEqual({ code: 4401, reason: 'auth_timeout' });
    });

    it('closes a silent socket with 4408; rpc-websockets reconnects and must authenticate again', async () => {
      const user = await t.register();
      const client = await openRpcClient(wss('/v3/wss', user.token), { reconnect: true, reconnect_interval: 50, max_reconnects: 3 });
      try {
        expect(await client.call('auth', { token: user.token })).toMatchObject({ status: 'authenticated' });
        expect(await client.call('echo', { n: 1 })).toEqual({ n: 1 });
        const closed = new Promise<number>((resolve) => client.once('close', (code: number) => resolve(code)));
        const reopened = new Promise<void>((resolve) => client.once('open', () => resolve()));
        expect(await closed).toBe(4408);
        await reopened;
        // A new socket knows nobody until it authenticates.
        expect(await rpcError(client.call('echo', { n: 2 }))).toMatchObject({ code: -32001, data: { reason: 'not_authenticated' } });
        expect(await client.call('auth', { token: user.token })).toMatchObject({ status: 'authenticated', userId: user.userId });
        expect(await client.call('echo', { n: 3 })).toEqual({ n: 3 });
      } finally {
        client.setAutoReconnect(false);
        client.close();
      }
    });

    it('closes a socket that sends a message above realtime.maxMessageBytes with 1009', async () => {
      const user = await t.register();
      const probe = await WsProbe.open(wss('/v3/wss', user.token));
      expect((await probe.request('ping')).result).toBe('pong');
      probe.request('echo', { blob: 'x'.repeat(3_000) }).catch(() => undefined);
      expect((await probe.closed).code).toBe(1009);
    });

    it('closes a user\'s socket beyond realtime.maxConnectionsPerUser with 4429, keeping the others', async () => {
      const user = await t.register();
      const first = await WsProbe.open(wss('/v3/wss', user.token));
      const second = await WsProbe.open(wss('/v3/wss', user.token));
      try {
        const third = await WsProbe.open(wss('/v3/wss', user.token));
        expect(await third.closed).toEqual({ code: 4429, reason: 'too_many_connections' });
        expect((await first.request('auth', { token: user.token })).result.status).toBe('authenticated');
        expect((await second.request('ping')).result).toBe('pong');
        // A closed socket frees its place.
        first.close();
        await first.closed;
        const again = await WsProbe.open(wss('/v3/wss', user.token));
        expect((await again.request('ping')).result).toBe('pong');
        again.close();
      } finally {
        second.close();
      }
    });

    it('closes a device\'s socket beyond realtime.maxConnectionsPerTarget with 4429', async () => {
      const owner = await t.register();
      const hdId = targets.add('hardware', owner.userId);
      const first = await WsProbe.open(wss(`/v3/wss/${hdId}`, owner.token));
      try {
        const second = await WsProbe.open(wss(`/v3/wss/${hdId}`, owner.token));
        expect(await second.closed).toEqual({ code: 4429, reason: 'too_many_connections' });
        expect((await first.request('auth', { token: owner.token, hdId })).result).toMatchObject({ status: 'authenticated', hdId });
      } finally {
        first.close();
      }
    });
  });
});
