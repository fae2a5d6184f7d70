import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  channelTargetResolverServiceIdentifier,
  coreModules,
  defineModule,
  hardwareMessageSinkServiceIdentifier,
  provide,
  PushService,
  TrellisError,
  type RealtimeSessionInfo,
} from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { nextEvent, openRpcClient, rpcError, TestTargets, WsProbe } from './support/realtime-clients.js';

/** A module that adds JSON-RPC methods to the realtime channels, as any module may. */
const echoModule = defineModule({
  name: 'realtime-test-echo',
  dependsOn: ['realtime'],
  rpcMethods: [
    {
      channels: ['user', 'application'],
      method: 'whoami',
      handler: (_params, ctx) => {
        const session = ctx.session as RealtimeSessionInfo;
        return { kind: session.kind, targetId: session.targetId, userId: session.userId };
      },
    },
    {
      channels: ['user'],
      method: 'fail',
      handler: (params) => {
        if ((params as { exposed?: boolean } | undefined)?.exposed) throw new TrellisError('conflict', 'test_conflict', 'A conflict the test asked for.');
        throw new Error('secret internal detail');
      },
    },
  ],
});

// The JSON-RPC channels, spoken by independent clients: rpc-websockets (its Client) for users and
// applications, plain `ws` for hardware devices and protocol edge cases.
describe.each(testDatabases())('realtime channels on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    const targets = new TestTargets();
    const wss = (path: string, token: string) => `${t.wsUrl}${path}?token=${encodeURIComponent(token)}`;
    const push = () => t.kernel.get(PushService);

    beforeAll(async () => {
      t = await startTestHost(db, transport, {
        modules: [...coreModules, echoModule],
        adapters: [provide(channelTargetResolverServiceIdentifier, targets), provide(hardwareMessageSinkServiceIdentifier, targets)],
        config: { realtime: { resumeBufferSize: 3, maxBatchSize: 5 } },
      });
    });
    afterAll(() => t?.close());

    describe('user channel', () => {
      it('authenticates with the spec result and answers ping with pong (rpc-websockets)', async () => {
        const user = await t.register();
        const client = await openRpcClient(wss('/v3/wss', user.token));
        try {
          const result = await client.call('auth', { token: user.token });
          expect(result).toMatchObject({ status: 'authenticated', userId: user.userId, seq: 0 });
          expect(typeof (result as { epoch: string }).epoch).toBe('string');
          expect(await client.call('ping')).toBe('pong');
          expect(await client.call('whoami')).toEqual({ kind: 'user', targetId: user.userId, userId: user.userId });
        } finally {
          client.close();
        }
      });

      it('refuses an upgrade without a token or with a bad one (401)', async () => {
        await expect(WsProbe.open(`${t.wsUrl}/v3/wss`)).rejects.toMatchObject({ status: 401 });
        const bad = await WsProbe.open(`${t.wsUrl}/v3/wss?token=not-a-token`).catch((e: { status: number; body: string }) => e);
        expect(bad).toMatchObject({ status: 401 });
        expect(JSON.parse((bad as { body: string }).body)).toMatchObject({ error: 'invalid_token' });
      });

      it('answers -32001 (user variant) before auth, for bad tokens and for another user\'s token', async () => {
        const user = await t.register();
        const other = await t.register();
        const client = await openRpcClient(wss('/v3/wss', user.token));
        try {
          const early = await rpcError(client.call('whoami'));
          expect(early).toMatchObject({ code: -32001, data: { error: 'user_auth_failed', reason: 'not_authenticated' } });
          expect(early.message).toMatch(/^User authentication failed/);
          const garbage = await rpcError(client.call('auth', { token: 'trk_nope' }));
          expect(garbage).toMatchObject({ code: -32001, data: { error: 'user_auth_failed', reason: 'invalid_token' } });
          const mismatch = await rpcError(client.call('auth', { token: other.token }));
          expect(mismatch).toMatchObject({ code: -32001, data: { reason: 'token_mismatch' } });
          expect(await rpcError(client.call('auth', {}))).toMatchObject({ code: -32602, data: { error: 'invalid_params' } });
          expect(await rpcError(client.call('auth', { token: 42 }))).toMatchObject({ code: -32602 });
          // Still usable: a correct auth succeeds after the failures.
          expect(await client.call('auth', { token: user.token })).toMatchObject({ status: 'authenticated' });
          expect(await rpcError(client.call('no.such.method'))).toMatchObject({ code: -32601, data: { error: 'method_not_found' } });
          expect(await rpcError(client.call('fail', { exposed: true }))).toMatchObject({ code: -32603, data: { error: 'test_conflict' } });
          const internal = await rpcError(client.call('fail'));
          expect(internal).toEqual({ code: -32603, message: 'Internal error', data: { error: 'internal_error' } });
        } finally {
          client.close();
        }
      });

      it('accepts an API key of the user in the auth request', async () => {
        const user = await t.register();
        const key = await t.request('POST', '/auth/api-keys', { token: user.token, body: { name: 'ws' } });
        expect(key.status).toBe(201);
        const client = await openRpcClient(wss('/v3/wss', key.body.token));
        try {
          expect(await client.call('auth', { token: key.body.token })).toMatchObject({ status: 'authenticated', userId: user.userId });
        } finally {
          client.close();
        }
      });

      it('delivers system, conversation and status pushes in order, each with a sequence number', async () => {
        const user = await t.register();
        const client = await openRpcClient(wss('/v3/wss', user.token));
        try {
          await client.call('auth', { token: user.token });
          const system = nextEvent(client, 'system');
          const conversation = nextEvent(client, 'conversation');
          const status = nextEvent(client, 'status');
          await push().toUser(user.userId, 'system', { type: 'notice', content: 'Maintenance at 22:00' });
          await push().toUser(user.userId, 'conversation', { convId: 'c-1', type: 'message', content: 'hello' });
          const now = Date.now();
          await push().toUser(user.userId, 'status', { type: 'online', timestamp: now });
          expect(await system).toEqual({ type: 'notice', content: 'Maintenance at 22:00', seq: 1 });
          expect(await conversation).toEqual({ convId: 'c-1', type: 'message', content: 'hello', seq: 2 });
          expect(await status).toEqual({ type: 'online', timestamp: now, seq: 3 });
        } finally {
          client.close();
        }
      });

      it('does not deliver one user\'s pushes to another user', async () => {
        const alice = await t.register();
        const bob = await t.register();
        const probe = await WsProbe.open(wss('/v3/wss', bob.token));
        try {
          await probe.request('auth', { token: bob.token });
          await push().toUser(alice.userId, 'system', { type: 'private', content: 'for alice' });
          await push().toUser(bob.userId, 'system', { type: 'public', content: 'for bob' });
          const first = await probe.next((m) => m.method === 'system');
          expect(first.params).toEqual({ type: 'public', content: 'for bob', seq: 1 });
          expect(probe.pending()).toEqual([]);
        } finally {
          probe.close();
        }
      });

      it('refuses bad pushes in the push API', async () => {
        await expect(push().toUser('u', 'auth', {})).rejects.toMatchObject({ code: 'invalid_push' });
        await expect(push().toUser('u', 'system', [] as never)).rejects.toMatchObject({ code: 'invalid_push' });
        await expect(push().toUser('u', 'system', { seq: 1 })).rejects.toMatchObject({ code: 'invalid_push' });
        await expect(push().toUser('', 'system', {})).rejects.toMatchObject({ code: 'invalid_push' });
        await expect(push().toUser('u', 'system', { big: 'x'.repeat(1_100_000) })).rejects.toMatchObject({ code: 'push_too_large' });
      });
    });

    describe('JSON-RPC 2.0 framing (plain ws)', () => {
      let probe: WsProbe;
      let user: { token: string; userId: string };
      beforeAll(async () => {
        user = await t.register();
        probe = await WsProbe.open(wss('/v3/wss', user.token));
        expect((await probe.request('auth', { token: user.token })).result.status).toBe('authenticated');
      });
      afterAll(() => probe?.close());

      it('answers unparseable JSON with -32700 and id null', async () => {
        probe.send('{"jsonrpc": "2.0", "method": "ping", "params": "bar", "baz]');
        expect(await probe.next()).toEqual({ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32700 }) });
      });

      it('answers invalid requests with -32600', async () => {
        probe.send({ jsonrpc: '2.0', method: 1, params: 'bar' });
        expect(await probe.next()).toEqual({ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) });
        probe.send({ jsonrpc: '1.0', method: 'ping', id: 7 });
        expect(await probe.next()).toEqual({ jsonrpc: '2.0', id: 7, error: expect.objectContaining({ code: -32600 }) });
        probe.send({ jsonrpc: '2.0', method: 'ping', params: 'text', id: 8 });
        expect(await probe.next()).toMatchObject({ id: 8, error: { code: -32600 } });
        probe.send([]);
        expect(await probe.next()).toEqual({ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) });
        probe.send([1]);
        expect(await probe.next()).toEqual([{ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) }]);
      });

      it('answers a batch with one array, leaving notifications out', async () => {
        probe.send([
          { jsonrpc: '2.0', method: 'ping', id: 'a' },
          { jsonrpc: '2.0', method: 'ping' },
          { foo: 'boo' },
          { jsonrpc: '2.0', method: 'nope', id: 'b' },
          { jsonrpc: '2.0', method: 'whoami', params: {}, id: 'c' },
        ]);
        const batch = await probe.next((m) => Array.isArray(m));
        expect(batch).toHaveLength(4);
        expect(batch).toContainEqual({ jsonrpc: '2.0', id: 'a', result: 'pong' });
        expect(batch).toContainEqual({ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) });
        expect(batch).toContainEqual({ jsonrpc: '2.0', id: 'b', error: expect.objectContaining({ code: -32601 }) });
        expect(batch).toContainEqual({ jsonrpc: '2.0', id: 'c', result: { kind: 'user', targetId: user.userId, userId: user.userId } });
      });

      it('sends nothing for notifications, even failing ones, nor for an all-notification batch', async () => {
        probe.notify('ping');
        probe.notify('nope');
        probe.send([{ jsonrpc: '2.0', method: 'ping' }, { jsonrpc: '2.0', method: 'whoami' }]);
        // A request after them is answered first: nothing came before it.
        const fence = await probe.request('ping');
        expect(fence.result).toBe('pong');
        expect(probe.pending()).toEqual([]);
      });

      it('refuses a batch larger than realtime.maxBatchSize with one -32600', async () => {
        probe.send(Array.from({ length: 6 }, (_, i) => ({ jsonrpc: '2.0', method: 'ping', id: i })));
        expect(await probe.next()).toMatchObject({ id: null, error: { code: -32600, data: { error: 'batch_too_large', max: 5 } } });
      });

      it('handles auth inside a batch before the requests after it', async () => {
        const fresh = await WsProbe.open(wss('/v3/wss', user.token));
        try {
          fresh.send([
            { jsonrpc: '2.0', method: 'whoami', id: 1 },
            { jsonrpc: '2.0', method: 'auth', params: { token: user.token }, id: 2 },
            { jsonrpc: '2.0', method: 'whoami', id: 3 },
          ]);
          const batch = await fresh.next();
          expect(batch[0]).toMatchObject({ id: 1, error: { code: -32001 } });
          expect(batch[1]).toMatchObject({ id: 2, result: { status: 'authenticated', userId: user.userId } });
          expect(batch[2]).toMatchObject({ id: 3, result: { kind: 'user' } });
        } finally {
          fresh.close();
        }
      });
    });

    describe('resuming after a reconnect', () => {
      it('replays what a client missed, after the auth result', async () => {
        const user = await t.register();
        const first = await WsProbe.open(wss('/v3/wss', user.token));
        const auth = (await first.request('auth', { token: user.token })).result;
        await push().toUser(user.userId, 'system', { type: 't', content: 'one' });
        const one = await first.next((m) => m.method === 'system');
        expect(one.params.seq).toBe(auth.seq + 1);
        first.close();
        await first.closed;
        await push().toUser(user.userId, 'system', { type: 't', content: 'two' });
        await push().toUser(user.userId, 'system', { type: 't', content: 'three' });

        const second = await WsProbe.open(wss('/v3/wss', user.token));
        try {
          // Pushes are delivered in process: wait until both have been numbered.
          second.send({ jsonrpc: '2.0', method: 'auth', params: { token: user.token, epoch: auth.epoch, lastSeq: one.params.seq }, id: 1 });
          const result = await second.next();
          expect(result).toMatchObject({ id: 1, result: { status: 'authenticated', epoch: auth.epoch } });
          const replayed = [await second.next(), await second.next()];
          expect(replayed.map((m) => [m.method, m.params.content, m.params.seq])).toEqual([
            ['system', 'two', one.params.seq + 1],
            ['system', 'three', one.params.seq + 2],
          ]);
          expect(result.result.seq).toBe(one.params.seq + 2);
          await push().toUser(user.userId, 'system', { type: 't', content: 'four' });
          expect((await second.next()).params).toEqual({ type: 't', content: 'four', seq: one.params.seq + 3 });
        } finally {
          second.close();
        }
      });

      it('sends resync_required when the buffer no longer holds everything missed, or the epoch is unknown', async () => {
        const user = await t.register();
        const first = await WsProbe.open(wss('/v3/wss', user.token));
        const auth = (await first.request('auth', { token: user.token })).result;
        first.close();
        await first.closed;
        for (let i = 0; i < 5; i++) await push().toUser(user.userId, 'system', { type: 't', content: `m${i}` });

        const late = await WsProbe.open(wss('/v3/wss', user.token));
        try {
          late.send({ jsonrpc: '2.0', method: 'auth', params: { token: user.token, epoch: auth.epoch, lastSeq: auth.seq }, id: 1 });
          const result = await late.next((m) => m.id === 1);
          const notice = await late.next((m) => m.method === 'resync_required');
          expect(notice.params).toEqual({ epoch: auth.epoch, seq: result.result.seq, reason: 'buffer_exceeded' });
        } finally {
          late.close();
        }

        const stranger = await WsProbe.open(wss('/v3/wss', user.token));
        try {
          stranger.send({ jsonrpc: '2.0', method: 'auth', params: { token: user.token, epoch: 'from-another-process', lastSeq: 3 }, id: 1 });
          await stranger.next((m) => m.id === 1);
          expect((await stranger.next((m) => m.method === 'resync_required')).params.reason).toBe('epoch_changed');
        } finally {
          stranger.close();
        }
        const half = await WsProbe.open(wss('/v3/wss', user.token));
        try {
          expect((await half.request('auth', { token: user.token, lastSeq: 3 })).error).toMatchObject({ code: -32602 });
        } finally {
          half.close();
        }
      });
    });

    describe('application channel', () => {
      it('authenticates the owner and delivers event, task and resource pushes (rpc-websockets)', async () => {
        const owner = await t.register();
        const appId = targets.add('application', owner.userId);
        const client = await openRpcClient(wss(`/v3/wss/${appId}`, owner.token));
        try {
          expect(await client.call('auth', { token: owner.token, appId })).toMatchObject({ status: 'authenticated', appId });
          expect(await client.call('whoami')).toEqual({ kind: 'application', targetId: appId, userId: owner.userId });
          const event = nextEvent(client, 'event');
          const task = nextEvent(client, 'task');
          const resource = nextEvent(client, 'resource');
          await push().toApplication(appId, 'event', { type: 'deploy', data: { status: 'ok', timestamp: 1_700_000_000_000 } });
          await push().toApplication(appId, 'task', { taskId: 't-1', status: 'done', result: { success: true, data: { n: 1 } } });
          await push().toApplication(appId, 'resource', { type: 'bot', resource: 'b-1', action: 'updated' });
          expect(await event).toEqual({ type: 'deploy', data: { status: 'ok', timestamp: 1_700_000_000_000 }, seq: 1 });
          expect(await task).toEqual({ taskId: 't-1', status: 'done', result: { success: true, data: { n: 1 } }, seq: 2 });
          expect(await resource).toEqual({ type: 'bot', resource: 'b-1', action: 'updated', seq: 3 });
        } finally {
          client.close();
        }
      });

      it('answers -32002 to a user who does not own the application, and -32001 for a wrong appId', async () => {
        const owner = await t.register();
        const stranger = await t.register();
        const appId = targets.add('application', owner.userId);
        const client = await openRpcClient(wss(`/v3/wss/${appId}`, stranger.token));
        try {
          expect(await rpcError(client.call('auth', { token: stranger.token, appId }))).toMatchObject({ code: -32002, data: { error: 'insufficient_permission' } });
          const wrong = await rpcError(client.call('auth', { token: stranger.token, appId: targets.add('application', stranger.userId) }));
          expect(wrong).toMatchObject({ code: -32001, data: { error: 'application_auth_failed', reason: 'target_mismatch' } });
          expect(wrong.message).toMatch(/^Application authentication failed/);
          expect(await rpcError(client.call('auth', { token: stranger.token }))).toMatchObject({ code: -32602 });
        } finally {
          client.close();
        }
      });

      it('refuses ids that name nothing with 404', async () => {
        const user = await t.register();
        await expect(WsProbe.open(wss('/v3/wss/0190f5b2-0000-7000-8000-000000000000', user.token))).rejects.toMatchObject({ status: 404 });
        await expect(WsProbe.open(wss('/v3/wss/not-a-uuid', user.token))).rejects.toMatchObject({ status: 404 });
      });
    });

    describe('hardware channel (plain ws)', () => {
      it('authenticates, receives control pushes, and stores status and sensor messages', async () => {
        const owner = await t.register();
        const hdId = targets.add('hardware', owner.userId);
        const device = await WsProbe.open(wss(`/v3/wss/${hdId}`, owner.token));
        try {
          const early = await device.request('status', { type: 'periodic', data: { cpu: 1 } });
          expect(early.error).toMatchObject({ code: -32001, data: { error: 'hardware_auth_failed' } });
          expect(early.error.message).toMatch(/^Hardware authentication failed/);
          expect((await device.request('auth', { token: owner.token, hdId: targets.add('hardware', owner.userId) })).error).toMatchObject({
            code: -32001,
            data: { reason: 'target_mismatch' },
          });
          expect((await device.request('auth', { token: owner.token, hdId })).result).toMatchObject({ status: 'authenticated', hdId });

          await push().toDevice(hdId, 'control', { command: 'reboot', target: 'system', params: { delay: 5 } });
          expect(await device.next((m) => m.method === 'control')).toEqual({
            jsonrpc: '2.0',
            method: 'control',
            params: { command: 'reboot', target: 'system', params: { delay: 5 }, seq: 1 },
          });

          const status = await device.request('status', { type: 'periodic', data: { cpu: 12.5, memory: 48, temperature: 61 } });
          expect(status).toEqual({ jsonrpc: '2.0', id: status.id, result: { recorded: true } });
          device.notify('sensor', { sensorId: 's-1', type: 'humidity', value: 40.5, unit: '%' });
          expect((await device.request('ping')).result).toBe('pong');
          const mine = targets.recorded.filter((r) => r.hdId === hdId).map((r) => r.message);
          expect(mine).toEqual([
            { method: 'status', params: { type: 'periodic', data: { cpu: 12.5, memory: 48, temperature: 61 } } },
            { method: 'sensor', params: { sensorId: 's-1', type: 'humidity', value: 40.5, unit: '%' } },
          ]);

          const invalid = await device.request('status', { type: '', data: { cpu: 'hot' } });
          expect(invalid.error).toMatchObject({ code: -32602, data: { error: 'invalid_params' } });
          expect(invalid.error.data.details).toEqual(
            expect.arrayContaining([expect.objectContaining({ field: 'type' }), expect.objectContaining({ field: 'data.cpu' })]),
          );
          expect((await device.request('sensor', { sensorId: 's', type: 't' })).error).toMatchObject({ code: -32602 });
          expect((await device.request('sensor', { sensorId: 's', type: 't', value: { nested: true } })).error).toMatchObject({ code: -32602 });
          expect((await device.request('whoami')).error).toMatchObject({ code: -32601 });
        } finally {
          device.close();
        }
      });

      it('answers -32002 to a user who does not own the device', async () => {
        const owner = await t.register();
        const stranger = await t.register();
        const hdId = targets.add('hardware', owner.userId);
        const device = await WsProbe.open(wss(`/v3/wss/${hdId}`, stranger.token));
        try {
          expect((await device.request('auth', { token: stranger.token, hdId })).error).toMatchObject({ code: -32002 });
        } finally {
          device.close();
        }
      });
    });

    it('closes sockets authenticated with a credential when it is revoked (4403)', async () => {
      const user = await t.register();
      const key = await t.request('POST', '/auth/api-keys', { token: user.token, body: { name: 'revoked soon' } });
      const probe = await WsProbe.open(wss('/v3/wss', key.body.token));
      expect((await probe.request('auth', { token: key.body.token })).result.status).toBe('authenticated');
      const revoked = await t.request('DELETE', `/auth/api-keys/${key.body.credential.id}`, { token: user.token });
      expect(revoked.status).toBe(200);
      expect(await probe.closed).toEqual({ code: 4403, reason: 'credential_revoked' });
    });
  });
});
