import { Writable } from 'node:stream';
import {
  BillingJobs,
  clockServiceIdentifier,
  createKernel,
  CreditBalance,
  CreditLedgerEntry,
  CreditReservation,
  CreditService,
  ManualClock,
  OrderService,
  PaymentOrder,
  PlanCatalog,
  provide,
  SubscriptionService,
  TeamService,
  TrellisError,
  UserService,
  type Kernel,
} from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { startTestKernel, testDatabases, type TestKernel } from '@trellis/test-support';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingModules } from './billing-helpers.js';

const DAY = 86_400_000;

type Op =
  | { op: 'reserve'; amount: number }
  | { op: 'burst'; amounts: number[] }
  | { op: 'settle'; pick: number; fraction: number }
  | { op: 'release'; pick: number }
  | { op: 'buyPack'; pack: 'credits-1000' | 'credits-5000' }
  | { op: 'changePlan'; plan: 'free' | 'pro' | 'team'; period: 'monthly' | 'yearly' }
  | { op: 'cancelRenewal' }
  | { op: 'resumeRenewal' }
  | { op: 'payRenewals' }
  | { op: 'advance'; days: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('reserve' as const), amount: fc.integer({ min: 1, max: 400 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('burst' as const), amounts: fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 2, maxLength: 6 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('settle' as const), pick: fc.nat(), fraction: fc.double({ min: 0, max: 1, noNaN: true }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('buyPack' as const), pack: fc.constantFrom('credits-1000' as const, 'credits-5000' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('changePlan' as const), plan: fc.constantFrom('free' as const, 'pro' as const, 'team' as const), period: fc.constantFrom('monthly' as const, 'yearly' as const) }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'cancelRenewal' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'resumeRenewal' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'payRenewals' as const }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('advance' as const), days: fc.integer({ min: 1, max: 45 }) }) },
);

let users = 0;

/** Only 402 insufficient_credits and 409/400 answers billing documents are acceptable failures here. */
const expected = (error: unknown) => error instanceof TrellisError && ['insufficient_credits', 'RESERVATION_CLOSED', 'NOTHING_TO_CANCEL'].includes(error.code);

async function apply(kernel: Kernel, clock: ManualClock, teamId: string, userId: string, step: Op): Promise<void> {
  const em = () => kernel.fork();
  const credits = kernel.get(CreditService);
  const orders = kernel.get(OrderService);
  const open = () => em().find(CreditReservation, { team: teamId, status: 'held' }, { orderBy: { id: 'asc' } });
  const swallow = (p: Promise<unknown>) => p.catch((error) => {
    if (!expected(error)) throw error;
  });
  switch (step.op) {
    case 'reserve':
      return void (await swallow(credits.reserve(em(), { teamId, amount: step.amount, reason: 'property run' })));
    case 'burst':
      await Promise.all(step.amounts.map((amount) => swallow(credits.reserve(em(), { teamId, amount, reason: 'parallel run' }))));
      return;
    case 'settle': {
      const list = await open();
      if (!list.length) return;
      const r = list[step.pick % list.length]!;
      return void (await swallow(credits.settle(em(), r.id, Math.floor(r.amount * step.fraction))));
    }
    case 'release': {
      const list = await open();
      if (!list.length) return;
      return void (await swallow(credits.release(em(), list[step.pick % list.length]!.id)));
    }
    case 'buyPack': {
      const pack = kernel.get(PlanCatalog).findPack(step.pack)!;
      const placed = await orders.placeCreditsOrder(em(), { teamId, userId, pack });
      await orders.markPaid(em(), placed.order.id, { kind: 'admin', userId });
      return;
    }
    case 'changePlan': {
      const result = await kernel.get(SubscriptionService).changePlan(em(), { teamId, userId, targetPlanCode: step.plan, billingPeriod: step.period });
      if (result.action === 'payment_required') await orders.markPaid(em(), result.order.id, { kind: 'admin', userId });
      return;
    }
    case 'cancelRenewal':
      return void (await swallow(kernel.get(SubscriptionService).cancelRenewal(em(), teamId)));
    case 'resumeRenewal':
      return void (await kernel.get(SubscriptionService).resumeRenewal(em(), teamId));
    case 'payRenewals': {
      for (const order of await em().find(PaymentOrder, { team: teamId, kind: 'renewal', status: 'pending' })) {
        await orders.markPaid(em(), order.id, { kind: 'admin', userId });
      }
      return;
    }
    case 'advance': {
      clock.advance(step.days * DAY);
      const jobs = kernel.get(BillingJobs);
      // Two processes' worth of jobs at once: they must not double anything.
      await Promise.all([jobs.renew(em()), jobs.renew(em()), jobs.expire(em())]);
      return;
    }
  }
}

