import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  channelTargetResolverServiceIdentifier,
  identityModule,
  provide,
  realtimeModule,
  systemModule,
  type ChannelTarget,
  type SocketLike,
} from '@trellis/core';
import { startTestKernel, testDatabases, type TestKernel } from '@trellis/test-support';

// The realtime module without the developer module: the user channel works, the shared
// `/v3/wss/{id}` path says clearly what is missing. Driven through the kernel's transport-free
// WebSocket routing with an in-memory socket.
describe.each(testDatabases())('realtime channels without the developer module on $name', (db) => {
  const kernels: TestKernel[] = [];
  afterEach(async () => {
    await Promise.all(kernels.splice(0).map((k) => k.close()));
  });

  async function start(targets?: Map<string, ChannelTarget>) {
    const started = await startTestKernel(db, {
      modules: [systemModule, identityModule, realtimeModule],
      adapters: targets ? [provide(channelTargetResolverServiceIdentifier, { resolve: async (_em, id) => targets.get(id) ?? null })] : [],
    });
    kernels.push(started);
    const { kernel } = started;
    const registered = await kernel.http.handle({
      method: 'POST',
      path: '/auth/register',
      query: '',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ email: `g${randomUUID()}@example.com`, password: 'correct horse battery' })),
      remoteAddress: '',
    });
    const { token, user } = JSON.parse(String(registered.body)) as { token: string; user: { id: string } };
    return { kernel, token, userId: user.id };
  }

  function memorySocket() {
    const sent: any[] = [];
    let wake: (() => void) | undefined;
    const socket: SocketLike = {
      send: (data) => {
        sent.push(JSON.parse(String(data)));
        wake?.();
        return true;
      },
      close: () => undefined,
      bufferedAmount: 0,
      remoteAddress: '127.0.0.1',
    };
    const next = async () => {
      while (sent.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return sent.shift();
    };
    return { socket, next };
  }

  describe('kernel-level sessions', () => {
    it('refuses /v3/wss/{id} with 503 realtime_targets_unavailable, and serves /v3/wss', async () => {
      const { kernel, token, userId } = await start();
      const refused = await kernel.ws.upgrade({ path: `/v3/wss/${randomUUID()}`, query: `token=${token}`, headers: {}, remoteAddress: '' });
      expect(refused.ok).toBe(false);
      if (refused.ok) return;
      expect(refused.response.status).toBe(503);
      expect(JSON.parse(String(refused.response.body))).toMatchObject({ error: 'realtime_targets_unavailable' });

      const accepted = await kernel.ws.upgrade({ path: '/v3/wss', query: `token=${token}`, headers: {}, remoteAddress: '' });
      expect(accepted.ok).toBe(true);
      if (!accepted.ok) return;
      const { socket, next } = memorySocket();
      const session = accepted.open(socket);
      session.onMessage(JSON.stringify({ jsonrpc: '2.0', method: 'auth', params: { token }, id: 1 }), false);
      expect(await next()).toMatchObject({ id: 1, result: { status: 'authenticated', userId } });
      session.onClose(1000, '');
    });

    it('answers status and sensor with -32603 hardware_logs_unavailable when no sink stores them', async () => {
      const targets = new Map<string, ChannelTarget>();
      const { kernel, token, userId } = await start(targets);
      const hdId = randomUUID();
      targets.set(hdId, { kind: 'hardware', id: hdId, ownerId: userId });
      const accepted = await kernel.ws.upgrade({ path: `/v3/wss/${hdId}`, query: `token=${token}`, headers: {}, remoteAddress: '' });
      if (!accepted.ok) throw new Error('upgrade refused');
      const { socket, next } = memorySocket();
      const session = accepted.open(socket);
      session.onMessage(JSON.stringify({ jsonrpc: '2.0', method: 'auth', params: { token, hdId }, id: 1 }), false);
      expect(await next()).toMatchObject({ id: 1, result: { status: 'authenticated', hdId } });
      session.onMessage(JSON.stringify({ jsonrpc: '2.0', method: 'sensor', params: { sensorId: 's', type: 't', value: 1 }, id: 2 }), false);
      expect(await next()).toMatchObject({ id: 2, error: { code: -32603, data: { error: 'hardware_logs_unavailable' } } });
      session.onClose(1000, '');
    });
  });
});
