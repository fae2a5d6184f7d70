import { Type, type Static } from '@sinclair/typebox';
import { TrellisError } from '../../../kernel/errors.js';
import type { BlockSession } from '../entities/run.entity.js';
import { AttrsValidator, attrIssue } from './attrs.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from './executor.js';
import type { AttrIssue } from './kind.js';
import { renderDeep } from './template.js';
import type { WorkflowBlock } from './workflow.js';

/**
 * A block's failure policy: attrs any executable block may carry (docs/runs.md, "Failure policy").
 *
 * - `retry`: `{ maxAttempts, delayMs, factor, maxDelayMs, jitter }`: a failed attempt runs again
 *   after `delayMs * factor^(n-1)` (at most `maxDelayMs`; `jitter` takes a random part of it off),
 *   until `maxAttempts` attempts (the first one included) failed.
 * - `timeoutMs`: the time limit of one attempt (`block_timeout`); the run's timeout still bounds it.
 * - `fallback`: `{ value }`: once every attempt failed, the block completes with `value` (strings
 *   in it are templates, so `"{{ other }}"` is another block's output) instead of failing.
 */
export const FailurePolicyAttrs = Type.Object({
  retry: Type.Optional(
    Type.Object(
      {
        maxAttempts: Type.Integer({ minimum: 1, maximum: 20 }),
        delayMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000 })),
        factor: Type.Optional(Type.Number({ minimum: 1, maximum: 10 })),
        maxDelayMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000 })),
        jitter: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false, ...attrIssue('isRetryPolicy', 'must be { maxAttempts (1 to 20), delayMs, factor (1 to 10), maxDelayMs, jitter }') },
    ),
  ),
  timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400_000, ...attrIssue('isInt', 'must be a whole number of milliseconds, at least 1') })),
  fallback: Type.Optional(
    Type.Object({ value: Type.Unknown() }, { required: ['value'], additionalProperties: false, ...attrIssue('isFallback', 'must be { value } (the output to use once every attempt failed)') }),
  ),
});
export type FailurePolicyAttrs = Static<typeof FailurePolicyAttrs>;

const policyFields = ['retry', 'timeoutMs', 'fallback'] as const;
/** One validator per field: a failure deep inside one (a missing `maxAttempts`) is reported on that field. */
// Compiled by the first check, not at import.
let compiledValidators: Array<readonly [(typeof policyFields)[number], AttrsValidator]> | undefined;
const validators = () => (compiledValidators ??= policyFields.map((field) => [field, new AttrsValidator(Type.Object({ [field]: FailurePolicyAttrs.properties[field] }))] as const));

/** Issues of a block's failure-policy attrs (fields relative to the attrs: `retry`, `timeoutMs`, `fallback`). */
export function failurePolicyIssues(attrs: Readonly<Record<string, unknown>>): AttrIssue[] {
  const issues: AttrIssue[] = [];
  for (const [field, validator] of validators()) {
    if (attrs[field] === undefined) continue;
    const [issue] = validator.check({ [field]: attrs[field] });
    if (issue) issues.push(issue.field === field ? issue : { ...issue, field, ...declaredIssue(field) });
  }
  return issues;
}

/** The constraint and message a field declares (for a failure found inside it). */
function declaredIssue(field: (typeof policyFields)[number]): { constraint: string; message: string } {
  const schema = FailurePolicyAttrs.properties[field] as unknown as Record<string, unknown>;
  const inner = (schema.anyOf as Array<Record<string, unknown>> | undefined)?.[0] ?? schema;
  return { constraint: String(inner['x-constraint'] ?? schema['x-constraint'] ?? 'invalid'), message: String(inner['x-message'] ?? schema['x-message'] ?? 'is not valid') };
}

const DEFAULT_DELAY_MS = 1_000;
const DEFAULT_FACTOR = 2;
const DEFAULT_MAX_DELAY_MS = 30_000;

/** The wait before attempt `attempt + 1` after attempt `attempt` failed. */
export function retryDelay(retry: NonNullable<FailurePolicyAttrs['retry']>, attempt: number, random: () => number = Math.random): number {
  const base = retry.delayMs ?? DEFAULT_DELAY_MS;
  const delay = Math.min(base * (retry.factor ?? DEFAULT_FACTOR) ** (attempt - 1), retry.maxDelayMs ?? DEFAULT_MAX_DELAY_MS);
  // "Full jitter": anywhere between half the delay and the delay.
  return Math.round(retry.jitter ? delay / 2 + (random() * delay) / 2 : delay);
}

