import { TrellisError } from '../../../../kernel/errors.js';
import type { AiUsage } from '../../../../ports/ai-provider.js';
import { expressionFailure, ExpressionError, holds, type CompiledExpression } from '../../blocks/control/expression.js';
import { isControlKind } from '../../blocks/control/nodes.js';
import type { BlockExecutor, BlockIo } from '../../blocks/executor.js';
import { executeWithPolicy } from '../../blocks/failure-policy.js';
import { asText } from '../../blocks/template.js';
import type { BlockKind, WorkflowBlock } from '../../blocks/workflow.js';
import type { BlockSession, RunWaiting } from '../../entities/run.entity.js';
import { runFailure } from '../../errors.js';
import type { RunEventSink } from '../event-sink.js';
import { splitJsonStrings } from '../event-text.js';
import type { RunState } from '../run-state.js';
import type { RunOutput } from './output-meter.js';
import type { Scope } from './scope.js';

/** Thrown by `EngineRun.save` and let through every block: the attempt must end (run-engine.ts). */
export class AttemptEnded extends Error {
  constructor(override readonly cause: unknown) {
    super('the attempt ended');
  }
}

/** What the blocks of one execution share. */
export interface EngineRun {
  state: RunState;
  sink: RunEventSink;
  /** Aborted on timeout, cancel or shutdown. */
  signal: AbortSignal;
  executors: ReadonlyMap<BlockKind, BlockExecutor>;
  output: RunOutput;
  /** Runs a control block (control.ts): its output, or throws its failure. */
  runContainer(run: EngineRun, block: WorkflowBlock, scope: Scope, signal: AbortSignal): Promise<unknown>;
  /** Writes a checkpoint (one at a time; calls while one waits share it). Throws `AttemptEnded`. */
  save(): Promise<void>;
  /** A tool result an earlier attempt recorded in the run's log under an idempotency key. */
  recall?: BlockIo['recall'];
  /** Who the blocks' model calls are recorded for. */
  modelCalls?: BlockIo['modelCalls'];
  /**
   * Budgets (run-engine.ts): `check` before a model call (absent: the run has no budget), `pause`
   * for a wait a block found (a sub-workflow's run waiting for a budget). Both stop the run and
   * throw when it must wait.
   */
  budget?: {
    check?: (blockId: string, path: string | undefined, modelId: string) => Promise<void>;
    pause(blockId: string, path: string | undefined, waiting: Omit<RunWaiting, 'blockId'>): never;
  };
}

/** How a block's execution ended. `value`: its output (null when skipped or failed and continued). */
export type StepResult = { kind: 'done'; value: unknown } | { kind: 'wait' } | { kind: 'stop' } | { kind: 'failed'; error: { code: string; message: string } };

const errorOf = (error: unknown): { code: string; message: string } => {
  if (error instanceof TrellisError) return { code: error.code, message: error.message };
  return { code: 'block_failed', message: error instanceof Error ? error.message : String(error) };
};

/** The variables of an expression: the scope's names and `inputs`. */
export function evaluate(run: EngineRun, expression: CompiledExpression, scope: Scope, attr: string, extra?: Record<string, unknown>): unknown {
  const vars = new Map(scope.vars);
  vars.set('inputs', run.state.inputs);
  for (const [key, value] of Object.entries(extra ?? {})) vars.set(key, value);
  try {
    return expression.evaluate(vars);
  } catch (error) {
    if (error instanceof ExpressionError) throw expressionFailure(error, attr);
    throw error;
  }
}


/**
 * Executes one block in a scope, recording it in `session` and emitting the spec's events (with
 * the scope's where-fields added): its `when` first (false: the block is skipped, with no
 * events), then its executor, or the container runner for a control block.
 */
