import { BillingJobs, clockServiceIdentifier, CreditBalance, CreditLedgerEntry, ManualClock, PaymentOrder, projectsModule, provide, Subscription, Team, UserService } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingModules } from './billing-helpers.js';

// Deleting a team keeps its books: the team is soft-deleted (members and projects go, the row
// stays), and its paid orders, credit ledger, subscription and balance remain for the records.
describe.each(testDatabases())('team deletion keeps financial records on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    const clock = new ManualClock(Date.parse('2026-01-31T12:00:00.000Z'));
    let adminToken: string;
    beforeAll(async () => {
      t = await startTestHost(db, transport, { modules: [...billingModules, projectsModule], adapters: [provide(clockServiceIdentifier, clock)] });
      const email = `books-admin-${transport}-${Date.now()}@example.com`;
      await t.kernel.get(UserService).create(t.kernel.fork(), { email, password: 'correct horse battery', isAdministrator: true });
      adminToken = (await t.request('POST', '/auth/login', { body: { email, password: 'correct horse battery' } })).body.token;
    });
    afterAll(() => t?.close());

    it('keeps paid orders, the ledger, the subscription and the balance of a deleted team, and stops renewing it', async () => {
      const owner = await t.register();
      const mate = await t.register();
      const team = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Paying team' } });
      expect(team.status).toBe(201);
      const teamId = team.body.id as string;
      expect((await t.request('POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: mate.email, role: 'member' } })).status).toBe(201);
      const bought = await t.request('POST', '/billing/credits/purchase', { token: owner.token, body: { teamId, packCode: 'credits-1000' } });
      expect(bought.status).toBeLessThan(300);
      const orderId = bought.body.data.order.id as string;
      expect((await t.request('POST', `/admin/orders/${orderId}/confirm`, { token: adminToken })).status).toBe(200);

      const em = t.kernel.fork();
      const before = {
        orders: await em.count(PaymentOrder, { team: teamId }),
        ledger: await em.count(CreditLedgerEntry, { team: teamId }),
        balance: (await em.findOneOrFail(CreditBalance, { team: teamId })).purchaseCredits,
      };
      expect(before.orders).toBe(1);
      expect(before.balance).toBe(1000);

      const deleted = await t.request('DELETE', `/teams/${teamId}`, { token: owner.token });
      expect(deleted.status).toBe(204);

      // Gone for its members: no team, no billing, no second delete.
      expect((await t.request('GET', '/teams', { token: mate.token })).body.items.map((i: { id: string }) => i.id)).not.toContain(teamId);
      expect((await t.request('GET', `/teams/${teamId}`, { token: owner.token })).status).toBe(404);
      expect((await t.request('GET', `/billing/subscription?teamId=${teamId}`, { token: owner.token })).status).toBe(400);
      expect((await t.request('DELETE', `/teams/${teamId}`, { token: owner.token })).status).toBe(404);

      // The books remain.
      const after = t.kernel.fork();
      expect(await after.count(PaymentOrder, { team: teamId, status: 'paid' })).toBe(1);
      expect(await after.count(CreditLedgerEntry, { team: teamId })).toBe(before.ledger);
      expect((await after.findOneOrFail(CreditBalance, { team: teamId })).purchaseCredits).toBe(1000);
      expect(await after.count(Subscription, { team: teamId })).toBe(1);
      expect((await after.findOneOrFail(Team, { id: teamId })).deletedAt).toBeInstanceOf(Date);
      const order = await t.request('GET', `/admin/orders/${orderId}`, { token: adminToken });
      expect(order.status).toBe(200);
      expect(order.body.data?.status ?? order.body.status).toBe('paid');

      // A deleted team's subscription is not renewed.
      clock.advance(40 * 86_400_000);
      await t.kernel.get(BillingJobs).renew(t.kernel.fork());
      expect(await t.kernel.fork().count(CreditLedgerEntry, { team: teamId })).toBe(before.ledger);
    });

    it('removes the team\'s projects with it', async () => {
      const owner = await t.register();
      const team = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Project team' } });
      const teamId = team.body.id as string;
      const project = await t.request('POST', '/project', { token: owner.token, body: { name: 'Doomed', tools: [], access: 'team', teamId } });
      expect(project.status).toBe(201);
      expect((await t.request('DELETE', `/teams/${teamId}`, { token: owner.token })).status).toBe(204);
      expect((await t.request('GET', `/project/${project.body.id}`, { token: owner.token })).status).toBe(404);
    });
  });
});
