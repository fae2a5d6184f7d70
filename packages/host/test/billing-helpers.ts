import {
  billingModule,
  BillingJobs,
  clockServiceIdentifier,
  CreditBalance,
  CreditLedgerEntry,
  identityModule,
  ManualClock,
  provide,
  systemModule,
  TeamMember,
  UserService,
  type AdapterBinding,
  type TrellisConfigInput,
} from '@trellis/core';
import { startTestHost, type TestDatabase, type TestHost, type TransportName } from '@trellis/test-support';
import { expect } from 'vitest';

/** Billing and what it depends on; other areas stay out so these suites test billing alone. */
export const billingModules = [systemModule, identityModule, billingModule];

export interface BillingHost extends TestHost {
  clock: ManualClock;
}

/** A host with billing and a clock the test moves (starts at 2026-01-31T12:00Z, a month-end on purpose). */
export async function startBillingHost(
  db: TestDatabase,
  transport: TransportName,
  options: { config?: TrellisConfigInput; adapters?: AdapterBinding[]; start?: string } = {},
): Promise<BillingHost> {
  const clock = new ManualClock(Date.parse(options.start ?? '2026-01-31T12:00:00.000Z'));
  const t = await startTestHost(db, transport, {
    modules: billingModules,
    // The race tests send up to 88 requests at once to test the ledger, not load shedding
    // (admission.int.spec.ts does): past the default `maxInFlight` (64) some would get 503.
    config: { ...options.config, server: { admission: { maxInFlight: 0 }, ...options.config?.server } },
    adapters: [provide(clockServiceIdentifier, clock), ...(options.adapters ?? [])],
  });
  return Object.assign(t, { clock });
}

let counter = 0;

/** A user created with permission flags through the kernel, logged in over HTTP. */
export async function userWith(t: TestHost, flags: { isAdministrator?: boolean } = {}) {
  const email = `bill${++counter}-${process.pid}-${Date.now()}@example.com`;
  const password = 'correct horse battery';
  await t.kernel.get(UserService).create(t.kernel.fork(), { email, password, ...flags });
  const login = await t.request('POST', '/auth/login', { body: { email, password } });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  return { token: login.body.token as string, userId: login.body.user.id as string, email };
}

/** A registered user and the id of their personal team. */
export async function member(t: TestHost) {
  const user = await t.register();
  const teams = await t.request('GET', '/teams', { token: user.token });
  return { ...user, teamId: teams.body.items[0].id as string };
}

/** A team with an owner, an admin and a plain member. */
export async function sharedTeam(t: TestHost) {
  const owner = await t.register();
  const admin = await t.register();
  const plain = await t.register();
  const team = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Billing team' } });
  const teamId = team.body.id as string;
  await t.request('POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: admin.email, role: 'admin' } });
  await t.request('POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: plain.email, role: 'member' } });
  return { teamId, owner, admin, plain };
}

/** Removes every membership of a user, so they are in no team at all. */
export async function leaveAllTeams(t: TestHost, userId: string) {
  await t.kernel.fork().nativeDelete(TeamMember, { user: userId });
}

export async function runRenewal(t: TestHost) {
  return t.kernel.get(BillingJobs).renew(t.kernel.fork());
}

export async function runExpiry(t: TestHost) {
  return t.kernel.get(BillingJobs).expire(t.kernel.fork());
}

/** Asserts the stored balance equals the sum of the team's ledger, and the last entry's running totals. */
export async function expectBalanceMatchesLedger(t: TestHost, teamId: string) {
  const em = t.kernel.fork();
  const balance = await em.findOneOrFail(CreditBalance, { team: teamId });
  const entries = await em.find(CreditLedgerEntry, { team: teamId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  const grant = entries.reduce((sum, e) => sum + e.grantDelta, 0);
  const purchase = entries.reduce((sum, e) => sum + e.purchaseDelta, 0);
  expect({ grant: balance.grantCredits, purchase: balance.purchaseCredits }).toEqual({ grant, purchase });
  expect(balance.grantCredits).toBeGreaterThanOrEqual(0);
  expect(balance.purchaseCredits).toBeGreaterThanOrEqual(0);
  for (const entry of entries) expect(entry.reason.length).toBeGreaterThan(0);
  return { balance, entries };
}
