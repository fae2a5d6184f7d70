import { EntitySchema } from '@mikro-orm/core';

/** A provider event Trellis has handled; the unique (provider, eventId) pair makes each event count once. */
export class PaymentEventRecord {
  id!: string;
  provider!: string;
  eventId!: string;
  type!: string;
  orderId!: string | null;
  /** What handling it did: `applied`, `already_paid`, `amount_mismatch`, `unknown_order`, `ignored`. */
  outcome!: string;
  createdAt!: Date;
}

export const PaymentEventSchema = new EntitySchema<PaymentEventRecord>({
  class: PaymentEventRecord,
  tableName: 'billing_payment_events',
  uniques: [{ properties: ['provider', 'eventId'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    provider: { type: 'string', length: 32 },
    eventId: { type: 'string', length: 255 },
    type: { type: 'string', length: 64 },
    orderId: { type: 'uuid', nullable: true },
    outcome: { type: 'string', length: 32 },
    createdAt: { type: 'datetime' },
  },
});
