/** Calendar arithmetic for billing periods, in UTC. Pure functions, unit-tested beside. */

export const billingPeriods = ['monthly', 'yearly'] as const;
export type BillingPeriod = (typeof billingPeriods)[number];

export const isBillingPeriod = (value: unknown): value is BillingPeriod => billingPeriods.includes(value as BillingPeriod);

export const monthsOf = (period: BillingPeriod): number => (period === 'yearly' ? 12 : 1);

/**
 * `anchor` plus whole months, keeping the anchor's day of month and time of day; a day that the
 * target month lacks is clamped to its last day (Jan 31 + 1 month = Feb 28 or 29). Always computed
 * from the anchor, so a chain of periods never drifts (Jan 31, Feb 28, Mar 31, ...).
 */
export function addMonths(anchor: Date, months: number): Date {
  const year = anchor.getUTCFullYear();
  const month = anchor.getUTCMonth() + months;
  const targetYear = year + Math.floor(month / 12);
  const targetMonth = ((month % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(targetYear, targetMonth + 1, 0)).getUTCDate();
  const day = Math.min(anchor.getUTCDate(), lastDay);
  return new Date(
    Date.UTC(targetYear, targetMonth, day, anchor.getUTCHours(), anchor.getUTCMinutes(), anchor.getUTCSeconds(), anchor.getUTCMilliseconds()),
  );
}

export interface Span {
  /** Periods since the anchor (0 for the first). */
  index: number;
  start: Date;
  end: Date;
}

/**
 * The period of `months` months, counted from `anchor`, that contains `at` (start inclusive, end
 * exclusive). Instants before the anchor fall in period 0.
 */
export function periodContaining(anchor: Date, months: number, at: Date): Span {
  if (at.getTime() < anchor.getTime()) return { index: 0, start: anchor, end: addMonths(anchor, months) };
  // Estimate from the month difference, then correct by at most a step either way.
  const diff = (at.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (at.getUTCMonth() - anchor.getUTCMonth());
  let index = Math.max(0, Math.floor(diff / months) - 1);
  while (addMonths(anchor, (index + 1) * months).getTime() <= at.getTime()) index++;
  while (index > 0 && addMonths(anchor, index * months).getTime() > at.getTime()) index--;
  return { index, start: addMonths(anchor, index * months), end: addMonths(anchor, (index + 1) * months) };
}
