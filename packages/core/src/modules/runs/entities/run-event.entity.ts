import { EntitySchema } from '@mikro-orm/core';

/** One event of a run: the spec's event name as `type`, its fields as `data`, and its sequence number. */
export interface StoredRunEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/**
 * The append-only event log of a run. Every event has its own sequence number (from 1 within the
 * run); a row holds one or more consecutive events (`seq` to `lastSeq`), so a block streaming
 * thousands of chunks costs a few rows, not thousands. Streams are written from this log (replay)
 * and from the PubSub fan-out (live tail).
 */
export class RunEvent {
  runId!: string;
  /** Sequence number of the first event of the row. */
  seq!: number;
  lastSeq!: number;
  events!: StoredRunEvent[];
  createdAt!: Date;
}

export const RunEventSchema = new EntitySchema<RunEvent>({
  class: RunEvent,
  tableName: 'run_events',
  indexes: [{ properties: ['runId', 'lastSeq'] }],
  properties: {
    runId: { type: 'uuid', primary: true },
    seq: { type: 'integer', primary: true },
    lastSeq: { type: 'integer' },
    events: { type: 'json', columnType: 'json' },
    createdAt: { type: 'datetime' },
  },
});
