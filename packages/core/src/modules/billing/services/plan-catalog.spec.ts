import { describe, expect, it } from 'vitest';
import { billingConfigSchema, checkBillingConfig } from '../billing.config.js';
import { parseConfig } from '../../../kernel/config/schema.js';
import { PlanCatalog } from './plan-catalog.js';

const catalog = new PlanCatalog(checkBillingConfig(parseConfig(billingConfigSchema, {})));
const choice = (planCode: string, billingPeriod: 'monthly' | 'yearly') => ({ planCode, billingPeriod });

describe('PlanCatalog', () => {
  it('lists the default plans by rank, with free as the fallback', () => {
    expect(catalog.list().map((p) => p.code)).toEqual(['free', 'pro', 'team']);
    expect(catalog.fallback.code).toBe('free');
    expect(catalog.priceOf(catalog.find('pro')!, 'yearly')).toBe(20_000);
    expect(catalog.find('pro')!.currency).toBe('usd');
  });

  it('calls a higher rank an upgrade and a lower one a downgrade, whatever the period', () => {
    expect(catalog.compare(choice('pro', 'monthly'), choice('free', 'monthly'))).toBeGreaterThan(0);
    expect(catalog.compare(choice('team', 'monthly'), choice('pro', 'yearly'))).toBeGreaterThan(0);
    expect(catalog.compare(choice('pro', 'yearly'), choice('team', 'monthly'))).toBeLessThan(0);
    expect(catalog.compare(choice('free', 'yearly'), choice('pro', 'monthly'))).toBeLessThan(0);
  });

  it('on the same plan, ranks yearly above monthly and the same choice as equal', () => {
    expect(catalog.compare(choice('pro', 'yearly'), choice('pro', 'monthly'))).toBeGreaterThan(0);
    expect(catalog.compare(choice('pro', 'monthly'), choice('pro', 'yearly'))).toBeLessThan(0);
    expect(catalog.compare(choice('pro', 'monthly'), choice('pro', 'monthly'))).toBe(0);
  });

  it('ranks a plan that left the configuration below every configured plan', () => {
    expect(catalog.compare(choice('free', 'monthly'), choice('legacy', 'monthly'))).toBeGreaterThan(0);
  });
});
