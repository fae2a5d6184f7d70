import type { EntityManager } from '@mikro-orm/core';
import { sqlRowTable, sqlStatement, type PreparedStatements, type RowSink, type SqlValue } from '../../ports/database.js';
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

const finishRunStatement = sqlStatement(
  'runs.finish_run',
  `update "runs" set "cursor" = ?, "sessions" = ?, "ctx" = ?, "usage" = ?, "status" = ?, "waiting" = null, "output" = ?, "error" = ?, "timed_out" = ?,
    "used_credits" = ?, "finished_at" = ?, "duration_ms" = ?, "updated_at" = ?
  where "id" = ? and "attempt" = ?`,
);

/** The final record of a run, written by the attempt that executed it: the number of rows changed (0 when another attempt took it over). */
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