/** The balance equals the sum of the ledger; each entry's running totals are the sums up to it; nothing is negative. */
async function checkInvariants(kernel: Kernel, teamId: string): Promise<void> {
  const em = kernel.fork();
  const balance = await em.findOneOrFail(CreditBalance, { team: teamId });
  const entries = await em.find(CreditLedgerEntry, { team: teamId }, { orderBy: { id: 'asc' } });
  let grant = 0;
  let purchase = 0;
  for (const entry of entries) {
    grant += entry.grantDelta;
    purchase += entry.purchaseDelta;
    expect([entry.grantAfter, entry.purchaseAfter], `${entry.kind}: ${entry.reason}`).toEqual([grant, purchase]);
    expect(grant).toBeGreaterThanOrEqual(0);
    expect(purchase).toBeGreaterThanOrEqual(0);
    expect(entry.reason.length).toBeGreaterThan(0);
  }
  expect([balance.grantCredits, balance.purchaseCredits]).toEqual([grant, purchase]);
  // Every reservation entry is matched by its hold: held reservations are exactly those without a closing entry.
  const reservations = await em.find(CreditReservation, { team: teamId });
  for (const r of reservations) {
    const own = entries.filter((e) => e.reservationId === r.id);
    expect(own.filter((e) => e.kind === 'reservation')).toHaveLength(1);
    expect(own.filter((e) => e.kind === 'settlement' || e.kind === 'release')).toHaveLength(r.status === 'held' ? 0 : 1);
    expect(-(own[0]!.grantDelta + own[0]!.purchaseDelta)).toBe(r.amount);
  }
  // A credit month is granted once.
  const keys = entries.filter((e) => e.kind === 'grant').map((e) => e.uniqueKey);
  expect(new Set(keys).size).toBe(keys.length);
}

describe.each(testDatabases())('billing ledger on $name', (db) => {
  let t: TestKernel;
  const clock = new ManualClock(Date.parse('2026-01-31T12:00:00.000Z'));

  beforeAll(async () => {
    t = await startTestKernel(db, { modules: billingModules, adapters: [provide(clockServiceIdentifier, clock)] });
  });
  afterAll(() => t?.close());

  it('keeps every balance equal to its ledger after any mix of grants, purchases, reservations, renewals and plan changes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 18 }), async (ops) => {
        const user = await t.kernel.get(UserService).create(t.kernel.fork(), { email: `ledger${++users}-${process.pid}@example.com` });
        const teamId = (await t.kernel.get(TeamService).firstTeam(t.kernel.fork(), user.id))!.team.id;
        await t.kernel.get(CreditService).balance(t.kernel.fork(), teamId);
        for (const step of ops) {
          await apply(t.kernel, clock, teamId, user.id, step);
          await checkInvariants(t.kernel, teamId);
        }
      }),
      { numRuns: db.name === 'sqlite' ? 40 : 25 },
    );
    // Up to 720 operations, each checked against the ledger: about 25 s on a loaded machine, which
    // the default 30 s left no room for.
  }, 120_000);
});

describe('billing at start', () => {
  it('warns loudly while the manual payment provider is in use', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const kernel = createKernel({
      database: sqliteDatabase({ path: ':memory:' }),
      modules: billingModules,
      logger: pino({ level: 'warn' }, sink),
      config: { auth: { jwtSecret: 'x'.repeat(32) } },
    });
    await kernel.start({ jobs: false });
    await kernel.stop();
    const warning = lines.map((line) => JSON.parse(line)).find((entry) => entry.module === 'billing');
    expect(warning).toMatchObject({ level: 40 });
    expect(warning.msg).toMatch(/"manual" payment provider: no money is collected/);
  });

  it('refuses a billing configuration it cannot use, naming the path', () => {
    const build = (billing: unknown) => () =>
      createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: billingModules, logger: pino({ level: 'silent' }), config: { auth: { jwtSecret: 'x'.repeat(32) }, billing } });
    expect(build({ fallbackPlan: 'basic' })).toThrow(/billing\.fallbackPlan: names no plan/);
    expect(build({ plans: { free: { name: 'Free', rank: 0, monthlyCredits: 1, monthlyPrice: 0, yearlyPrice: 0 }, pro: { name: 'Pro', rank: 0, monthlyCredits: 1, monthlyPrice: 1, yearlyPrice: 1 } } })).toThrow(
      /billing\.plans\.pro\.rank/,
    );
    expect(build({ plans: { free: { name: 'Free', rank: 0, monthlyCredits: 1, monthlyPrice: 5, yearlyPrice: 0 } } })).toThrow(/fallback plan must cost nothing/);
    expect(build({ plans: { free: { name: 'Free', rank: 0, monthlyCredits: 1, monthlyPrice: 0 } } })).toThrow(/billing\.plans\.free\.yearlyPrice: is required/);
    expect(build({ currency: 'USD' })).toThrow(/billing\.currency/);
    expect(build({ plan: {} })).toThrow(/billing\.plan: is not a known option/);
    expect(build({ plans: { 'Bad Code': { name: 'x', rank: 5, monthlyCredits: 1, monthlyPrice: 1, yearlyPrice: 1 }, free: { name: 'Free', rank: 0, monthlyCredits: 1, monthlyPrice: 0, yearlyPrice: 0 } } })).toThrow(
      /billing\.plans\.Bad Code/,
    );
  });
});
