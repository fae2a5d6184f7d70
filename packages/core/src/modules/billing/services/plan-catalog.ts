import { inject, injectable } from 'inversify';
import type { BillingConfig } from '../billing.config.js';
import type { BillingPeriod } from '../periods.js';
import { billingConfigServiceIdentifier } from '../tokens.js';

export interface Plan {
  code: string;
  name: string;
  rank: number;
  monthlyCredits: number;
  monthlyPrice: number;
  yearlyPrice: number;
  currency: string;
}

export interface CreditPack {
  code: string;
  name: string;
  credits: number;
  price: number;
  currency: string;
}

/** The plans and credit packs of the configuration, and how two plan choices compare. */
@injectable()
export class PlanCatalog {
  private readonly plans: ReadonlyMap<string, Plan>;
  private readonly packs: ReadonlyMap<string, CreditPack>;

  constructor(@inject(billingConfigServiceIdentifier) private readonly config: BillingConfig) {
    const currency = config.currency;
    this.plans = new Map(
      Object.entries(config.plans)
        .map(([code, plan]) => ({ code, currency, ...plan }))
        .sort((a, b) => a.rank - b.rank)
        .map((plan) => [plan.code, plan]),
    );
    this.packs = new Map(
      Object.entries(config.creditPacks)
        .map(([code, pack]) => ({ code, currency, ...pack }))
        .sort((a, b) => a.credits - b.credits)
        .map((pack) => [pack.code, pack]),
    );
  }

  get currency(): string {
    return this.config.currency;
  }

  /** Every plan, lowest rank first. */
  list(): Plan[] {
    return [...this.plans.values()];
  }

  find(code: string): Plan | undefined {
    return this.plans.get(code);
  }

  get fallback(): Plan {
    return this.plans.get(this.config.fallbackPlan)!;
  }

  isFallback(code: string): boolean {
    return code === this.config.fallbackPlan;
  }

  priceOf(plan: Plan, period: BillingPeriod): number {
    return period === 'yearly' ? plan.yearlyPrice : plan.monthlyPrice;
  }

  /**
   * Positive when `target` is an upgrade of `current`, negative for a downgrade, 0 for the same
   * choice. The plan's rank decides; on the same plan, yearly ranks above monthly. A current plan
   * that left the configuration ranks lowest.
   */
  compare(target: { planCode: string; billingPeriod: BillingPeriod }, current: { planCode: string; billingPeriod: BillingPeriod }): number {
    const rank = (code: string) => this.plans.get(code)?.rank ?? -1;
    const byRank = rank(target.planCode) - rank(current.planCode);
    if (byRank !== 0 || target.planCode !== current.planCode) return byRank || (target.planCode < current.planCode ? -1 : 1);
    if (target.billingPeriod === current.billingPeriod) return 0;
    return target.billingPeriod === 'yearly' ? 1 : -1;
  }

  packList(): CreditPack[] {
    return [...this.packs.values()];
  }

  findPack(code: string): CreditPack | undefined {
    return this.packs.get(code);
  }
}
