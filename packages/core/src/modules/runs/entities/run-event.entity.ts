import { EntitySchema } from '@mikro-orm/core';

/**
 * The append-only event log of a run: one row per event, numbered from 1 by `seq` within the
 * run. Streams are written from this log (replay) and from the PubSub fan-out (live tail).
 */
export class RunEvent {
  runId!: string;
  seq!: number;
  type!: string;
  data!: Record<string, unknown>;
  createdAt!: Date;
}

export const RunEventSchema = new EntitySchema<RunEvent>({
  class: RunEvent,
  tableName: 'run_events',
  properties: {
    runId: { type: 'uuid', primary: true },
    seq: { type: 'integer', primary: true },
    type: { type: 'string', length: 32 },
    data: { type: 'json' },
    createdAt: { type: 'datetime' },
  },
});
