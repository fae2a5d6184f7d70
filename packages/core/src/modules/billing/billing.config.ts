import { ConfigError, s, type ConfigIssue, type InferConfig } from '../../kernel/config/schema.js';

const planSchema = s.object({
  name: s.string().min(1).describe('Display name.'),
  rank: s
    .int()
    .range(0)
    .describe('Decides upgrade (higher rank: paid at once) versus downgrade (lower rank: applied at period end). Ranks are distinct.'),
  monthlyCredits: s.int().range(0).describe('Credits granted at the start of every month of a subscription; unused ones expire at the month end.'),
  monthlyPrice: s.int().range(0).describe('Price of one month, in the minor unit of `billing.currency` (cents).'),
  yearlyPrice: s.int().range(0).describe('Price of one year, in the minor unit of `billing.currency`.'),
});

const creditPackSchema = s.object({
  name: s.string().min(1).describe('Display name.'),
  credits: s.int().range(1).describe('Purchased credits added to the team balance once the order is paid; they never expire.'),
  price: s.int().range(1).describe('Price in the minor unit of `billing.currency`.'),
});

export type PlanConfig = InferConfig<typeof planSchema>;
export type CreditPackConfig = InferConfig<typeof creditPackSchema>;

export const defaultPlans: Record<string, PlanConfig> = {
  free: { name: 'Free', rank: 0, monthlyCredits: 100, monthlyPrice: 0, yearlyPrice: 0 },
  pro: { name: 'Pro', rank: 10, monthlyCredits: 2_000, monthlyPrice: 2_000, yearlyPrice: 20_000 },
  team: { name: 'Team', rank: 20, monthlyCredits: 10_000, monthlyPrice: 5_000, yearlyPrice: 50_000 },
};

export const defaultCreditPacks: Record<string, CreditPackConfig> = {
  'credits-1000': { name: '1,000 credits', credits: 1_000, price: 1_000 },
  'credits-5000': { name: '5,000 credits', credits: 5_000, price: 4_500 },
};

export const billingConfigSchema = s.object({
  currency: s
    .string()
    .matches(/^[a-z]{3}$/, 'a lower-case ISO 4217 code such as usd')
    .default('usd')
    .describe('Currency of every price, coupon amount and order.'),
  fallbackPlan: s
    .string()
    .default('free')
    .describe('Plan every team starts on and falls back to when a subscription ends. It must exist, cost nothing and have the lowest rank.'),
  plans: s
    .record(planSchema)
    .default(() => structuredClone(defaultPlans))
    .describe('Plans by code (`[a-z0-9][a-z0-9_-]*`). Replaces the default free/pro/team set as a whole.'),
  creditPacks: s
    .record(creditPackSchema)
    .default(() => structuredClone(defaultCreditPacks))
    .describe('Credit packs a team can buy (`POST /billing/credits/purchase`), by code.'),
  orderTtlMinutes: s
    .int()
    .range(30, 1_440)
    .default(1_440)
    .describe('How long a payment order stays payable (30 minutes to 24 hours, the range Stripe Checkout accepts).'),
  renewalGraceDays: s
    .int()
    .range(1, 90)
    .default(7)
    .describe('Days a renewed paid subscription stays usable (status past_due) while its renewal order is unpaid; then the team falls back to the fallback plan.'),
  reservationTtlSeconds: s
    .int()
    .range(10, 86_400)
    .default(3_600)
    .describe('A credit reservation neither settled nor released within this time is released by the expiry job.'),
  creditLowThreshold: s
    .int()
    .range(0)
    .default(20)
    .describe('A charge (a settled reservation) that takes a team\'s balance below this many credits raises `billing.credits_low`; with the realtime module, every member of the team gets a `system` push of type `credit_low`. 0: never.'),
  jobIntervalMs: s
    .int()
    .range(1_000)
    .default(60_000)
    .describe('How often the renewal and expiry jobs run in each host process (they are safe to run in several at once).'),
});

export type BillingConfig = InferConfig<typeof billingConfigSchema>;

const codePattern = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Rules one field cannot express: codes, the fallback plan, distinct ranks. Throws a `ConfigError` naming each path. */
export function checkBillingConfig(config: BillingConfig): BillingConfig {
  const issues: ConfigIssue[] = [];
  const plans = Object.entries(config.plans);
  for (const [code] of plans) {
    if (!codePattern.test(code)) issues.push({ path: `billing.plans.${code}`, message: 'a plan code must match [a-z0-9][a-z0-9_-]* (at most 64 characters)' });
  }
  for (const [code] of Object.entries(config.creditPacks)) {
    if (!codePattern.test(code)) issues.push({ path: `billing.creditPacks.${code}`, message: 'a pack code must match [a-z0-9][a-z0-9_-]* (at most 64 characters)' });
  }
  const fallback = config.plans[config.fallbackPlan];
  if (!fallback) {
    issues.push({ path: 'billing.fallbackPlan', message: `names no plan in billing.plans (known: ${plans.map(([c]) => c).join(', ') || 'none'})` });
  } else {
    if (fallback.monthlyPrice !== 0 || fallback.yearlyPrice !== 0) {
      issues.push({ path: `billing.plans.${config.fallbackPlan}`, message: 'the fallback plan must cost nothing (monthlyPrice and yearlyPrice 0)' });
    }
    for (const [code, plan] of plans) {
      if (code !== config.fallbackPlan && plan.rank <= fallback.rank) {
        issues.push({ path: `billing.plans.${code}.rank`, message: `must be higher than the fallback plan's rank (${fallback.rank})` });
      }
    }
  }
  const byRank = new Map<number, string>();
  for (const [code, plan] of plans) {
    const other = byRank.get(plan.rank);
    if (other !== undefined) issues.push({ path: `billing.plans.${code}.rank`, message: `is the same as billing.plans.${other}.rank; ranks must differ` });
    byRank.set(plan.rank, code);
  }
  if (issues.length) throw new ConfigError(issues);
  return config;
}
