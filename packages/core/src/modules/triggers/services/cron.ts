import { Cron } from 'croner';
import { triggerErrors } from '../errors.js';

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * A cron expression in a time zone (croner: five fields, or six with seconds first; `@hourly`
 * and the like). 422 `invalid_cron` / `invalid_timezone` when it cannot be used.
 */
export function cronOf(expression: string, timezone: string): Cron {
  if (!isTimeZone(timezone)) throw triggerErrors.invalidTimezone(timezone);
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone, paused: true, mode: 'auto' } as never);
  } catch (error) {
    throw triggerErrors.invalidCron(error instanceof Error ? error.message : String(error));
  }
  if (!cron.nextRun(new Date())) throw triggerErrors.invalidCron('it has no future due time');
  return cron;
}

/** The first due time strictly after `after`, or null. */
export function nextDue(cron: Cron, after: Date): Date | null {
  return cron.nextRun(after);
}

/** Most due times looked at in one pass (a long downtime of a per-second schedule). */
const MAX_SCAN = 200_000;

/**
 * The due times after `cursor` up to `now`, split at `cutoff`: those at or after it (`recent`, all
 * of them) and the latest one before it (`lastMissed`), with how many were missed.
 */
export function dueTimes(cron: Cron, cursor: Date, now: Date, cutoff: Date): { recent: Date[]; lastMissed: Date | null; missed: number; last: Date | null } {
  const recent: Date[] = [];
  let lastMissed: Date | null = null;
  let missed = 0;
  let last: Date | null = null;
  let at = cursor;
  for (let i = 0; i < MAX_SCAN; i++) {
    const next = cron.nextRun(at);
    if (!next || next.getTime() > now.getTime()) break;
    if (next.getTime() < cutoff.getTime()) {
      lastMissed = next;
      missed++;
    } else recent.push(next);
    last = next;
    at = next;
  }
  return { recent, lastMissed, missed, last };
}
