import { createHost } from '@trellis/host';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { startTestHost, testDatabases, transports } from '@trellis/test-support';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

describe.each(transports)('listening over %s', (transport) => {
  it('refuses a port another host already holds, and stops its kernel', async () => {
    const first = await startTestHost(testDatabases()[0]!, transport);
    try {
      const second = createHost({
        config: { server: { host: '127.0.0.1', port: first.host.port, transport }, auth: { jwtSecret: 'k'.repeat(32) } },
        database: sqliteDatabase({ path: ':memory:' }),
        logger: pino({ level: 'silent' }),
      });
      await expect(second.start()).rejects.toThrow();
      expect(second.kernel.ready).toBe(false);
      expect((await first.request('GET', '/healthz')).status).toBe(200);
    } finally {
      await first.close();
    }
  });
});
