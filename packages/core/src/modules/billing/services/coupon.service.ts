import { raw, UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import { paging, type Page, type PageQuery } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { Coupon } from '../entities/coupon.entity.js';
import { billingErrors } from '../errors.js';
import { isUuid } from '../rows.js';

export interface CreateCouponInput {
  code: string;
  percentOff?: number;
  amountOff?: number;
  expiresAt?: Date;
  maxRedemptions?: number;
}

export interface CouponQuote {
  coupon: Coupon;
  discount: number;
}

export const normaliseCouponCode = (code: string): string => code.trim().toUpperCase();

/** What a coupon takes off an amount: a percentage (rounded down) or a fixed amount, never more than the amount. */
export function discountFor(coupon: Pick<Coupon, 'percentOff' | 'amountOff'>, amount: number): number {
  if (coupon.percentOff != null) return Math.floor((amount * coupon.percentOff) / 100);
  return Math.min(coupon.amountOff ?? 0, amount);
}

/**
 * Coupons: administrator CRUD, and redemption. A redemption is counted when an order is placed,
 * with one conditional UPDATE that also checks the coupon is enabled, unexpired and has
 * redemptions left, so parallel orders can never exceed `maxRedemptions`. It is given back when
 * the order expires or is cancelled.
 */
@injectable()
export class CouponService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
  ) {}

  async create(em: EntityManager, input: CreateCouponInput, createdBy: string | null): Promise<Coupon> {
    const now = this.clock.now();
    const problems: Array<[string, string]> = [];
    if (!/^[A-Za-z0-9_-]{3,64}$/.test(input.code.trim())) problems.push(['code', 'must be 3 to 64 letters, digits, _ or -']);
    if (input.percentOff != null && !(Number.isInteger(input.percentOff) && input.percentOff >= 1 && input.percentOff <= 100)) problems.push(['percentOff', 'must be an integer from 1 to 100']);
    if (input.amountOff != null && !(Number.isSafeInteger(input.amountOff) && input.amountOff >= 1)) problems.push(['amountOff', 'must be a positive integer']);
    if (input.maxRedemptions != null && !(Number.isSafeInteger(input.maxRedemptions) && input.maxRedemptions >= 1)) problems.push(['maxRedemptions', 'must be a positive integer']);
    if (problems.length) {
      throw new TrellisError('validation', 'invalid_coupon', `Invalid coupon: ${problems[0]![0]} ${problems[0]![1]}.`, {
        details: problems.map(([field, message]) => ({ field, constraint: 'coupon', message })),
      });
    }
    if ((input.percentOff == null) === (input.amountOff == null)) {
      throw new TrellisError('validation', 'invalid_coupon', 'Give exactly one of percentOff and amountOff.', {
        details: [{ field: 'percentOff', constraint: 'exactlyOne', message: 'give exactly one of percentOff and amountOff' }],
      });
    }
    if (input.expiresAt && input.expiresAt.getTime() <= now.getTime()) {
      throw new TrellisError('validation', 'invalid_coupon', 'expiresAt is in the past.', {
        details: [{ field: 'expiresAt', constraint: 'future', message: 'must be in the future' }],
      });
    }
    const coupon = em.create(Coupon, {
      id: this.ids.next(),
      code: normaliseCouponCode(input.code),
      percentOff: input.percentOff ?? null,
      amountOff: input.amountOff ?? null,
      expiresAt: input.expiresAt ?? null,
      maxRedemptions: input.maxRedemptions ?? null,
      redemptions: 0,
      remainingRedemptions: input.maxRedemptions ?? null,
      disabledAt: null,
      createdBy,
      createdAt: now,
      updatedAt: now,
    } as Coupon);
    try {
      await em.flush();
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) {
        throw new TrellisError('conflict', 'coupon_code_taken', `A coupon with the code ${coupon.code} exists.`);
      }
      throw error;
    }
    return coupon;
  }

  async list(em: EntityManager, query: PageQuery & { includeDisabled?: boolean }): Promise<Page<Coupon>> {
    const p = paging(query);
    const where = query.includeDisabled ? {} : { disabledAt: null };
    const [items, total] = await em.findAndCount(Coupon, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: p.size, offset: p.offset });
    return { items, total, page: p.page, size: p.size };
  }

  async get(em: EntityManager, id: string): Promise<Coupon> {
    const coupon = isUuid(id) ? await em.findOne(Coupon, { id }) : null;
    if (!coupon) throw new TrellisError('not_found', 'coupon_not_found', 'No such coupon.');
    return coupon;
  }

  /** Disables a coupon (idempotent). Orders already holding it keep their discount. */
  async disable(em: EntityManager, id: string): Promise<Coupon> {
    const coupon = await this.get(em, id);
    if (!coupon.disabledAt) {
      const now = this.clock.now();
      coupon.disabledAt = now;
      coupon.updatedAt = now;
      await em.flush();
    }
    return coupon;
  }

  /** Checks a code for an amount and takes one redemption, race-free. 400 INVALID_COUPON or COUPON_EXHAUSTED. */
  async redeem(tx: EntityManager, code: string, amount: number): Promise<CouponQuote> {
    const now = this.clock.now();
    const normalised = normaliseCouponCode(code);
    const coupon = await tx.findOne(Coupon, { code: normalised }, { refresh: true });
    if (!coupon) throw billingErrors.invalidCoupon(`There is no coupon ${normalised}.`);
    this.checkUsable(coupon, now);
    const taken = await tx.nativeUpdate(
      Coupon,
      {
        id: coupon.id,
        disabledAt: null,
        $and: [{ $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] }, { $or: [{ remainingRedemptions: null }, { remainingRedemptions: { $gt: 0 } }] }],
      },
      { redemptions: raw('redemptions + 1'), remainingRedemptions: raw('remaining_redemptions - 1'), updatedAt: now },
    );
    if (taken === 0) {
      const current = await tx.findOneOrFail(Coupon, { id: coupon.id }, { refresh: true });
      this.checkUsable(current, now);
      throw billingErrors.couponExhausted(normalised);
    }
    return { coupon, discount: discountFor(coupon, amount) };
  }

  /** Gives a redemption back (the order expired or was cancelled). */
  async release(tx: EntityManager, couponId: string): Promise<void> {
    await tx.nativeUpdate(
      Coupon,
      { id: couponId, redemptions: { $gt: 0 } },
      { redemptions: raw('redemptions - 1'), remainingRedemptions: raw('remaining_redemptions + 1'), updatedAt: this.clock.now() },
    );
  }

  /**
   * Counts a redemption without the checks, for an order that is paid after it expired: the payer
   * got the discount, so it counts, even past the cap (remaining redemptions stay at 0).
   */
  async countLate(tx: EntityManager, couponId: string): Promise<void> {
    await tx.nativeUpdate(
      Coupon,
      { id: couponId },
      {
        redemptions: raw('redemptions + 1'),
        remainingRedemptions: raw('case when remaining_redemptions > 0 then remaining_redemptions - 1 else remaining_redemptions end'),
        updatedAt: this.clock.now(),
      },
    );
  }

  private checkUsable(coupon: Coupon, now: Date): void {
    if (coupon.disabledAt) throw billingErrors.invalidCoupon(`The coupon ${coupon.code} is disabled.`);
    if (coupon.expiresAt && coupon.expiresAt.getTime() <= now.getTime()) throw billingErrors.invalidCoupon(`The coupon ${coupon.code} expired.`);
  }
}
