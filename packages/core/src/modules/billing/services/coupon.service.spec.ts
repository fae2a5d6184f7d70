import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { discountFor, normaliseCouponCode } from './coupon.service.js';

describe('discountFor', () => {
  it('takes a percentage rounded down, or a fixed amount capped at the amount', () => {
    expect(discountFor({ percentOff: 15, amountOff: null }, 2000)).toBe(300);
    expect(discountFor({ percentOff: 33, amountOff: null }, 999)).toBe(329);
    expect(discountFor({ percentOff: 100, amountOff: null }, 2000)).toBe(2000);
    expect(discountFor({ percentOff: null, amountOff: 500 }, 2000)).toBe(500);
    expect(discountFor({ percentOff: null, amountOff: 5000 }, 2000)).toBe(2000);
  });

  it('never makes an amount negative or larger (property)', () => {
    const coupon = fc.oneof(
      fc.record({ percentOff: fc.integer({ min: 1, max: 100 }), amountOff: fc.constant(null) }),
      fc.record({ percentOff: fc.constant(null), amountOff: fc.integer({ min: 1, max: 10_000_000 }) }),
    );
    fc.assert(
      fc.property(coupon, fc.integer({ min: 1, max: 100_000_000 }), (c, amount) => {
        const discount = discountFor(c, amount);
        expect(Number.isInteger(discount)).toBe(true);
        expect(discount).toBeGreaterThanOrEqual(0);
        expect(discount).toBeLessThanOrEqual(amount);
      }),
    );
  });

  it('normalises codes to upper case', () => {
    expect(normaliseCouponCode('  launch-20 ')).toBe('LAUNCH-20');
  });
});
