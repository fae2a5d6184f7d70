import { TrellisError } from '../../../../kernel/errors.js';
import { holds } from '../../blocks/control/expression.js';
import { MAX_ITERATIONS } from '../../blocks/control/nodes.js';
import type { WorkflowBlock } from '../../blocks/workflow.js';
import type { BlockSession } from '../../entities/run.entity.js';
import { childScope, type Scope, type Where } from './scope.js';
import { evaluate, step, type EngineRun, type StepResult } from './step.js';

/*
 * The control blocks (blocks/control/nodes.ts). Each iteration or branch runs its child blocks in
 * order in its own scope; its result is its last block's output. Every child's execution has its
 * own session entry (with `path`, `iteration`, `branch`), and a child that is done keeps its output
 * there (`value`), written with the checkpoint that follows every child that is not replayable: a
 * continuation of the run (a lost worker) finds the children done in each iteration and branch
 * and does not run them again.
 */

type SequenceResult = Exclude<StepResult, { kind: 'wait' }>;

/** The session entry of `block` at `where`: the one an earlier attempt recorded, or a new one. */
function sessionFor(run: EngineRun, block: WorkflowBlock, where: Where): BlockSession {
  const found = run.state.sessions.find((s) => s.blockId === block.id && s.path === where.path);
  if (found) return found;
  const session: BlockSession = { blockId: block.id, blockType: block.type, blockName: block.name, status: 'pending', output: '', ...where };
  run.state.sessions.push(session);
  return session;
}

/** Runs `blocks` in order in `scope`, each seeing the outputs of those before it. */
async function sequence(run: EngineRun, blocks: readonly WorkflowBlock[], scope: Scope, signal: AbortSignal): Promise<SequenceResult> {
  let last: unknown = null;
  for (const block of blocks) {
    const session = sessionFor(run, block, scope.where);
    let value: unknown;
    if ('value' in session) {
      // Done in an earlier attempt.
      value = session.value;
    } else {
      if (signal.aborted) return { kind: 'stop' };
      const result = await step(run, block, session, scope, signal);
      if (result.kind === 'wait') throw new TrellisError('bad_request', 'invalid_workflow', 'A block inside a container cannot wait for an answer.');
      if (result.kind !== 'done') return result;
      session.value = result.value;
      if (!block.replayable && session.status !== 'skipped') await run.save();
      value = result.value;
    }
    if (block.kind !== 'text') scope.vars.set(block.name, value);
    last = value;
  }
  return { kind: 'done', value: last };
}

const failed = (block: WorkflowBlock, where: string, error: { code: string; message: string }) =>
  new TrellisError('unavailable', error.code, `${block.name} ${where}: ${error.message}`);

/**
 * Runs `tasks` (indexes 0..count-1) at most `limit` at once. The first that fails (or throws)
 * aborts the others through the returned signal's controller; tasks not started do not start.
 */
async function pool(count: number, limit: number, signal: AbortSignal, task: (index: number, signal: AbortSignal) => Promise<SequenceResult>): Promise<{ failure: { index: number; error: { code: string; message: string } } | null }> {
  const group = new AbortController();
  const groupSignal = AbortSignal.any([signal, group.signal]);
  let next = 0;
  let failure: { index: number; error: { code: string; message: string } } | null = null;
  let thrown: unknown = null;
  const worker = async () => {
    while (next < count && !groupSignal.aborted) {
      const index = next++;
      try {
        const result = await task(index, groupSignal);
        if (result.kind === 'failed' && !failure) {
          failure = { index, error: result.error };
          group.abort(new TrellisError('unavailable', 'sibling_failed', 'Stopped: another iteration or branch of its block failed.'));
        }
      } catch (error) {
        thrown ??= error;
        group.abort(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  if (thrown) throw thrown;
  return { failure };
}

async function loop(run: EngineRun, block: WorkflowBlock, scope: Scope, signal: AbortSignal): Promise<unknown> {
  const items = evaluate(run, block.expression!, scope, 'items');
  if (!Array.isArray(items)) throw new TrellisError('bad_request', 'expression_failed', `items: the expression must give a list (it gave ${items === null ? 'null' : typeof items})`, { extra: { position: 0 } });
  if (items.length > MAX_ITERATIONS) throw new TrellisError('bad_request', 'expression_failed', `items: a loop runs at most ${MAX_ITERATIONS} iterations (the list has ${items.length})`, { extra: { position: 0 } });
  const results: unknown[] = new Array<unknown>(items.length).fill(null);
  const concurrency = typeof block.attrs.concurrency === 'number' ? block.attrs.concurrency : 1;
  const { failure } = await pool(items.length, concurrency, signal, async (index, groupSignal) => {
    const inner = childScope(scope, block.name, { iteration: index }, { item: items[index], index });
    const result = await sequence(run, block.children!, inner, groupSignal);
    if (result.kind === 'done') results[index] = result.value;
    return result;
  });
  if (signal.aborted) throw signal.reason;
  if (failure) throw failed(block, `iteration ${failure.index}`, failure.error);
  return results;
}

async function repeat(run: EngineRun, block: WorkflowBlock, scope: Scope, signal: AbortSignal): Promise<unknown> {
  const max = block.attrs.maxIterations as number;
  let previous: unknown = null;
  for (let index = 0; index < max; index++) {
    const inner = childScope(scope, block.name, { iteration: index }, { index, previous });
    const result = await sequence(run, block.children!, inner, signal);
    if (result.kind === 'stop') throw signal.reason;
    if (result.kind === 'failed') throw failed(block, `iteration ${index}`, result.error);
    previous = result.value;
    if (holds(evaluate(run, block.expression!, inner, 'until', { output: result.value }))) break;
  }
  return previous;
}

async function branch(run: EngineRun, block: WorkflowBlock, scope: Scope, signal: AbortSignal): Promise<unknown> {
  for (const arm of block.arms!) {
    if (arm.when && !holds(evaluate(run, arm.when, scope, `case ${arm.name}: when`))) continue;
    const result = await sequence(run, arm.blocks, childScope(scope, block.name, { branch: arm.name }), signal);
    if (result.kind === 'stop') throw signal.reason;
    if (result.kind === 'failed') throw failed(block, `case ${arm.name}`, result.error);
    return result.value;
  }
  return null;
}

async function parallel(run: EngineRun, block: WorkflowBlock, scope: Scope, signal: AbortSignal): Promise<unknown> {
  const arms = block.arms!;
  const results: Record<string, unknown> = Object.fromEntries(arms.map((arm) => [arm.name, null]));
  const { failure } = await pool(arms.length, arms.length, signal, async (index, groupSignal) => {
    const arm = arms[index]!;
    const result = await sequence(run, arm.blocks, childScope(scope, block.name, { branch: arm.name }), groupSignal);
    if (result.kind === 'done') results[arm.name] = result.value;
    // A branch that says onError continue fails alone: its output is null, the others go on.
    if (result.kind === 'failed' && arm.onError === 'continue') return { kind: 'done', value: null };
    return result;
  });
  if (signal.aborted) throw signal.reason;
  if (failure) throw failed(block, `branch ${arms[failure.index]!.name}`, failure.error);
  return results;
}

const runners = { loop, repeat, branch, parallel } as const;

/** Runs a control block: its output, or throws its failure (`EngineRun.runContainer`). */
export function runControl(run: EngineRun, block: WorkflowBlock, scope: Scope, signal: AbortSignal): Promise<unknown> {
  return runners[block.kind as keyof typeof runners](run, block, scope, signal);
}
