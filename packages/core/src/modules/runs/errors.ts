import { TrellisError, type ValidationIssue } from '../../kernel/errors.js';

/** The runs area's errors (catalogued in docs/errors.md). */
export const runErrors = {
  invalidInputs: (details: ValidationIssue[]) =>
    new TrellisError('bad_request', 'invalid_inputs', 'The inputs do not match the input blocks of this workflow.', { details }),
  invalidWorkflow: (details: ValidationIssue[]) =>
    new TrellisError('bad_request', 'invalid_workflow', 'The workflow cannot run: some blocks are not valid.', { details }),
  noTeam: () => new TrellisError('bad_request', 'no_team_associated', 'This run has no team to bill: the document\'s project belongs to no team.'),
  balanceCheckFailed: (cause: unknown) =>
    new TrellisError('internal', 'balance_check_failed', 'The credit balance could not be checked; the run was not started. Try again.', { cause, expose: true }),
  timeoutTooLarge: (requested: number, max: number) =>
    new TrellisError('bad_request', 'timeout_too_large', `The timeout may be at most ${max} seconds (asked for ${requested}).`, {
      details: [{ field: 'timeout', constraint: 'max', message: `must not exceed ${max}` }],
      extra: { max_timeout: max },
    }),
  runNotFound: () => new TrellisError('not_found', 'run_not_found', 'No such run of this document.'),
  notWaiting: (status: string) => new TrellisError('conflict', 'run_not_waiting', `The run is ${status}, not waiting for an answer.`),
  waitingForBudget: () =>
    new TrellisError('conflict', 'run_waiting_for_budget', 'The run waits for a budget, not for an answer: raise its budget (POST .../budget) or its deployment\'s to resume it.'),
  waitingForInput: () =>
    new TrellisError('conflict', 'run_waiting_for_input', 'The run waits for an answer to an ask block: answer it (POST .../resume) before changing its budget.'),
  budgetOfParent: (rootRunId: string) =>
    new TrellisError('conflict', 'run_budget_inherited', `This is a sub-workflow's run: the budget of run ${rootRunId} bounds it; set that one.`, { extra: { rootRunId } }),
  alreadyFinished: (status: string) => new TrellisError('conflict', 'run_finished', `The run already ended (${status}).`),
  /** A block's output (chunks, tool calls and results) passed a quota of `OutputLimits`: the block fails with it. */
  outputLimit: (what: string, limit: number, setting: string) =>
    new TrellisError('bad_request', 'output_limit_exceeded', `The ${what} passed its limit of ${limit.toLocaleString('en-US')} (runs.${setting}).`, { extra: { limit, setting: `runs.${setting}` } }),
  invalidIdempotencyKey: () =>
    new TrellisError('bad_request', 'invalid_idempotency_key', 'The Idempotency-Key header must be 1 to 255 visible ASCII characters (optionally a quoted string).', {
      details: [{ field: 'Idempotency-Key', constraint: 'format', message: 'must be 1 to 255 visible ASCII characters' }],
    }),
  idempotencyKeyReused: () =>
    new TrellisError('validation', 'idempotency_key_reused', 'This Idempotency-Key was used for another request (another body or endpoint); use a new key for a new run.'),
};

/** Codes a block or a run fails with (in `block_error` and `run_error` events). */
export const runFailure = {
  timeout: { code: 'run_timeout', message: 'The run passed its timeout and was stopped.' },
  cancelled: { code: 'run_cancelled', message: 'The run was cancelled.' },
  workerLost: { code: 'worker_lost', message: 'The process executing the run stopped, and the run used all its attempts.' },
};
