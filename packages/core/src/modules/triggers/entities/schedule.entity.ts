import { EntitySchema } from '@mikro-orm/core';
import { Block } from '../../blocks/index.js';
import { User } from '../../identity/index.js';

/** What happens to due times missed while no process looked (downtime): dropped, or one run for all of them. */
export const missedPolicies = ['skip', 'runOnce'] as const;
export type MissedPolicy = (typeof missedPolicies)[number];

/**
 * A schedule of a deployed block: each due time of `cron` in `timezone` starts one run of the
 * deployment with `inputs`, across every process. `cursorAt` is the last due time handled; the
 * process that moves it forward (compare and set) starts the runs of the due times it passed.
 */
export class Schedule {
  id!: string;
  block!: Block;
  createdBy!: User;
  name!: string;
  cron!: string;
  timezone!: string;
  inputs!: Record<string, unknown>;
  version!: string | null;
  missed!: MissedPolicy;
  paused!: boolean;
  cursorAt!: Date;
  nextDueAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const ScheduleSchema = new EntitySchema<Schedule>({
  class: Schedule,
  tableName: 'schedules',
  indexes: [{ properties: ['paused', 'nextDueAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    block: { kind: 'm:1', entity: () => Block, deleteRule: 'cascade', index: true },
    createdBy: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    name: { type: 'string', length: 200 },
    cron: { type: 'string', length: 200 },
    timezone: { type: 'string', length: 64 },
    inputs: { type: 'json' },
    version: { type: 'string', length: 32, nullable: true },
    missed: { type: 'string', length: 16 },
    paused: { type: 'boolean' },
    cursorAt: { type: 'datetime' },
    nextDueAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});

/** One due time of a schedule that was run: unique per schedule and time, whoever ran it. */
export class ScheduleFire {
  id!: string;
  schedule!: Schedule;
  dueAt!: Date;
  runId!: string | null;
  /** Why no run started (insufficient credits, invalid inputs, the deployment is gone). */
  error!: { code: string; message: string } | null;
  createdAt!: Date;
}

export const ScheduleFireSchema = new EntitySchema<ScheduleFire>({
  class: ScheduleFire,
  tableName: 'schedule_fires',
  uniques: [{ properties: ['schedule', 'dueAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    schedule: { kind: 'm:1', entity: () => Schedule, deleteRule: 'cascade' },
    dueAt: { type: 'datetime' },
    runId: { type: 'uuid', nullable: true },
    error: { type: 'json', nullable: true },
    createdAt: { type: 'datetime' },
  },
});
