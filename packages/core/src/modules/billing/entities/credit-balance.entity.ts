import { EntitySchema } from '@mikro-orm/core';
import { Team } from '../../identity/index.js';

/**
 * A team's credits, kept equal to the sum of its ledger entries: every change to this row is made
 * in the same transaction as the ledger entry that explains it. Grant credits come with the plan
 * and expire at the end of their month; purchase credits were bought and stay.
 */
export class CreditBalance {
  id!: string;
  team!: Team;
  grantCredits!: number;
  purchaseCredits!: number;
  /** The current credit month (monthly grants happen per month, also on yearly plans). */
  periodStart!: Date;
  periodEnd!: Date;
  periodGrantedCredits!: number;
  version!: number;
  createdAt!: Date;
  updatedAt!: Date;
}

export const CreditBalanceSchema = new EntitySchema<CreditBalance>({
  class: CreditBalance,
  tableName: 'billing_credit_balances',
  properties: {
    id: { type: 'uuid', primary: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade', unique: true },
    grantCredits: { type: 'integer' },
    purchaseCredits: { type: 'integer' },
    periodStart: { type: 'datetime' },
    periodEnd: { type: 'datetime', index: true },
    periodGrantedCredits: { type: 'integer' },
    version: { type: 'integer', default: 1 },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});
