import { EntitySchema } from '@mikro-orm/core';
import { Team } from '../../identity/index.js';

export const reservationStatuses = ['held', 'settled', 'released'] as const;
export type ReservationStatus = (typeof reservationStatuses)[number];

/** Credits held for one piece of work (a run) until it is settled with what it used, or released. */
export class CreditReservation {
  id!: string;
  team!: Team;
  status!: ReservationStatus;
  amount!: number;
  /** How much of `amount` came from grant credits, and from which credit month. */
  grantPart!: number;
  purchasePart!: number;
  grantPeriodEnd!: Date;
  /** Credits charged when settled (null until then; 0 when released). */
  usedCredits!: number | null;
  reason!: string;
  /** User who made it, when made over HTTP. */
  userId!: string | null;
  expiresAt!: Date;
  closedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const CreditReservationSchema = new EntitySchema<CreditReservation>({
  class: CreditReservation,
  tableName: 'billing_credit_reservations',
  indexes: [{ properties: ['status', 'expiresAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade', index: true },
    status: { type: 'string', length: 16 },
    amount: { type: 'integer' },
    grantPart: { type: 'integer' },
    purchasePart: { type: 'integer' },
    grantPeriodEnd: { type: 'datetime' },
    usedCredits: { type: 'integer', nullable: true },
    reason: { type: 'string', length: 500 },
    userId: { type: 'uuid', nullable: true },
    expiresAt: { type: 'datetime' },
    closedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});
