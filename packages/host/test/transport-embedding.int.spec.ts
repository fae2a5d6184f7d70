import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { coreModules } from '@trellis/core';
import { attachWebSockets, toNodeHandler, type AttachedWebSockets } from '@trellis/host';
import { startTestKernel, testDatabases, type TestKernel } from '@trellis/test-support';
import { TransportProbe, transportTestModule } from './support/transport-test-module.js';

// toNodeHandler and attachWebSockets on a server someone else owns (what Express, Fastify and
// Nest give you): a mount prefix, requests outside it passed on, bodies a framework already
// read, and upgrade listeners shared with other WebSocket code. The examples/ suites run the
// same pieces inside real Express and Fastify applications.
const sqlite = testDatabases().find((db) => db.name === 'sqlite')!;

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`)));
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function readJsonBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => resolve(text ? JSON.parse(text) : undefined));
  });
}

describe('embedding in a foreign node:http server', () => {
  let tk: TestKernel;
  let server: Server;
  let url: string;
  let sockets: AttachedWebSockets;
  let other: WebSocketServer;
  beforeAll(async () => {
    tk = await startTestKernel(sqlite, { modules: [...coreModules, transportTestModule(new TransportProbe())] });
    const trellis = toNodeHandler(tk.kernel, { prefix: '/api/' });
    server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
      // A framework that parses JSON bodies before anything else sees the request.
      if (req.headers['x-parse-first'] === 'yes') (req as IncomingMessage & { body?: unknown }).body = await readJsonBody(req);
      trellis(req, res, () => res.writeHead(200, { 'content-type': 'text/plain' }).end(`app handled ${req.url}`));
    });
    sockets = attachWebSockets(server, tk.kernel, { prefix: '/api' });
    // Another WebSocket server of the application, on its own path.
    other = new WebSocketServer({ noServer: true });
    server.on('upgrade', (req, socket, head) => {
      if (req.url === '/app-socket') other.handleUpgrade(req, socket, head, (ws) => ws.send('app socket'));
    });
    url = await listen(server);
  });
  afterAll(async () => {
    await sockets?.close();
    other?.close();
    if (server) await close(server);
    await tk?.close();
  });

  it('answers under the prefix and passes everything else to the framework', async () => {
    expect(await (await fetch(`${url}/api/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${url}/api`)).json()).toMatchObject({ error: 'route_not_found' });
    expect(await (await fetch(`${url}/apiary`)).text()).toBe('app handled /apiary');
    expect(await (await fetch(`${url}/healthz?x=1`)).text()).toBe('app handled /healthz?x=1');
  });

  it('keeps the query string and answers 404 outside the prefix without a next handler', async () => {
    const bare = createServer(toNodeHandler(tk.kernel, { prefix: '/api' }));
    const bareUrl = await listen(bare);
    try {
      const r = await fetch(`${bareUrl}/api/test/ndjson?count=3`);
      expect((await r.text()).trim().split('\n')).toHaveLength(3);
      const outside = await fetch(`${bareUrl}/elsewhere`);
      expect(outside.status).toBe(404);
      expect(((await outside.json()) as any).error).toBe('route_not_found');
    } finally {
      await close(bare);
    }
  });

  it('lets a kernel with server.basePath claim its own paths without a prefix option', async () => {
    const based = await startTestKernel(sqlite, { config: { server: { basePath: '/api' } } });
    const handler = toNodeHandler(based.kernel);
    const own = createServer((req, res) => handler(req, res, () => res.writeHead(200).end('app')));
    const attached = attachWebSockets(own, based.kernel);
    const ownUrl = await listen(own);
    try {
      expect(await (await fetch(`${ownUrl}/api/healthz`)).json()).toEqual({ status: 'ok' });
      expect(await (await fetch(`${ownUrl}/healthz`)).text()).toBe('app');
      const openapi = (await (await fetch(`${ownUrl}/api/openapi.json`)).json()) as any;
      expect(openapi.servers).toEqual([{ url: '/api' }]);
    } finally {
      await attached.close();
      await close(own);
      await based.close();
    }
  });

  it('uses a body a framework already parsed', async () => {
    const register = await fetch(`${url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-parse-first': 'yes' },
      body: JSON.stringify({ email: 'parsed-first@example.com', password: 'correct horse battery' }),
    });
    expect(register.status).toBe(201);
    const wrongType = await fetch(`${url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-parse-first': 'yes' },
      body: JSON.stringify({ email: 42, password: 'x' }),
    });
    expect(wrongType.status).toBe(422);
  });

  it('serves channels under the prefix and leaves other upgrades to their listeners', async () => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/api/test/echo`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const echoed = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
    ws.send('through the prefix');
    expect(await echoed).toBe('through the prefix');
    ws.close();

    const app = new WebSocket(`${url.replace('http', 'ws')}/app-socket`);
    expect(await new Promise<string>((resolve, reject) => app.once('message', (data) => resolve(String(data))).once('error', reject))).toBe('app socket');
    app.close();
  });
});
