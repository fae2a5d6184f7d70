import { afterEach, describe, expect, it, vi } from 'vitest';
import { coreModules } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { openResponse, readAll, readAtLeast, requestOnNewConnection } from './support/http-client.js';
import { TransportProbe, transportTestModule } from './support/transport-test-module.js';

// A graceful stop refuses new connections at once, lets requests in flight finish (the database
// is still open for them), and only then stops the kernel.
describe.each(testDatabases())('graceful shutdown on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost | undefined;
    afterEach(async () => {
      await t?.close();
      t = undefined;
    });

    it('drains an in-flight request before the kernel stops, and refuses new connections', async () => {
      const probe = new TransportProbe();
      t = await startTestHost(db, transport, { modules: [...coreModules, transportTestModule(probe)] });
      await t.register();
      const url = t.url;

      const inFlight = fetch(`${url}/test/slow?id=drain`);
      await vi.waitFor(() => expect(probe.events).toContain('slow-entered:drain'), { timeout: 10_000 });

      const stopped = t.host.stop();
      // The listener is closed at once: a new connection is refused.
      await expect(requestOnNewConnection(`${url}/healthz`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      // The kernel waits for the request: it has not stopped yet.
      expect(probe.events).not.toContain('module-stopped');
      expect(t.kernel.ready).toBe(false);

      probe.release('drain');
      const response = await inFlight;
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ id: 'drain', users: 1 });
      await stopped;
      expect(probe.events).toEqual(['slow-entered:drain', 'slow-finished:drain', 'module-stopped']);
    });

    it('stops open streams when the shutdown timeout passes, and ends their responses', async () => {
      const probe = new TransportProbe();
      t = await startTestHost(db, transport, {
        modules: [...coreModules, transportTestModule(probe)],
        config: { server: { shutdownTimeoutMs: 300 } },
      });
      const { res } = await openResponse(`${t.url}/test/ticker?id=endless`);
      await readAtLeast(res, 10);
      const rest = readAll(res.resume()).catch(() => Buffer.alloc(0));
      await t.host.stop();
      await vi.waitFor(() => expect(probe.finished.has('endless')).toBe(true), { timeout: 10_000 });
      // The client sees its response end (cleanly or cut), it is not left hanging.
      await rest;
      expect(probe.events.at(-1)).toBe('module-stopped');
    });
  });
});
