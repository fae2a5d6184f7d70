import type { IncomingMessage } from 'node:http';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';

export interface Started {
  url: string;
  kernel: { readonly channels: ReadonlyArray<{ readonly path: string }> };
  close(): Promise<void>;
}

const jwtSecret = 'example-secret-example-secret-0123456789';

/** Opens a WebSocket; resolves when it is open, rejects with the status of a refused upgrade. */
function upgrade(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      res.resume();
      reject(Object.assign(new Error(`upgrade refused with ${res.statusCode}`), { status: res.statusCode }));
    });
    ws.once('error', reject);
  });
}

/**
 * What every embedding example must do, checked over real sockets: Trellis answers under /api
 * next to the framework's own routes, users register and authenticate, the OpenAPI document is
 * valid, and WebSocket upgrades under /api reach the kernel's channels.
 */
export function checkEmbedding(start: (options: { port: number; database: string; config: Record<string, unknown> }) => Promise<Started>, framework: string): void {
  let app: Started;
  beforeAll(async () => {
    app = await start({ port: 0, database: ':memory:', config: { auth: { jwtSecret }, log: { level: 'silent' } } });
  });
  afterAll(() => app?.close());

  it('serves health probes under /api and the framework routes next to them', async () => {
    const health = await fetch(`${app.url}/api/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect(health.headers.get('x-request-id')).toMatch(/.+/);
    const ready = await fetch(`${app.url}/api/readyz`);
    expect(await ready.json()).toEqual({ status: 'ready', database: true });
    const own = await fetch(`${app.url}/`);
    expect(await own.json()).toMatchObject({ app: framework });
    // Outside the prefix Trellis routes do not exist.
    expect((await fetch(`${app.url}/healthz`)).status).toBe(404);
  });

  it('registers a user and authenticates it on /api/auth/me', async () => {
    const email = `embedded-${framework}@example.com`;
    const register = await fetch(`${app.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'correct horse battery' }),
    });
    expect(register.status).toBe(201);
    const { token } = (await register.json()) as { token: string };
    const me = await fetch(`${app.url}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { user: { email: string } }).user.email).toBe(email);
    const anonymous = await fetch(`${app.url}/api/auth/me`);
    expect(anonymous.status).toBe(401);
  });

  it('refuses an oversized body with 413 under the prefix too', async () => {
    const big = await fetch(`${app.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expect(big.status).toBe(413);
  });

  it('serves a valid OpenAPI 3.1 document at /api/openapi.json', async () => {
    const response = await fetch(`${app.url}/api/openapi.json`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(document.openapi).toBe('3.1.0');
    expect(document.paths['/auth/me']).toBeDefined();
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const docs = await fetch(`${app.url}/api/docs`);
    expect(docs.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('refuses WebSocket upgrades under /api that no channel serves with 404', async () => {
    await expect(upgrade(`${app.url.replace(/^http/, 'ws')}/api/no-such-channel`)).rejects.toMatchObject({ status: 404 });
  });

  it('upgrades to the user channel under /api when the kernel has one', async () => {
    const channel = app.kernel.channels.find((c) => c.path === '/v3/wss');
    if (!channel) {
      // No realtime module in this build: nothing else may answer the path either.
      await expect(upgrade(`${app.url.replace(/^http/, 'ws')}/api/v3/wss`)).rejects.toMatchObject({ status: 404 });
      return;
    }
    const register = await fetch(`${app.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `ws-${framework}@example.com`, password: 'correct horse battery' }),
    });
    const { token } = (await register.json()) as { token: string };
    const ws = await upgrade(`${app.url.replace(/^http/, 'ws')}/api/v3/wss?token=${encodeURIComponent(token)}`);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });
}
