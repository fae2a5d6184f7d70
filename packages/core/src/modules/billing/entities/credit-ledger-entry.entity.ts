import { EntitySchema } from '@mikro-orm/core';
import { Team } from '../../identity/index.js';

/**
 * Why credits moved. `grant`: the plan's monthly credits. `purchase`: a paid credit pack.
 * `reservation`: held for work about to run. `settlement`: the unused part of a reservation given
 * back when the work finished. `release`: a whole reservation given back (cancelled, failed or
 * expired work). `expiry`: grant credits left at the end of their month.
 */
export const ledgerKinds = ['grant', 'purchase', 'reservation', 'settlement', 'release', 'expiry'] as const;
export type LedgerKind = (typeof ledgerKinds)[number];

/** One movement of a team's credits. Append-only: never updated, never deleted (except with the team). */
export class CreditLedgerEntry {
  id!: string;
  team!: Team;
  kind!: LedgerKind;
  /** Change of grant credits (negative when taken). */
  grantDelta!: number;
  /** Change of purchase credits. */
  purchaseDelta!: number;
  /** The balance right after this entry. */
  grantAfter!: number;
  purchaseAfter!: number;
  reason!: string;
  /** The reservation or order this movement belongs to, when there is one. */
  reservationId!: string | null;
  orderId!: string | null;
  /** Makes a movement happen at most once (`grant:<team>:<period start>`, `purchase:<order>`). */
  uniqueKey!: string | null;
  createdAt!: Date;
}

export const CreditLedgerEntrySchema = new EntitySchema<CreditLedgerEntry>({
  class: CreditLedgerEntry,
  tableName: 'billing_credit_ledger',
  indexes: [{ properties: ['team', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade' },
    kind: { type: 'string', length: 16 },
    grantDelta: { type: 'integer' },
    purchaseDelta: { type: 'integer' },
    grantAfter: { type: 'integer' },
    purchaseAfter: { type: 'integer' },
    reason: { type: 'string', length: 500 },
    reservationId: { type: 'uuid', nullable: true, index: true },
    orderId: { type: 'uuid', nullable: true },
    uniqueKey: { type: 'string', length: 200, nullable: true, unique: true },
    createdAt: { type: 'datetime' },
  },
});
