import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RequestContext, type RouteDefinition } from '../../kernel/http/route.js';
import { billingRouteDefaults } from './billing.routes.js';
import { BillingIdParams, ReleaseReservationBody, ReserveCreditsBody, SettleReservationBody, TeamPageQuery } from './dto/billing.dto.js';
import type { CreditReservation } from './entities/credit-reservation.entity.js';
import { billingErrors } from './errors.js';
import { pageSchema } from '../../kernel/http/response-schema.js';
import { envelope, ledgerEntrySchema, reservationSchema } from './schemas.js';
import { BillingAccountService } from './services/billing-account.service.js';
import { CreditService } from './services/credit.service.js';
import { toLedgerEntryView, toReservationView } from './views.js';

const auth = ['jwt', 'api_key'] as const;
const noTeam = 'Caller in no team, or not in the given team (NO_TEAM); bad input (BAD_REQUEST)';
const notFound = 'No such reservation in a team of yours (RESERVATION_NOT_FOUND)';

const ok = <T>(data: T) => ({ success: true as const, data });

/** The reservation, when it belongs to a team the caller is a member of; else 404. */
async function ownReservation(ctx: RequestContext, id: string): Promise<CreditReservation> {
  const reservation = await ctx.get(CreditService).get(ctx.em, id);
  if (!reservation) throw billingErrors.reservationNotFound();
  await ctx
    .get(BillingAccountService)
    .resolveTeam(ctx.em, ctx.requirePrincipal().userId, reservation.team.id, 'member')
    .catch(() => {
      throw billingErrors.reservationNotFound();
    });
  return reservation;
}

export const creditRoutes: RouteDefinition[] = [
  defineRoute({
    ...billingRouteDefaults,
    method: 'GET',
    path: '/billing/credits/ledger',
    summary: "A team's credit ledger, newest first",
    description: 'Every movement of the balance (grant, purchase, reservation, settlement, release, expiry) with its reason and the balance after it. Needs team membership.',
    auth,
    query: TeamPageQuery,
    response: { schema: envelope(pageSchema(ledgerEntrySchema)) },
    errors: { 400: noTeam },
    async handler(ctx) {
      const accounts = ctx.get(BillingAccountService);
      const teamId = await accounts.resolveTeam(ctx.em, ctx.requirePrincipal().userId, ctx.query.teamId, 'member');
      await accounts.ensure(ctx.em, teamId);
      const page = await ctx.get(CreditService).ledgerPage(ctx.em, teamId, ctx.query);
      return ok({ ...page, items: page.items.map(toLedgerEntryView) });
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'POST',
    path: '/billing/credits/reservations',
    summary: 'Hold credits for work about to run',
    description:
      'Takes `amount` credits from the team balance at once (plan credits first, then purchased ones). Settle it with what the work used, or release it; an open reservation is released after `ttlSeconds`. Needs team membership. Parallel reservations never spend more than the balance.',
    auth,
    body: ReserveCreditsBody,
    response: { status: 201, schema: envelope(reservationSchema) },
    errors: { 400: noTeam, 402: 'Not enough credits (insufficient_credits); the body carries balance, required and shortfall' },
    async handler(ctx) {
      const principal = ctx.requirePrincipal();
      const teamId = await ctx.get(BillingAccountService).resolveTeam(ctx.em, principal.userId, ctx.body.teamId, 'member');
      const reservation = await ctx.get(CreditService).reserve(ctx.em, {
        teamId,
        amount: ctx.body.amount,
        reason: ctx.body.reason || 'API reservation',
        userId: principal.userId,
        ttlSeconds: ctx.body.ttlSeconds,
      });
      return Reply.json(ok(toReservationView(reservation)), 201);
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'POST',
    path: '/billing/credits/reservations/:id/settle',
    summary: 'Charge what the work used and give the rest back',
    auth,
    params: BillingIdParams,
    body: SettleReservationBody,
    response: { schema: envelope(reservationSchema) },
    errors: {
      400: 'More than the reserved amount (SETTLE_EXCEEDS_RESERVATION); bad input (BAD_REQUEST)',
      404: notFound,
      409: 'Already settled or released (RESERVATION_CLOSED)',
    },
    async handler(ctx) {
      const reservation = await ownReservation(ctx, ctx.params.id);
      const settled = await ctx.get(CreditService).settle(ctx.em, reservation.id, ctx.body.usedCredits, ctx.body.reason);
      return ok(toReservationView(settled));
    },
  }),
  defineRoute({
    ...billingRouteDefaults,
    method: 'POST',
    path: '/billing/credits/reservations/:id/release',
    summary: 'Give every reserved credit back',
    auth,
    params: BillingIdParams,
    body: ReleaseReservationBody,
    response: { schema: envelope(reservationSchema) },
    errors: { 404: notFound, 409: 'Already settled or released (RESERVATION_CLOSED)' },
    async handler(ctx) {
      const reservation = await ownReservation(ctx, ctx.params.id);
      const released = await ctx.get(CreditService).release(ctx.em, reservation.id, ctx.body.reason);
      return ok(toReservationView(released));
    },
  }),
];
