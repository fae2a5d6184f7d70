import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loopbackHostForms, runRebinding, startTrap } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetworkGuard, refusalOf } from '../src/index.js';

describe('NetworkGuard on real connections (undici dispatcher with a checked lookup)', () => {
  let server: Server;
  let port: number;
  let hits = 0;
  let redirectTo = '';

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits += 1;
      if (req.url === '/redirect') {
        res.writeHead(302, { location: redirectTo });
        res.end();
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it.each(loopbackHostForms)('refuses the loopback written %s, before connecting', async (host) => {
    const guard = new NetworkGuard({ allowPrivateNetworks: false });
    const before = hits;
    const url = `http://${host}:${port}/`;
    const error = await guard.fetch(url).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refusalOf(error)?.code, url).toBe('destination_refused');
    expect(hits).toBe(before);
    await guard.close();
  });

  it('reaches an allowed address, port or host name', async () => {
    for (const [allow, url] of [
      [['127.0.0.1'], `http://127.0.0.1:${port}/`],
      [['127.0.0.0/8'], `http://localhost:${port}/`],
      [[String(port)], `http://127.0.0.1:${port}/`],
      [['localhost'], `http://localhost:${port}/`],
      [true, `http://127.0.0.1:${port}/`],
    ] as const) {
      const guard = new NetworkGuard({ allowPrivateNetworks: allow });
      const response = await guard.fetch(url);
      expect(await response.json(), JSON.stringify(allow)).toEqual({ ok: true });
      await guard.close();
    }
    const guard = new NetworkGuard({ allowPrivateNetworks: ['127.0.0.2'] });
    await expect(guard.fetch(`http://127.0.0.1:${port}/`)).rejects.toSatisfy((e) => refusalOf(e) !== undefined);
    await guard.close();
  });

  it('checks the target of a redirect as a new connection', async () => {
    const trap = await startTrap(port);
    redirectTo = `http://127.0.0.2:${port}/`;
    const guard = new NetworkGuard({ allowPrivateNetworks: ['127.0.0.1'] });
    try {
      const error = await guard.fetch(`http://127.0.0.1:${port}/redirect`).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refusalOf(error)?.code).toBe('destination_refused');
      expect(trap.hits).toBe(0);
    } finally {
      await guard.close();
      await trap.close();
    }
  });

  it('holds when a name flips between an allowed and a refused address (DNS rebinding)', async () => {
    const outcome = await runRebinding(port, async (guard, origin) => {
      const response = await guard.fetch(`${origin}/`);
      expect(await response.json()).toEqual({ ok: true });
    }, { rounds: 10, isRefusal: (e) => refusalOf(e) !== undefined });
    expect(outcome.other).toEqual([]);
    expect(outcome.trapHits).toBe(0);
    expect(outcome.succeeded).toBeGreaterThan(0);
    expect(outcome.refused).toBeGreaterThan(0);
    expect(outcome.succeeded + outcome.refused).toBe(10);
  });
});
