import type { EntityManager } from '@mikro-orm/core';
import { sqlBool, sqlDate, sqlRowTable, sqlStatement, type PreparedStatements, type RowSink, type SqlValue } from '../../ports/database.js';
import type { Run } from './entities/run.entity.js';

/**
 * The runs module's hot-path statements (prepared once, see PreparedStatements): a run's record
 * inserted, and its final record written. Everything else goes through the ORM. JSON columns are
 * bound as JSON text (SQL NULL for null), as the ORM's json type stores them.
 */

const json = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));

/** The columns of `runs` in insert order, with how a `Run` gives each one's value. */
const runColumns: ReadonlyArray<readonly [string, (run: Run) => SqlValue]> = [
  ['id', (r) => r.id],
  ['document_id', (r) => r.documentId],
  ['project_id', (r) => r.projectId],
  ['team_id', (r) => r.teamId],
  ['user_id', (r) => r.userId],
  ['source', (r) => r.source],
  ['version', (r) => r.version],
  ['status', (r) => r.status],
  ['inputs', (r) => json(r.inputs)],
  ['content', (r) => json(r.content)],
  ['cursor', (r) => r.cursor],
  ['sessions', (r) => json(r.sessions)],
  ['ctx', (r) => json(r.ctx)],
  ['output', (r) => json(r.output)],
  ['error', (r) => json(r.error)],
  ['usage', (r) => json(r.usage)],
  ['on_error', (r) => r.onError],
  ['timeout_seconds', (r) => r.timeoutSeconds],
  ['timed_out', (r) => r.timedOut],
  ['reservation_id', (r) => r.reservationId],
  ['reserved_credits', (r) => r.reservedCredits],
  ['used_credits', (r) => r.usedCredits],
  ['seq_ceiling', (r) => r.seqCeiling],
  ['attempt', (r) => r.attempt],
  ['waiting', (r) => json(r.waiting)],
  ['answer', (r) => json(r.answer)],
  ['cancel_requested', (r) => r.cancelRequested],
  ['heartbeat_at', (r) => r.heartbeatAt],
  ['started_at', (r) => r.startedAt],
  ['deadline_at', (r) => r.deadlineAt],
  ['finished_at', (r) => r.finishedAt],
  ['duration_ms', (r) => r.durationMs],
  ['idempotency_key', (r) => r.idempotencyKey ?? null],
  ['idempotency_scope', (r) => r.idempotencyScope ?? null],
  ['request_hash', (r) => r.requestHash ?? null],
  ['parent_run_id', (r) => r.parentRunId ?? null],
  ['parent_block_id', (r) => r.parentBlockId ?? null],
  ['depth', (r) => r.depth ?? 0],
  ['budget_credits', (r) => r.budgetCredits ?? null],
  ['budget_root_id', (r) => r.budgetRootId ?? null],
  ['created_at', (r) => r.createdAt],
  ['updated_at', (r) => r.updatedAt],
];

/** Rows of `runs` (after the credit reservations a run's row refers to). */
const runRows = sqlRowTable('runs.insert_runs', `"runs" (${runColumns.map(([column]) => `"${column}"`).join(', ')})`, `(${runColumns.map(() => '?').join(', ')})`, 3);

/** Inserts a run's record as it is (every column): at once, or with the other rows of its group commit. */
export async function insertRun(rows: RowSink, em: EntityManager, run: Run): Promise<void> {
  await rows.insertRow(
    em,
    runRows,
    runColumns.map(([, value]) => value(run)),
  );
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

const finishRunStatement = sqlStatement(
  'runs.finish_run',
  `update "runs" set "cursor" = ?, "sessions" = ?, "ctx" = ?, "usage" = ?, "status" = ?, "waiting" = null, "output" = ?, "error" = ?, "timed_out" = ?,
    "used_credits" = ?, "finished_at" = ?, "duration_ms" = ?, "updated_at" = ?
  where "id" = ? and "attempt" = ? and "finished_at" is null`,
);

/** The final record of a run, written once by the attempt that executed it: the number of rows changed (0 when another attempt took it over, or it was written already). */
export function finishRun(
  sql: PreparedStatements,
  em: EntityManager,
  fence: { id: string; attempt: number },
  final: Pick<Run, 'cursor' | 'sessions' | 'ctx' | 'usage' | 'status' | 'output' | 'error' | 'timedOut' | 'usedCredits' | 'finishedAt' | 'durationMs' | 'updatedAt'>,
): Promise<number> {
  return sql.run(
    finishRunStatement,
    [
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
    ],
    em,
  );
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