/** Where a block's retries are recorded: its session (`attempts`) and the run's event stream. */
export interface PolicyIo {
  session: BlockSession;
  emit(type: string, data: Record<string, unknown>): unknown;
}

const failureOf = (error: unknown): { code: string; message: string } =>
  error instanceof TrellisError ? { code: error.code, message: error.message } : { code: 'block_failed', message: error instanceof Error ? error.message : String(error) };

/** Failures a retry cannot help (the run's own stop, a quota on output that stays struck, a destination the guard refuses or a URL that is none). */
const RETRY_USELESS = new Set(['output_limit_exceeded', 'run_cancelled', 'run_timeout', 'run_interrupted', 'subworkflow_cycle', 'subworkflow_depth_exceeded', 'destination_refused', 'invalid_http_url']);

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** One attempt, bounded by `timeoutMs` (the executor's signal aborts with `block_timeout`; a late answer is not waited for). */
async function attemptOnce(executor: BlockExecutor, block: WorkflowBlock, io: BlockIo, attempt: number, timeoutMs: number | undefined): Promise<BlockOutcome> {
  if (timeoutMs === undefined) return executor.execute(block, attempt === 1 ? io : { ...io, attempt });
  const controller = new AbortController();
  const timeout = new TrellisError('unavailable', 'block_timeout', `The block did not finish within its timeoutMs (${timeoutMs} ms).`);
  const signal = AbortSignal.any([io.signal, controller.signal]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      controller.abort(timeout);
      reject(timeout);
    }, timeoutMs);
  });
  try {
    return await Promise.race([executor.execute(block, { ...io, signal, attempt }), expired]);
  } catch (error) {
    // The executor answers the abort with its own error (or the abort reason): the timeout it is.
    if (controller.signal.aborted && !io.signal.aborted) throw timeout;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Executes a block under its failure policy (`retry`, `timeoutMs`, `fallback` attrs). Without
 * them it is the executor's call alone. Each failed attempt that is retried emits `block_error`
 * with the added fields `attempt` and `retryInMs` (no `block_end`: the block goes on), and the
 * next attempt `block_start` with `attempt`; the session lists the failed attempts in `attempts`.
 * Once every attempt failed, a `fallback` gives the output (the session keeps the attempts and
 * says `fallback: true`), else the last error is thrown (the run's `onError` then decides). A
 * stop of the run (cancel, its timeout, shutdown) is never retried.
 */
export async function executeWithPolicy(executor: BlockExecutor, block: WorkflowBlock, io: BlockIo, policyIo: PolicyIo): Promise<BlockOutcome> {
  const attrs = block.attrs as FailurePolicyAttrs;
  if (attrs.retry === undefined && attrs.timeoutMs === undefined && attrs.fallback === undefined) return executor.execute(block, io);
  const maxAttempts = attrs.retry?.maxAttempts ?? 1;
  const { session } = policyIo;
  delete session.attempts;
  delete session.fallback;
  for (let attempt = 1; ; attempt++) {
    try {
      return await attemptOnce(executor, block, io, attempt, attrs.timeoutMs);
    } catch (error) {
      if (io.signal.aborted) throw error;
      const failure = failureOf(error);
      if (RETRY_USELESS.has(failure.code)) throw error;
      (session.attempts ??= []).push({ attempt, ...failure });
      if (attempt < maxAttempts) {
        const retryInMs = retryDelay(attrs.retry!, attempt);
        policyIo.emit('block_error', { blockId: block.id, error: failure.message, code: failure.code, attempt, retryInMs });
        await sleep(Math.min(retryInMs, io.remainingMs()), io.signal);
        policyIo.emit('block_start', { blockId: block.id, blockType: block.type, blockName: block.name, attempt: attempt + 1 });
        continue;
      }
      if (attrs.fallback) {
        session.fallback = true;
        policyIo.emit('block_error', { blockId: block.id, error: failure.message, code: failure.code, attempt, fallback: true });
        return { output: renderDeep(attrs.fallback.value, io.ctx) ?? null };
      }
      throw error;
    }
  }
}
