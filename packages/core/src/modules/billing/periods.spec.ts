import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addMonths, periodContaining } from './periods.js';

const iso = (s: string) => new Date(s);

describe('addMonths', () => {
  it('keeps the day and time of the anchor', () => {
    expect(addMonths(iso('2026-03-15T10:20:30.400Z'), 1).toISOString()).toBe('2026-04-15T10:20:30.400Z');
    expect(addMonths(iso('2026-11-15T00:00:00Z'), 3).toISOString()).toBe('2027-02-15T00:00:00.000Z');
    expect(addMonths(iso('2026-03-15T00:00:00Z'), 12).toISOString()).toBe('2027-03-15T00:00:00.000Z');
  });

  it('clamps to the last day of a shorter month without drifting', () => {
    const anchor = iso('2027-01-31T12:00:00Z');
    expect(addMonths(anchor, 1).toISOString()).toBe('2027-02-28T12:00:00.000Z');
    expect(addMonths(anchor, 2).toISOString()).toBe('2027-03-31T12:00:00.000Z');
    expect(addMonths(iso('2028-01-31T00:00:00Z'), 1).toISOString()).toBe('2028-02-29T00:00:00.000Z');
    expect(addMonths(iso('2028-02-29T00:00:00Z'), 12).toISOString()).toBe('2029-02-28T00:00:00.000Z');
  });
});

describe('periodContaining', () => {
  it('finds the period holding an instant, start inclusive and end exclusive', () => {
    const anchor = iso('2026-01-31T00:00:00Z');
    expect(periodContaining(anchor, 1, iso('2026-02-27T23:59:59Z'))).toMatchObject({ index: 0 });
    const second = periodContaining(anchor, 1, iso('2026-02-28T00:00:00Z'));
    expect(second.index).toBe(1);
    expect(second.start.toISOString()).toBe('2026-02-28T00:00:00.000Z');
    expect(second.end.toISOString()).toBe('2026-03-31T00:00:00.000Z');
    expect(periodContaining(anchor, 12, iso('2029-06-01T00:00:00Z')).start.toISOString()).toBe('2029-01-31T00:00:00.000Z');
  });

  it('always contains the instant (property)', () => {
    const date = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true });
    fc.assert(
      fc.property(date, fc.integer({ min: 0, max: 4_000 }).map((days) => days * 86_400_000), fc.constantFrom(1, 12), (anchor, offset, months) => {
        const at = new Date(anchor.getTime() + offset);
        const span = periodContaining(anchor, months, at);
        expect(span.start.getTime()).toBeLessThanOrEqual(at.getTime());
        expect(span.end.getTime()).toBeGreaterThan(at.getTime());
        expect(span.start.getTime()).toBe(addMonths(anchor, span.index * months).getTime());
        expect(span.end.getTime()).toBe(addMonths(anchor, (span.index + 1) * months).getTime());
      }),
    );
  });
});
