import type { ServiceIdentifier } from 'inversify';

/** What a timer needs to know of a schedule. */
export interface ScheduleTimerEntry {
  id: string;
  cron: string;
  timezone: string;
}

/** Told of each due time of a schedule, in one process of all that listen; `dueAt` is when it fell due. */
export type ScheduleDueHandler = (scheduleId: string, dueAt: Date) => Promise<void>;

/**
 * The ScheduleTimer port: an external timer that tells one process of many when a schedule falls
 * due (the BullMQ adapter's job schedulers, when Redis is configured). Without one bound, the
 * triggers module finds due schedules itself in the database (docs/schedules.md).
 *
 * Contract: `upsert` creates or replaces a schedule's timer (idempotent); `remove` deletes it (no
 * error when there is none); `listen` makes this process one of the consumers, each due time
 * being handed to one of them (a due time handed out twice is tolerated: the module records one
 * run per schedule and due time); `close` stops consuming.
 */
export interface ScheduleTimer {
  upsert(entry: ScheduleTimerEntry): Promise<void>;
  remove(scheduleId: string): Promise<void>;
  listen(handler: ScheduleDueHandler): Promise<void>;
  close(): Promise<void>;
}

export const scheduleTimerServiceIdentifier: ServiceIdentifier<ScheduleTimer> = Symbol.for('@trellis/core/ScheduleTimer');
