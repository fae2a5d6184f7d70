import { describe, expect, it } from 'vitest';
import { TrellisError } from '../../../kernel/errors.js';
import { cronOf, dueTimes, nextDue } from './cron.js';

describe('schedule due times', () => {
  it('reads a cron expression in its time zone', () => {
    const cron = cronOf('0 9 * * *', 'Europe/Paris');
    // 2026-07-01 is summer time in Paris (UTC+2): 09:00 there is 07:00 UTC.
    expect(nextDue(cron, new Date('2026-07-01T00:00:00Z'))!.toISOString()).toBe('2026-07-01T07:00:00.000Z');
    expect(nextDue(cron, new Date('2026-12-01T00:00:00Z'))!.toISOString()).toBe('2026-12-01T08:00:00.000Z');
  });

  it('splits due times into recent ones and the latest missed one', () => {
    const cron = cronOf('* * * * * *', 'UTC');
    const cursor = new Date('2026-01-01T00:00:00Z');
    const { recent, lastMissed, missed, last } = dueTimes(cron, cursor, new Date('2026-01-01T00:01:00Z'), new Date('2026-01-01T00:00:50Z'));
    expect(missed).toBe(49);
    expect(lastMissed!.toISOString()).toBe('2026-01-01T00:00:49.000Z');
    expect(recent.map((d) => d.getUTCSeconds())).toEqual([50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 0]);
    expect(last!.toISOString()).toBe('2026-01-01T00:01:00.000Z');
  });

  it('refuses an unreadable expression and an unknown time zone', () => {
    expect(() => cronOf('every day', 'UTC')).toThrow(TrellisError);
    expect(() => cronOf('0 9 * * *', 'Mars/Olympus')).toThrow(expect.objectContaining({ code: 'invalid_timezone' }));
    expect(() => cronOf('61 * * * *', 'UTC')).toThrow(expect.objectContaining({ code: 'invalid_cron' }));
  });
});
