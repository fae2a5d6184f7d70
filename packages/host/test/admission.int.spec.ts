import { coreModules } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TransportProbe, transportTestModule } from './support/transport-test-module.js';

// Admission control (server.admission): a host that works on as many requests as its limit allows
// answers the next ones at once with 503 `overloaded` and Retry-After, instead of queueing them
// without bound; health checks always pass; freed slots admit requests again.
const [sqlite] = testDatabases();

describe.each(transports)('admission control over %s', (transport) => {
  let t: TestHost | undefined;
  let probe: TransportProbe;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const start = async (admission: Record<string, unknown>) => {
    probe = new TransportProbe();
    t = await startTestHost(sqlite!, transport, { modules: [...coreModules, transportTestModule(probe)], config: { server: { admission } } });
    return t;
  };
  /** Starts `/test/slow?id=<id>` and waits until its handler holds it in flight; `answer` settles once released. */
  const hold = async (host: TestHost, id: string) => {
    const answer = fetch(`${host.url}/test/slow?id=${id}`);
    await vi.waitFor(() => expect(probe.events).toContain(`slow-entered:${id}`), { timeout: 10_000 });
    return { answer };
  };

  it('at its in-flight limit answers 503 overloaded with Retry-After at once (never queues), keeps /healthz, and admits again once slots free', async () => {
    const host = await start({ maxInFlight: 2, routes: {}, retryAfterSeconds: 3 });
    const { token } = await host.register();
    const held = [(await hold(host, 'a')).answer, (await hold(host, 'b')).answer];

    // Concurrent requests while both slots are taken: each is refused, none waits for a slot
    // (the held requests are released only after every one of these has answered).
    const refused = await Promise.all(Array.from({ length: 20 }, () => host.request('GET', '/auth/me', { token })));
    for (const response of refused) {
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('3');
      expect(response.headers.get('x-request-id')).toBeTruthy();
      expect(response.body).toMatchObject({ error: 'overloaded' });
      expect(response.body.message).toMatch(/retry after 3 s/);
    }
    // Health and readiness are exempt: a load balancer keeps the process in rotation.
    expect((await host.request('GET', '/healthz')).status).toBe(200);

    probe.release('a');
    probe.release('b');
    for (const response of await Promise.all(held)) expect(response.status).toBe(200);
    expect((await host.request('GET', '/auth/me', { token })).status).toBe(200);
  });

  it('bounds one route on its own: past its limit it answers 503, other routes go on', async () => {
    const host = await start({ maxInFlight: 0, routes: { 'GET /test/slow': 1 } });
    const { token } = await host.register();
    const { answer: held } = await hold(host, 'one');
    const second = await host.request('GET', '/test/slow?id=two');
    expect(second.status).toBe(503);
    expect(second.headers.get('retry-after')).toBe('1');
    expect(second.body.message).toContain('GET /test/slow');
    expect((await host.request('GET', '/auth/me', { token })).status).toBe(200);
    probe.release('one');
    expect((await held).status).toBe(200);
  });

  it('under a burst far above a tiny limit, every request gets an answer: 2xx or 503 with Retry-After, no timeout, no other error', async () => {
    const host = await start({ maxInFlight: 3, routes: {} });
    const { token } = await host.register();
    const statuses = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const response = await fetch(`${host.url}${i % 2 ? '/auth/me' : '/test/whoami'}`, { headers: { authorization: `Bearer ${token}` } });
        await response.arrayBuffer();
        if (response.status === 503) expect(response.headers.get('retry-after')).toBe('1');
        return response.status;
      }),
    );
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    expect(statuses).toContain(200);
    expect((await host.request('GET', '/healthz')).status).toBe(200);
  });

  it('rejects a bad admission configuration, naming the key', async () => {
    await expect(start({ maxInFlight: -1 })).rejects.toThrow(/server\.admission\.maxInFlight/);
  });
});
