import type { EntityManager } from '@mikro-orm/core';
import { sqlBool, sqlDate, sqlRowTable, sqlStatement, type PreparedStatements, type RowSink, type SqlValue } from '../../ports/database.js';
import type { Run } from './entities/run.entity.js';

/**
 * The runs module's hot-path statements (prepared once, see PreparedStatements): a run's record
 * inserted, and its final record written. Everything else goes through the ORM. JSON columns are
 * bound as JSON text (SQL NULL for null), as the ORM's json type stores them.
 */

const json = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));

/** How a column of `runs` is bound and read: JSON text, a datetime, a boolean (0/1 on SQLite), an integer, text (a uuid: text, typed on PostgreSQL). */
export type RunColumnKind = 'json' | 'date' | 'bool' | 'int' | 'text' | 'uuid';

/**
 * A column of `runs`: its name, the `Run` field it holds, its kind, and the value bound when the
 * field is absent (fields newer than the record some callers build).
 */
export type RunColumn = readonly [column: string, field: keyof Run & string, kind: RunColumnKind, absent?: SqlValue];

/**
 * The columns of `runs` in insert order (`runValues` gives a run's values in this order). Exported
 * for the database adapters' run stores, which write a run's record in statements of their own
 * dialect (a typed `insert ... select` on PostgreSQL).
 */
export const runColumns: readonly RunColumn[] = [
  ['id', 'id', 'uuid'],
  ['document_id', 'documentId', 'uuid'],
  ['project_id', 'projectId', 'uuid'],
  ['team_id', 'teamId', 'uuid'],
  ['user_id', 'userId', 'uuid'],
  ['source', 'source', 'text'],
  ['version', 'version', 'text'],
  ['status', 'status', 'text'],
  ['inputs', 'inputs', 'json'],
  ['content', 'content', 'json'],
  ['cursor', 'cursor', 'int'],
  ['sessions', 'sessions', 'json'],
  ['ctx', 'ctx', 'json'],
  ['output', 'output', 'json'],
  ['error', 'error', 'json'],
  ['usage', 'usage', 'json'],
  ['on_error', 'onError', 'text'],
  ['timeout_seconds', 'timeoutSeconds', 'int'],
  ['timed_out', 'timedOut', 'bool'],
  ['reservation_id', 'reservationId', 'uuid'],
  ['reserved_credits', 'reservedCredits', 'int'],
  ['used_credits', 'usedCredits', 'int'],
  ['seq_ceiling', 'seqCeiling', 'int'],
  ['attempt', 'attempt', 'int'],
  ['waiting', 'waiting', 'json'],
  ['answer', 'answer', 'json'],
  ['cancel_requested', 'cancelRequested', 'bool'],
  ['heartbeat_at', 'heartbeatAt', 'date'],
  ['started_at', 'startedAt', 'date'],
  ['deadline_at', 'deadlineAt', 'date'],
  ['finished_at', 'finishedAt', 'date'],
  ['duration_ms', 'durationMs', 'int'],
  ['idempotency_key', 'idempotencyKey', 'text', null],
  ['idempotency_scope', 'idempotencyScope', 'text', null],
  ['request_hash', 'requestHash', 'text', null],
  ['parent_run_id', 'parentRunId', 'uuid', null],
  ['parent_block_id', 'parentBlockId', 'text', null],
  ['depth', 'depth', 'int', 0],
  ['budget_credits', 'budgetCredits', 'int', null],
  ['budget_root_id', 'budgetRootId', 'uuid', null],
  ['created_at', 'createdAt', 'date'],
  ['updated_at', 'updatedAt', 'date'],
];

/** Rows of `runs` (after the credit reservations a run's row refers to). */
const runRows = sqlRowTable('runs.insert_runs', `"runs" (${runColumns.map(([column]) => `"${column}"`).join(', ')})`, `(${runColumns.map(() => '?').join(', ')})`, 3);

/** The values a run's record binds, column by column in the order of `runColumns` (JSON columns as JSON text). */
export function runValues(run: Run): SqlValue[] {
  return runColumns.map(([, field, kind, absent]) => {
    const value = (run as unknown as Record<string, unknown>)[field];
    if (kind === 'json') return json(value);
    return (value === undefined && absent !== undefined ? absent : value) as SqlValue;
  });
}

/** Inserts a run's record as it is (every column): at once, or with the other rows of its group commit. */
export async function insertRun(rows: RowSink, em: EntityManager, run: Run): Promise<void> {
  await rows.insertRow(em, runRows, runValues(run));
}

/** A run's whole record (what the ORM's `findOne(Run)` reads), in one prepared read. */
const runByIdStatement = sqlStatement(
  'runs.run_by_id',
  `select ${runColumns.map(([column]) => `"${column}"`).join(', ')} from "runs" where "id" = ?`,
);

/**
 * A run's whole record by id, as a plain `Run` (like the record a starting run keeps in memory),
 * in one prepared read instead of the ORM's read and hydration: what a process that executes a run
 * it did not accept (a BullMQ worker, a queued or recovered run) reads first. Undefined: no such
 * run. JSON columns come back parsed on PostgreSQL and as text on SQLite.
 */