export async function step(run: EngineRun, block: WorkflowBlock, session: BlockSession, scope: Scope, signal: AbortSignal = run.signal): Promise<StepResult> {
  const { state, sink } = run;
  const where = scope.where;
  const started = Date.now();
  const begin = () => {
    session.status = 'running';
    session.startedAt = new Date(started).toISOString();
    delete session.error;
    sink.emit('block_start', { blockId: block.id, blockType: block.type, blockName: block.name, ...where });
  };
  const meter = run.output.block();
  const io: BlockIo = {
    runId: state.id,
    userId: state.userId,
    tenant: state.teamId ?? state.userId,
    signal,
    ctx: scope.vars,
    inputs: state.inputs,
    remainingMs: () => Math.max(0, state.deadline - Date.now()),
    // Where the block runs, for idempotency keys: a block inside a container once per iteration or branch.
    path: where.path === undefined ? block.id : `${where.path}/${block.id}`,
    iteration: where.iteration ?? 0,
    recall: run.recall ?? (async () => undefined),
    modelCalls: run.modelCalls,
    beforeModelCall: run.budget?.check && ((modelId) => run.budget!.check!(block.id, where.path === undefined ? block.id : `${where.path}/${block.id}`, modelId)),
    waitForBudget: run.budget && ((waiting) => run.budget!.pause(block.id, where.path === undefined ? block.id : `${where.path}/${block.id}`, waiting)),
    chunk: (delta) => {
      meter.charge(Buffer.byteLength(delta));
      if (where.path === undefined) sink.emitChunk(block.id, delta);
      else sink.emit('block_chunk', { blockId: block.id, delta, ...where });
      return sink.backlog();
    },
    chunks: (json) => {
      // A block at the top level, whose batch passes no quota: its events are written around the
      // deltas' JSON as it came. Otherwise (inside a container, near a quota) one at a time.
      const split = where.path === undefined ? splitJsonStrings(json) : null;
      if (split && meter.chargeAll(split.bodies.length, split.bytes)) {
        sink.emitChunkBodies(block.id, split.bodies);
        return sink.backlog();
      }
      let behind: Promise<void> | undefined;
      // A sandbox of another make may send values other than strings: each becomes its JSON text.
      for (const delta of JSON.parse(json) as unknown[]) behind = io.chunk(typeof delta === 'string' ? delta : JSON.stringify(delta)) ?? behind;
      return behind;
    },
    toolStart: (toolCallId, toolName) => {
      meter.charge(Buffer.byteLength(toolName));
      sink.emit('tool_start', { blockId: block.id, toolCallId, toolName, ...where });
      return sink.backlog();
    },
    toolResult: (toolCallId, result, idempotencyKey) => {
      meter.charge(Buffer.byteLength(JSON.stringify(result ?? null)));
      sink.emit('tool_result', { blockId: block.id, toolCallId, result: result ?? null, ...(idempotencyKey ? { idempotencyKey } : {}), ...where });
      // A keyed result is stored before the block goes on: a later attempt answers the call from the log.
      return idempotencyKey ? sink.flush() : sink.backlog();
    },
    modelUsage: (modelId: string, usage: AiUsage) => {
      const entry = (state.usage.models[modelId] ??= { inputTokens: 0, outputTokens: 0, calls: 0 });
      entry.inputTokens += usage.inputTokens;
      entry.outputTokens += usage.outputTokens;
      entry.calls += 1;
    },
    sandboxTime: (ms) => void (state.usage.sandboxMs += Math.round(ms)),
    usage: () => state.usage.models,
  };
  const finish = () => {
    session.finishedAt = new Date().toISOString();
    session.durationMs = Date.now() - started;
  };
  let begun = false;
  try {
    if (block.when && !holds(evaluate(run, block.when, scope, 'when'))) {
      session.status = 'skipped';
      return { kind: 'done', value: null };
    }
    begin();
    begun = true;
    let outcome: Awaited<ReturnType<BlockExecutor['execute']>>;
    if (isControlKind(block.kind)) {
      outcome = { output: await run.runContainer(run, block, scope, signal) };
    } else {
      const executor = run.executors.get(block.kind);
      if (!executor) throw new TrellisError('not_implemented', 'block_kind_unsupported', `No executor handles ${block.kind} blocks.`);
      outcome = await executeWithPolicy(executor, block, io, { session, emit: (type, data) => sink.emit(type, { ...data, ...where }) });
    }
    if (signal.aborted) throw signal.reason;
    // A quota struck and the executor went on regardless: the block fails all the same.
    if (meter.exceeded) throw meter.exceeded;
    if ('wait' in outcome) {
      session.status = 'waiting';
      state.status = 'waiting';
      state.waiting = { blockId: block.id, question: outcome.wait.question };
      return { kind: 'wait' };
    }
    finish();
    session.status = 'completed';
    session.output = asText(outcome.output);
    if (outcome.console?.length) session.console = outcome.console;
    sink.emit('block_complete', { blockId: block.id, output: outcome.output ?? null, ...where });
    sink.emit('block_end', { blockId: block.id, ...where });
    return { kind: 'done', value: outcome.output ?? null };
  } catch (error) {
    if (error instanceof AttemptEnded) throw error;
    finish();
    if (signal.aborted && signal.reason instanceof TrellisError && signal.reason.code === 'run_interrupted') {
      // The process is stopping: the block runs again in the next attempt, from this checkpoint.
      session.status = 'pending';
      return { kind: 'stop' };
    }
    if (!begun) begin();
    const failure = signal.aborted ? errorOf(signal.reason) : errorOf(meter.exceeded ?? error);
    if (signal.aborted) failure.message = signal.reason instanceof TrellisError && signal.reason.code === runFailure.timeout.code ? runFailure.timeout.message : failure.message;
    session.status = 'failed';
    session.error = failure;
    const position = error instanceof TrellisError && typeof error.extra?.position === 'number' ? { position: error.extra.position } : {};
    sink.emit('block_error', { blockId: block.id, error: failure.message, code: failure.code, ...position, ...where });
    sink.emit('block_end', { blockId: block.id, ...where });
    if (run.signal.aborted) return { kind: 'stop' };
    if ((block.onError ?? state.onError) === 'continue') return { kind: 'done', value: null };
    return { kind: 'failed', error: failure };
  }
}
