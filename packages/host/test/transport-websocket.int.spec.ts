import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { coreModules } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { TransportProbe, transportTestModule } from './support/transport-test-module.js';

// WebSocket channels declared in core are bound the same way on both transports: messages both
// ways, the per-channel size limit (close 1009), refused upgrades with the status of the error
// the channel threw, and closing at shutdown. No database work: SQLite only.
const sqlite = testDatabases().find((db) => db.name === 'sqlite')!;

/** Opens a socket and resolves once open, or rejects with the HTTP response that refused it. */
function connect(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => reject(Object.assign(new Error(`refused with ${res.statusCode}`), { status: res.statusCode, headers: res.headers, body })));
    });
    ws.once('error', reject);
  });
}

function nextMessage(ws: WebSocket): Promise<{ data: Buffer; isBinary: boolean }> {
  return new Promise((resolve) => ws.once('message', (data, isBinary) => resolve({ data: data as Buffer, isBinary })));
}

function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

describe.each(transports)('WebSocket channels over %s', (transport) => {
  let t: TestHost;
  let probe: TransportProbe;
  beforeAll(async () => {
    probe = new TransportProbe();
    t = await startTestHost(sqlite, transport, { modules: [...coreModules, transportTestModule(probe)] });
  });
  afterAll(() => t?.close());

  it('echoes text and binary messages', async () => {
    const ws = await connect(`${t.wsUrl}/test/echo`);
    try {
      const text = nextMessage(ws);
      ws.send('héllo');
      expect(await text).toMatchObject({ isBinary: false });
      expect((await text).data.toString('utf8')).toBe('héllo');
      const binary = nextMessage(ws);
      const bytes = Buffer.from([0, 1, 2, 255, 254]);
      ws.send(bytes);
      const got = await binary;
      expect(got.isBinary).toBe(true);
      expect(Buffer.compare(got.data, bytes)).toBe(0);
    } finally {
      ws.close();
    }
  });

  it('passes path parameters to the channel', async () => {
    const ws = await connect(`${t.wsUrl}/test/rooms/blue%20room`);
    try {
      const reply = nextMessage(ws);
      ws.send('hi');
      expect((await reply).data.toString()).toBe('blue room:hi');
    } finally {
      ws.close();
    }
  });

  it('lets the session close the socket with its own code', async () => {
    const ws = await connect(`${t.wsUrl}/test/echo`);
    const done = closed(ws);
    ws.send('close-me');
    expect(await done).toEqual({ code: 4000, reason: 'closing as asked' });
  });

  it('accepts a message at the channel limit and closes with 1009 above it', async () => {
    const ws = await connect(`${t.wsUrl}/test/echo`);
    const atLimit = nextMessage(ws);
    ws.send('x'.repeat(1024));
    expect((await atLimit).data.length).toBe(1024);
    const done = closed(ws);
    ws.send('x'.repeat(1025));
    expect((await done).code).toBe(1009);

    const binary = await connect(`${t.wsUrl}/test/echo`);
    const binaryDone = closed(binary);
    binary.send(Buffer.alloc(1536));
    expect((await binaryDone).code).toBe(1009);
  });

  it('refuses an upgrade with the HTTP status of the error the channel threw', async () => {
    await expect(connect(`${t.wsUrl}/test/echo?deny=forbidden`)).rejects.toMatchObject({ status: 403 });
    const unauthenticated = await connect(`${t.wsUrl}/test/echo?deny=unauthenticated`).catch((error: unknown) => error as { status: number; headers: Record<string, string>; body: string });
    expect(unauthenticated).toMatchObject({ status: 401 });
    expect((unauthenticated as { headers: Record<string, string> }).headers['www-authenticate']).toBe('Bearer');
    expect(JSON.parse((unauthenticated as { body: string }).body)).toEqual({ error: 'missing_credentials', message: 'Who are you?' });
    const boom = await connect(`${t.wsUrl}/test/echo?deny=boom`).catch((error: unknown) => error as { status: number; body: string });
    expect(boom).toMatchObject({ status: 500 });
    expect((boom as { body: string }).body).not.toContain('secret');
  });

  it('refuses an upgrade to a path no channel serves with 404', async () => {
    const refused = await connect(`${t.wsUrl}/test/nowhere`).catch((error: unknown) => error as { status: number; body: string });
    expect(refused).toMatchObject({ status: 404 });
    expect(JSON.parse((refused as { body: string }).body).error).toBe('channel_not_found');
  });

  it('reports a slow reader to the session and tells it when the socket drained', async () => {
    probe.flood.refused = 0;
    probe.flood.drains = 0;
    const ws = await connect(`${t.wsUrl}/test/flood`);
    try {
      const socket = (ws as unknown as { _socket: import('node:net').Socket })._socket;
      socket.pause();
      ws.send('go');
      await vi.waitFor(() => expect(probe.flood.refused).toBe(1), { timeout: 10_000 });
      expect(probe.flood.drains).toBe(0);
      // Reading again lets the server's queue drain: the session hears it and says so.
      const drained = new Promise<void>((resolve) => ws.on('message', (data, isBinary) => !isBinary && data.toString() === 'drained' && resolve()));
      socket.resume();
      await drained;
      expect(probe.flood.drains).toBeGreaterThanOrEqual(1);
    } finally {
      ws.terminate();
    }
  });

  it('closes open sockets with 1001 when the host stops', async () => {
    const own = await startTestHost(sqlite, transport, { modules: [...coreModules, transportTestModule(new TransportProbe())] });
    const ws = await connect(`${own.wsUrl}/test/echo`);
    const done = closed(ws);
    await own.close();
    expect((await done).code).toBe(1001);
  });

  it('serves channels under server.basePath', async () => {
    const based = await startTestHost(sqlite, transport, { modules: [...coreModules, transportTestModule(new TransportProbe())], config: { server: { basePath: '/api' } } });
    try {
      expect(based.wsUrl).toMatch(/\/api$/);
      const ws = await connect(`${based.wsUrl}/test/echo`);
      const reply = nextMessage(ws);
      ws.send('under a prefix');
      expect((await reply).data.toString()).toBe('under a prefix');
      ws.close();
      await expect(connect(`${based.wsUrl.replace(/\/api$/, '')}/test/echo`)).rejects.toMatchObject({ status: 404 });
    } finally {
      await based.close();
    }
  });
});
