import { coreModules } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedTeam } from './billing-helpers.js';
import { nextEvent, openRpcClient, WsProbe } from './support/realtime-clients.js';

// The user channel's own `system` and `status` notices (docs/http/websocket.md, "Notices"), spoken
// by independent clients over real sockets: plain `ws` and rpc-websockets.
describe.each(testDatabases())('user-channel notices on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    const wss = (token: string) => `${t.wsUrl}/v3/wss?token=${encodeURIComponent(token)}`;
    const login = async (email: string) => (await t.request('POST', '/auth/login', { body: { email, password: 'correct horse battery staple' } })).body.token as string;

    beforeAll(async () => {
      t = await startTestHost(db, transport, { modules: coreModules });
    });
    afterAll(() => t?.close());

    it('tells the older sockets of a sign-in that a newer one opened (status session_replaced), and no one else', async () => {
      const user = await t.register(undefined, 'correct horse battery staple');
      const older = await WsProbe.open(wss(user.token));
      const newer = await WsProbe.open(wss(user.token));
      const otherSignIn = await WsProbe.open(wss(await login(user.email)));
      try {
        expect((await older.request('auth', { token: user.token })).result).toMatchObject({ status: 'authenticated' });
        // Another sign-in of the same user is not the same session: nothing for the older socket.
        const other = await otherSignIn.request('auth', { token: (await login(user.email)) });
        expect(other.result).toMatchObject({ status: 'authenticated' });
        const before = Date.now();
        expect((await newer.request('auth', { token: user.token })).result).toMatchObject({ status: 'authenticated' });
        const notice = await older.next((m) => m.method === 'status');
        expect(notice).toEqual({ jsonrpc: '2.0', method: 'status', params: { type: 'session_replaced', timestamp: expect.any(Number) } });
        expect(notice.params.timestamp).toBeGreaterThanOrEqual(before);
        // Only the older socket of that sign-in heard it, and it stays open.
        expect((await older.request('ping')).result).toBe('pong');
        expect((await newer.request('ping')).result).toBe('pong');
        expect((await otherSignIn.request('ping')).result).toBe('pong');
        expect(older.pending()).toEqual([]);
        expect(newer.pending()).toEqual([]);
        expect(otherSignIn.pending()).toEqual([]);
      } finally {
        older.close();
        newer.close();
        otherSignIn.close();
      }
    });

    it('tells each older socket of a sign-in once, the first time it is superseded (n sockets cost n notices, not n²)', async () => {
      const user = await t.register(undefined, 'correct horse battery staple');
      const sockets = await Promise.all([0, 1, 2, 3].map(() => WsProbe.open(wss(user.token))));
      try {
        for (const socket of sockets) expect((await socket.request('auth', { token: user.token })).result).toMatchObject({ status: 'authenticated' });
        for (const socket of sockets.slice(0, 3)) expect(await socket.next((m) => m.method === 'status')).toMatchObject({ params: { type: 'session_replaced' } });
        // A ping answered after every auth: anything else queued for a socket is here by now.
        for (const socket of sockets) expect((await socket.request('ping')).result).toBe('pong');
        for (const socket of sockets) expect(socket.pending()).toEqual([]);
      } finally {
        for (const socket of sockets) socket.close();
      }
    });

    it('tells every member of a team when a charge takes its balance below billing.creditLowThreshold (system credit_low), once', async () => {
      const { teamId, owner, plain } = await sharedTeam(t);
      const outsider = await t.register();
      const clients = await Promise.all([owner, plain, outsider].map(async (user) => {
        const probe = await WsProbe.open(wss(user.token));
        expect((await probe.request('auth', { token: user.token })).result).toMatchObject({ status: 'authenticated' });
        return probe;
      }));
      const charge = async (amount: number, used: number) => {
        const held = await t.request('POST', '/billing/credits/reservations', { token: owner.token, body: { teamId, amount } });
        expect(held.status, held.text).toBe(201);
        const settled = await t.request('POST', `/billing/credits/reservations/${held.body.data.id}/settle`, { token: owner.token, body: { usedCredits: used } });
        expect(settled.status, settled.text).toBe(200);
      };
      try {
        // The free plan's 100 credits; the default threshold is 20.
        await charge(70, 70);
        const released = await t.request('POST', '/billing/credits/reservations', { token: owner.token, body: { teamId, amount: 25 } });
        await t.request('POST', `/billing/credits/reservations/${released.body.data.id}/release`, { token: owner.token, body: {} });
        await charge(20, 15);
        for (const probe of clients.slice(0, 2)) {
          expect(await probe.next((m) => m.method === 'system')).toEqual({
            jsonrpc: '2.0',
            method: 'system',
            params: { type: 'credit_low', content: { teamId, totalCredits: 15, threshold: 20 }, seq: 1 },
          });
        }
        // Further charges below the threshold do not repeat it; the outsider heard nothing.
        await charge(5, 5);
        for (const probe of clients) expect((await probe.request('ping')).result).toBe('pong');
        for (const probe of clients) expect(probe.pending()).toEqual([]);
      } finally {
        for (const probe of clients) probe.close();
      }
    });
  });

  it.each(transports)('sends a maintenance notice to every user socket before the host stops (over %s)', async (transport) => {
    const host = await startTestHost(db, transport, { modules: coreModules, config: { realtime: { shutdownNotice: 'Back in five minutes.' } } });
    let closed = false;
    try {
      const user = await host.register();
      const client = await openRpcClient(`${host.wsUrl}/v3/wss?token=${encodeURIComponent(user.token)}`);
      const probe = await WsProbe.open(`${host.wsUrl}/v3/wss?token=${encodeURIComponent(user.token)}`);
      await client.call('auth', { token: user.token });
      await probe.request('auth', { token: user.token });
      const notice = nextEvent(client, 'system');
      const stopping = host.close();
      closed = true;
      expect(await notice).toEqual({ type: 'maintenance', content: 'Back in five minutes.', seq: 1 });
      expect(await probe.next((m) => m.method === 'system')).toMatchObject({ params: { type: 'maintenance', content: 'Back in five minutes.' } });
      expect((await probe.closed).code).toBe(1001);
      await stopping;
    } finally {
      if (!closed) await host.close();
    }
  });
});
