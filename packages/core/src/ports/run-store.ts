import type { EntityManager } from '@mikro-orm/core';
import type { PreparedStatements, RowSink } from './database.js';
import type { PubSub } from './pubsub.js';

/** An event of a run's log: its sequence number, its type, and its fields as JSON text. */
export interface RunLogEvent {
  seq: number;
  type: string;
  json: string;
  /**
   * Set on a chunk its sink made (`{"blockId":..,"delta":"..."}`): the start of `json` before the
   * delta's text (`{"blockId":"..","delta":`). A store may keep such chunks compact (core's
   * `rowText` does); absent, the event is kept as its text says.
   */
  chunk?: string;
}

/** Which attempt of a run a write belongs to: a write of a superseded attempt changes nothing. */
export interface RunFence {
  id: string;
  attempt: number;
}

/** Work in a transaction of the run store: `rows` takes the rows it inserts last (see `RowSink`). */
export type RunStoreWork<T> = (tx: EntityManager, rows: RowSink, alone: boolean) => Promise<T>;

/** How a unit of `RunStore.write` behaves when it fails (see `GroupWorkOptions`). */
export interface RunStoreWriteOptions {
  atomic?: boolean | ((error: unknown) => boolean);
  concurrent?: boolean;
}

/** A credit hold taken in the transaction that stores a new run (see `RunStore.create`). */
export interface RunCreditHold {
  amount: number;
  /** Holds `amount` in `tx` (with the reservation id `id` when given) and answers the reservation's id. */
  take(tx: EntityManager, alone: boolean, rows: RowSink, id?: string): Promise<string>;
  /** A new reservation id (for a store that writes the record before the hold). */
  newId(): string;
  /** Says of an error of `take` whether it wrote nothing (see `RunStoreWriteOptions.atomic`). */
  wroteNothing(error: unknown): boolean;
  /**
   * What `take` does in the common case, as data, for a store that can write it with the run's
   * record in one statement (PostgreSQL): take `amount` from the team's grant credits when they
   * cover it, as `CreditService.hold` does. When that store finds them short, it calls `take`.
   */
  grant?: RunGrantHold;
}

/** A run's hold from the grant credits (see `RunCreditHold.grant`): the reservation's fields. */
export interface RunGrantHold {
  teamId: string;
  userId: string | null;
  /** The reservation's reason (`run <id>`). */
  reason: string;
  now: Date;
  expiresAt: Date;
}

/** The fields of a run's final record. */
export interface RunFinalRecord {
  cursor: number;
  sessions: unknown[];
  ctx: unknown[];
  usage: unknown;
  status: string;
  output: unknown;
  error: { code: string; message: string } | null;
  timedOut: boolean;
  finishedAt: Date;
  durationMs: number;
  updatedAt: Date;
}

/**
 * The settlement of a run's credits, applied in the transaction of its final record and only when
 * that record was written (the attempt was not superseded): `used` credits are recorded on the
 * run; `apply` closes the reservation and answers false when closing wrote nothing (it was closed
 * already, or is gone: the run then records no used credits).
 */
export interface RunSettlement {
  used: number;
  apply(tx: EntityManager, rows: RowSink): Promise<boolean>;
  /**
   * What `apply` does, as data, for a store that can write it with the final record in one
   * statement (PostgreSQL): close the reservation `reservationId` (settled with `used`, or
   * released), which the run's hold took whole from the grant credits (`reserved`, with the
   * reason `reservationReason`), and give back what was not used. When the reservation is not
   * that (closed already, gone, partly purchased credits), that store calls `apply` instead.
   */
  close?: RunSettlementClose;
}

/** See `RunSettlement.close`. */
export interface RunSettlementClose {
  reservationId: string;
  reserved: number;
  reservationReason: string;
  used: number;
  release: boolean;
  /** Why, for the ledger entry's reason. */
  reason: string;
  /** The id of the ledger entry that gives the unused credits back. */
  ledgerEntryId: string;
  now: Date;
}

/**
 * The RunStore port: the storage of a run's record, attempts, event log and final record. A
 * database adapter supplies it (`DatabaseAdapter.runStore`), where its tricks belong (group commit
 * on SQLite, the hold last before the commit on PostgreSQL, prepared statements); the contract
 * every implementation keeps is `test/support/run-store-contract.ts`.
 */
export interface RunStore {
  /** Runs `work` in one transaction of the store (on SQLite shared with other writes: see GroupCommit). */
  write<T>(work: RunStoreWork<T>, options?: RunStoreWriteOptions): Promise<T>;
  /**
   * Stores a new run's record (`record`, every column as it is) and its credit hold in one
   * transaction: both or neither. Answers the reservation id (null without a hold); the stored
   * record carries it and `hold.amount` as its reserved credits.
   */
  create(record: Record<string, unknown> & { id: string }, hold: RunCreditHold | null): Promise<string | null>;
  /**
   * Claims the next attempt of a queued or running run whose attempt is `fence.attempt`: the
   * record becomes running under `fence.attempt + 1` with the attempt's sequence numbers reserved
   * up to `seqCeiling`. False when another claim or ending took the run first.
   */
  claim(fence: RunFence, claim: { startedAt: Date; deadlineAt: Date; now: Date; seqCeiling: number }): Promise<boolean>;
  /**
   * Stores the highest sequence number the run may use (`fence.attempt` undefined: whichever
   * attempt holds it). False when nothing was written: no such run, or another attempt holds it.
   */
  setSeqCeiling(fence: { id: string; attempt?: number }, ceiling: number): Promise<boolean>;
  /**
   * Appends `events` (ascending, numbered above everything the run's log holds) to the log in one
   * transaction with `write` (run first) when given; `conditional` events are stored only when
   * `keep(answer of write)` is true. Answers what `write` answered.
   */
  append<T>(runId: string, events: readonly RunLogEvent[], step?: { write: RunStoreWork<T>; keep?: (answer: T) => boolean; conditional?: readonly RunLogEvent[] }): Promise<T | undefined>;
  /**
   * The work that writes the final record of `fence`'s attempt and then settles its credits
   * (`settle`, only when the record was written): answers 1, or 0 when the attempt was superseded
   * (nothing written). Run it as the `write` of `append`, with the run's last events.
   */
  finishWork(fence: RunFence, final: RunFinalRecord, settle: RunSettlement | null): RunStoreWork<number>;
  /** Events of the run's log after `after` (and below `below`), a page of rows at a time, in order. */
  read(runId: string, after: number, below?: number): Promise<RunLogEvent[]>;
  /**
   * Follows the run's log from just after `after`: the stored events, then the live tail, each
   * sequence number once and in order, in the batches they come in; ends after `run_complete`
   * (and, with `endWhenWaiting`, at `run_waiting` of a run still waiting), or when `signal` aborts.
   */
  follow(runId: string, options: { after: number; signal?: AbortSignal; endWhenWaiting?: boolean }): AsyncIterable<RunLogEvent[]>;
}

/** What a database adapter's run store is made of (see `DatabaseAdapter.runStore`). */
export interface RunStoreDeps {
  /** A fresh entity manager of the connected ORM. */
  fork: () => EntityManager;
  sql: PreparedStatements;
  /** Where the live tail of a run's events fans out (between processes). */
  pubsub: PubSub;
}
