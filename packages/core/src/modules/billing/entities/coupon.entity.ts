import { EntitySchema } from '@mikro-orm/core';

/** A discount on payment orders: a percentage or a fixed amount, with an optional expiry and redemption cap. */
export class Coupon {
  id!: string;
  /** Upper case; unique. */
  code!: string;
  percentOff!: number | null;
  /** In the minor unit of `billing.currency`. */
  amountOff!: number | null;
  expiresAt!: Date | null;
  maxRedemptions!: number | null;
  /** Orders currently holding a redemption (pending or paid). */
  redemptions!: number;
  /** `maxRedemptions - redemptions`, or null without a cap; a redemption is taken only while it is above 0. */
  remainingRedemptions!: number | null;
  disabledAt!: Date | null;
  createdBy!: string | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const CouponSchema = new EntitySchema<Coupon>({
  class: Coupon,
  tableName: 'billing_coupons',
  properties: {
    id: { type: 'uuid', primary: true },
    code: { type: 'string', length: 64, unique: true },
    percentOff: { type: 'integer', nullable: true },
    amountOff: { type: 'integer', nullable: true },
    expiresAt: { type: 'datetime', nullable: true },
    maxRedemptions: { type: 'integer', nullable: true },
    redemptions: { type: 'integer', default: 0 },
    remainingRedemptions: { type: 'integer', nullable: true },
    disabledAt: { type: 'datetime', nullable: true },
    createdBy: { type: 'uuid', nullable: true },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});
