import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import { loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { CreditService } from './credit.service.js';
import { OrderService } from './order.service.js';
import { SubscriptionLifecycle } from './subscription-lifecycle.js';

const BATCH = 100;

export interface RenewalRun {
  renewed: number;
  creditMonths: number;
  endedUnpaid: number;
}

export interface ExpiryRun {
  orders: number;
  reservations: number;
}

/**
 * The periodic work of billing, one item per transaction. Every step re-checks its condition
 * under the row's lock, so several host processes may run these at the same time, and a run
 * repeated (or crashed half-way and restarted) does each item once.
 */
@injectable()
export class BillingJobs {
  constructor(
    @inject(SubscriptionLifecycle) private readonly lifecycle: SubscriptionLifecycle,
    @inject(OrderService) private readonly orders: OrderService,
    @inject(CreditService) private readonly credits: CreditService,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
  ) {}

  /** Renews ended periods, ends unpaid ones after the grace period, starts due credit months. */
  async renew(em: EntityManager, signal?: AbortSignal): Promise<RenewalRun> {
    const run: RenewalRun = { renewed: 0, creditMonths: 0, endedUnpaid: 0 };
    for (const id of await this.lifecycle.overdue(em, BATCH)) {
      if (signal?.aborted) return run;
      if (await this.each('end unpaid subscription', id, () => this.lifecycle.endOverdue(em.fork(), id))) run.endedUnpaid++;
    }
    for (const id of await this.lifecycle.dueForRenewal(em, BATCH)) {
      if (signal?.aborted) return run;
      const result = await this.each('renew subscription', id, () => this.lifecycle.renew(em.fork(), id));
      if (!result) continue;
      run.renewed++;
      if (result.orderId) {
        const orderId = result.orderId;
        // Best effort: a failed checkout can be asked for again (POST /billing/orders/{id}/checkout).
        await this.each('create renewal checkout', orderId, () => this.orders.checkout(em.fork(), orderId));
      }
    }
    for (const teamId of await this.lifecycle.dueForCreditMonth(em, BATCH)) {
      if (signal?.aborted) return run;
      if (await this.each('start credit month', teamId, () => this.lifecycle.rollCreditMonth(em.fork(), teamId))) run.creditMonths++;
    }
    return run;
  }

  /** Expires unpaid orders (giving coupon redemptions back) and releases reservations past their TTL. */
  async expire(em: EntityManager, signal?: AbortSignal): Promise<ExpiryRun> {
    const run: ExpiryRun = { orders: 0, reservations: 0 };
    for (const id of await this.orders.dueForExpiry(em, BATCH)) {
      if (signal?.aborted) return run;
      if (await this.each('expire order', id, () => this.orders.expire(em.fork(), id))) run.orders++;
    }
    for (const id of await this.credits.dueForExpiry(em, BATCH)) {
      if (signal?.aborted) return run;
      if (await this.each('release expired reservation', id, () => this.credits.expire(em.fork(), id))) run.reservations++;
    }
    return run;
  }

  /** One item; a failure is logged and the run goes on with the next. */
  private async each<T>(what: string, id: string, work: () => Promise<T>): Promise<T | null> {
    try {
      return await work();
    } catch (error) {
      this.log.error({ err: error, id }, `billing job: could not ${what}`);
      return null;
    }
  }
}
