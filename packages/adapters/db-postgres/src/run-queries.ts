import { finishRunParams, finishRunStatement, runColumns, runValues, type Run, type RunColumnKind, type RunFinal, type SqlValue } from '@trellis/core';

/**
 * The run's two writes as CTEs of one statement (see `PgRunStore`), built from core's description
 * of the `runs` table (`runColumns`, `finishRunStatement`): the columns and the final record's
 * statement stay defined once, in the runs module, and only their PostgreSQL form lives here.
 */

/** The type each kind of column is cast to (see `insertRunWhenPg`). */
const pgTypes: Record<RunColumnKind, string> = { json: 'json', date: 'timestamptz', bool: 'boolean', int: 'int', text: 'text', uuid: 'uuid' };

/**
 * A CTE named `name` that inserts a run's record (every column) when the CTE `when` has a row
 * (`insert ... select` cannot infer its placeholders' types: each is cast), and its values.
 */
export function insertRunWhenPg(name: string, when: string, run: Run): { text: string; params: SqlValue[] } {
  const text = `"${name}" as (
    insert into "runs" (${runColumns.map(([column]) => `"${column}"`).join(', ')})
    select ${runColumns.map(([, , kind]) => `?::${pgTypes[kind]}`).join(', ')} where exists (select 1 from "${when}")
    returning "id"
  )`;
  return { text, params: runValues(run) };
}

/** A CTE named `name` that writes the final record as core's `finishRunStatement` does and returns the run's id (no row: nothing written), and its values. */
export function finishRunPg(name: string, fence: { id: string; attempt: number }, final: RunFinal): { text: string; params: SqlValue[] } {
  return { text: `"${name}" as (${finishRunStatement.text} returning "id")`, params: finishRunParams(fence, final) };
}
