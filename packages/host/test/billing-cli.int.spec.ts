import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHost } from '@trellis/host';
import { testDatabases } from '@trellis/test-support';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trellis } from './support/cli.js';

// `trellis billing ...` on a database a host wrote: an operator confirms a manual payment.
describe.each(testDatabases())('trellis billing on $name', (db) => {
  let url: string;
  let cleanup: () => Promise<void>;
  let teamId: string;
  let token: string;
  let orderId: string;

  beforeAll(async () => {
    if (db.name === 'sqlite') {
      const dir = await mkdtemp(join(tmpdir(), 'trellis-billing-cli-'));
      url = `sqlite:${join(dir, 'cli.db')}`;
      cleanup = () => rm(dir, { recursive: true, force: true });
    } else {
      const handle = await db.create();
      url = handle.url;
      cleanup = () => handle.drop();
    }
    // A team asks for an upgrade over HTTP; the host then stops.
    const host = createHost({
      config: { database: { url }, server: { host: '127.0.0.1', port: 0, transport: 'node' }, auth: { jwtSecret: 'k'.repeat(32) } },
      logger: pino({ level: 'silent' }),
    });
    await host.start();
    try {
      const call = async (method: string, path: string, body?: unknown) => {
        const r = await fetch(`${host.url}${path}`, { method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: body ? JSON.stringify(body) : undefined });
        return (await r.json()) as any;
      };
      token = (await call('POST', '/auth/register', { email: `cli-${randomUUID()}@example.com`, password: 'correct horse battery' })).token;
      teamId = (await call('GET', '/teams')).items[0].id;
      orderId = (await call('POST', '/billing/subscription/change-plan', { teamId, targetPlanCode: 'pro', billingPeriod: 'monthly' })).data.order.id;
    } finally {
      await host.stop();
    }
  });
  afterAll(() => cleanup?.());

  it('lists the pending order and confirms it once', async () => {
    const pending = await trellis(['billing', 'orders', '-d', url, '--status', 'pending', '--json']);
    expect(pending.code, pending.stderr).toBe(0);
    expect(JSON.parse(pending.stdout).items.map((o: { id: string }) => o.id)).toEqual([orderId]);

    const confirmed = await trellis(['billing', 'confirm-order', '-d', url, orderId, '--json']);
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(JSON.parse(confirmed.stdout)).toMatchObject({ alreadyPaid: false, order: { id: orderId, status: 'paid' } });
    const again = await trellis(['billing', 'confirm-order', '-d', url, orderId]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('already paid');

    const missing = await trellis(['billing', 'confirm-order', '-d', url, randomUUID()]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/order/i);
  });

  it('manages coupons and runs the renewal jobs', async () => {
    const created = await trellis(['billing', 'coupon', 'create', '-d', url, '--code', 'LAUNCH20', '--percent-off', '20', '--max-redemptions', '5', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const coupon = JSON.parse(created.stdout);
    expect(coupon).toMatchObject({ code: 'LAUNCH20' });
    const both = await trellis(['billing', 'coupon', 'create', '-d', url, '--code', 'BOTH', '--percent-off', '5', '--amount-off', '100']);
    expect(both.code).toBe(2);
    expect((await trellis(['billing', 'coupon', 'disable', '-d', url, coupon.id])).code).toBe(0);
    const listed = JSON.parse((await trellis(['billing', 'coupon', 'list', '-d', url, '--all', '--json'])).stdout);
    expect(listed.items.map((c: { code: string }) => c.code)).toContain('LAUNCH20');

    const renewed = await trellis(['billing', 'renew', '-d', url, '--json']);
    expect(renewed.code, renewed.stderr).toBe(0);
    expect(JSON.parse(renewed.stdout)).toMatchObject({ renewed: 0 });
  });
});