export async function readRun(sql: PreparedStatements, runId: string): Promise<Run | undefined> {
  const row = await sql.first<Record<string, unknown>>(runByIdStatement, [runId]);
  if (!row) return undefined;
  const run: Record<string, unknown> = {};
  for (const [column, field, kind] of runColumns) {
    const value = row[column];
    if (value === null || value === undefined) run[field] = kind === 'bool' ? false : null;
    else if (kind === 'json') run[field] = typeof value === 'string' && sql.dialect === 'sqlite' ? JSON.parse(value) : value;
    else if (kind === 'date') run[field] = sqlDate(value);
    else if (kind === 'bool') run[field] = sqlBool(value);
    else if (kind === 'int') run[field] = Number(value);
    else run[field] = value;
  }
  return run as unknown as Run;
}

/**
 * Claims the next attempt of a queued or running run whose attempt is the one given (see
 * `RunStore.claim`): the number of rows changed (0 when another claim or ending took it first).
 */
export const claimRunStatement = sqlStatement(
  'runs.claim_run',
  `update "runs" set "attempt" = ?, "status" = 'running', "heartbeat_at" = ?, "started_at" = ?, "deadline_at" = ?, "updated_at" = ?, "seq_ceiling" = ?
  where "id" = ? and "attempt" = ? and "status" in ('queued', 'running')`,
);

/** Raises (or sets) the sequence numbers reserved on a run, fenced by its attempt (see `RunStore.setSeqCeiling`). */
export const seqCeilingStatement = sqlStatement('runs.seq_ceiling', `update "runs" set "seq_ceiling" = ? where "id" = ? and "attempt" = ?`);
/** `seqCeilingStatement` for a caller that fences by no attempt. */
export const seqCeilingUnfencedStatement = sqlStatement('runs.seq_ceiling_unfenced', `update "runs" set "seq_ceiling" = ? where "id" = ?`);

/**
 * A run's final record, fenced by its attempt (`finishRunParams` gives its values). Exported for
 * the database adapters' run stores, which may write it inside a statement of their own (a CTE on
 * PostgreSQL, with the settlement and the events).
 */
export const finishRunStatement = sqlStatement(
  'runs.finish_run',
  `update "runs" set "cursor" = ?, "sessions" = ?, "ctx" = ?, "usage" = ?, "status" = ?, "waiting" = null, "output" = ?, "error" = ?, "timed_out" = ?,
    "used_credits" = ?, "finished_at" = ?, "duration_ms" = ?, "updated_at" = ?
  where "id" = ? and "attempt" = ? and "finished_at" is null`,
);

/** The fields of a run's final record (see `finishRun`). */
export type RunFinal = Pick<Run, 'cursor' | 'sessions' | 'ctx' | 'usage' | 'status' | 'output' | 'error' | 'timedOut' | 'usedCredits' | 'finishedAt' | 'durationMs' | 'updatedAt'>;

/** The final record of a run, written once by the attempt that executed it: the number of rows changed (0 when another attempt took it over, or it was written already). */
export function finishRun(sql: PreparedStatements, em: EntityManager, fence: { id: string; attempt: number }, final: RunFinal): Promise<number> {
  return sql.run(finishRunStatement, finishRunParams(fence, final), em);
}

/** The values `finishRunStatement` binds: the final record's fields (JSON ones as JSON text), then the fence. */
export function finishRunParams(fence: { id: string; attempt: number }, final: RunFinal): SqlValue[] {
  return [
    final.cursor,
    json(final.sessions),
    json(final.ctx),
    json(final.usage),
    final.status,
    json(final.output),
    json(final.error),
    final.timedOut,
    final.usedCredits,
    final.finishedAt,
    final.durationMs,
    final.updatedAt,
    fence.id,
    fence.attempt,
  ];
}

/** What a run's answer (`RunService.resultOf`) reads of its record: no inputs, content or usage. */
const runResultStatement = sqlStatement(
  'runs.result_by_id',
  `select "id", "document_id" as "documentId", "status", "ctx", "sessions", "duration_ms" as "durationMs", "started_at" as "startedAt", "timed_out" as "timedOut",
    "output", "error", "waiting" from "runs" where "id" = ?`,
);

export type RunResultFields = Pick<Run, 'id' | 'documentId' | 'status' | 'ctx' | 'sessions' | 'durationMs' | 'startedAt' | 'timedOut' | 'output' | 'error' | 'waiting'>;

/**
 * The fields of a run's answer, in one prepared read (the ORM's `findOne` of the whole record
 * costs the accepting process more than the rest of a queued run's answer). Undefined: no such
 * run. JSON columns come back parsed on PostgreSQL and as text on SQLite.
 */
export async function readRunResult(sql: PreparedStatements, runId: string): Promise<RunResultFields | undefined> {
  const row = await sql.first<Record<string, unknown>>(runResultStatement, [runId]);
  if (!row) return undefined;
  const parsed = (value: unknown): unknown => (sql.dialect === 'sqlite' && typeof value === 'string' ? JSON.parse(value) : (value ?? null));
  return {
    id: row['id'] as string,
    documentId: (row['documentId'] as string | null) ?? null,
    status: row['status'] as Run['status'],
    ctx: parsed(row['ctx']) as Run['ctx'],
    sessions: parsed(row['sessions']) as Run['sessions'],
    durationMs: row['durationMs'] === null || row['durationMs'] === undefined ? null : Number(row['durationMs']),
    startedAt: sqlDate(row['startedAt']),
    timedOut: sqlBool(row['timedOut']),
    output: parsed(row['output']) as Run['output'],
    error: parsed(row['error']) as Run['error'],
    waiting: parsed(row['waiting']) as Run['waiting'],
  };
}
