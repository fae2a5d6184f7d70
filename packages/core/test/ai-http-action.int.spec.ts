import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loopbackHostForms, runRebinding } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetworkGuard } from '../src/index.js';
import { runHttpAction } from '../src/modules/ai/services/http-action.js';

describe('http tool actions through the network guard', () => {
  let server: Server;
  let port: number;
  let hits = 0;
  const guards: NetworkGuard[] = [];
  const guard = (allowPrivateNetworks: boolean | string[]) => {
    const created = new NetworkGuard({ allowPrivateNetworks });
    guards.push(created);
    return created;
  };
  const options = (allow: boolean | string[], maxResponseBytes = 1000) => ({ guard: guard(allow), timeoutMs: 2000, maxResponseBytes });

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits += 1;
      if (req.url === '/redirect') {
        res.writeHead(302, { location: `http://127.0.0.1:${port}/v` });
        res.end();
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ ok: true, path: req.url, result: { value: 7 } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await Promise.all(guards.map((g) => g.close()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it.each(loopbackHostForms)('refuses the loopback written %s with tool_destination_refused, before connecting', async (host) => {
    const before = hits;
    const conf = { method: 'GET', url: `http://${host}:${port}/v`, headers: {} };
    await expect(runHttpAction(conf, {}, options(false))).rejects.toMatchObject({ code: 'tool_destination_refused', status: 400 });
    expect(hits).toBe(before);
  });

  it('reaches an allowed destination, reads up to the size limit and does not follow redirects', async () => {
    const conf = { method: 'GET', url: `http://127.0.0.1:${port}/v?q={{q}}`, headers: {}, response: { path: 'result.value' } };
    expect(await runHttpAction(conf, { q: 'a b' }, options(['127.0.0.1']))).toBe(7);
    expect(await runHttpAction({ ...conf, url: `http://localhost:${port}/v` }, {}, options([String(port)]))).toBe(7);
    await expect(runHttpAction(conf, {}, options(['127.0.0.1'], 10))).rejects.toMatchObject({ code: 'tool_call_failed' });
    const before = hits;
    await expect(runHttpAction({ ...conf, url: `http://127.0.0.1:${port}/redirect` }, {}, options(['127.0.0.1']))).rejects.toMatchObject({ code: 'tool_call_failed', message: expect.stringContaining('302') });
    expect(hits).toBe(before + 1);
  });

  it('holds when the action host flips between an allowed and a refused address (DNS rebinding)', async () => {
    const outcome = await runRebinding(
      port,
      async (rebinding, origin) => {
        expect(await runHttpAction({ method: 'GET', url: `${origin}/v`, headers: {}, response: { path: 'result.value' } }, {}, { guard: rebinding, timeoutMs: 2000, maxResponseBytes: 1000 })).toBe(7);
      },
      { isRefusal: (e) => (e as { code?: string }).code === 'tool_destination_refused' },
    );
    expect(outcome.other).toEqual([]);
    expect(outcome.trapHits).toBe(0);
    expect(outcome.succeeded).toBeGreaterThan(0);
    expect(outcome.refused).toBeGreaterThan(0);
  });
});
