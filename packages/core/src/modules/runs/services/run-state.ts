import type { WorkflowBlock } from '../blocks/workflow.js';
import type { BlockSession, CtxEntry, RunStatus, RunUsage, RunWaiting } from '../entities/run.entity.js';
import type { RunSessionView } from '../schemas.js';

/** The in-memory state of an executing run (a stored run's checkpoint, or a debug run). */
export interface RunState {
  id: string;
  documentId: string | null;
  userId: string;
  /** The team the run bills to: its tenant in shared resources (the user's when absent). */
  teamId?: string | null;
  status: RunStatus;
  inputs: Record<string, unknown>;
  blocks: WorkflowBlock[];
  cursor: number;
  sessions: BlockSession[];
  ctx: CtxEntry[];
  usage: RunUsage;
  onError: 'stop' | 'continue';
  /** Epoch ms of the first start, and of the deadline. */
  startedAt: number;
  deadline: number;
  timedOut: boolean;
  waiting: RunWaiting | null;
  /** The answer of a resume, consumed by the continuation. */
  answer: unknown;
  hasAnswer: boolean;
  output: unknown;
  error: { code: string; message: string } | null;
  /** True until `run_start` was emitted. */
  fresh: boolean;
}

const initialSessions = (blocks: readonly WorkflowBlock[]): BlockSession[] =>
  blocks.filter((b) => b.kind !== 'text').map((b) => ({ blockId: b.id, blockType: b.type, blockName: b.name, status: 'pending', output: '' }));

/** The first state of a run: every executable block pending, text blocks already in the context. */
export function initialState(input: { id: string; documentId: string | null; userId: string; blocks: WorkflowBlock[]; inputs: Record<string, unknown>; onError: 'stop' | 'continue'; startedAt: number; timeoutSeconds: number }): RunState {
  return {
    id: input.id,
    documentId: input.documentId,
    userId: input.userId,
    status: 'queued',
    inputs: input.inputs,
    blocks: input.blocks,
    cursor: 0,
    sessions: initialSessions(input.blocks),
    ctx: input.blocks.filter((b) => b.kind === 'text').map((b) => ({ name: b.name, blockId: b.id, blockType: b.type, value: b.text })),
    usage: { models: {}, sandboxMs: 0 },
    onError: input.onError,
    startedAt: input.startedAt,
    deadline: input.startedAt + input.timeoutSeconds * 1000,
    timedOut: false,
    waiting: null,
    answer: null,
    hasAnswer: false,
    output: null,
    error: null,
    fresh: true,
  };
}

/** The run's output: the output block's value (an object by name when there are several), else the last block's. */
export function outputOf(state: RunState): unknown {
  const outputs = state.blocks.filter((b) => b.kind === 'output');
  const value = (name: string) => state.ctx.find((entry) => entry.name === name)?.value ?? null;
  if (outputs.length === 1) return value(outputs[0]!.name);
  if (outputs.length > 1) return Object.fromEntries(outputs.map((b) => [b.name, value(b.name)]));
  const last = [...state.ctx].reverse().find((entry) => state.blocks.some((b) => b.id === entry.blockId && b.kind !== 'text'));
  return last?.value ?? null;
}

/**
 * The fields of `run_complete`. `durationMs` is the duration the run's record stores (taken once,
 * so the event and the record agree); without it, the time since the run started.
 */
export function completion(state: RunState, durationMs: number = Date.now() - state.startedAt): Record<string, unknown> {
  return {
    runId: state.id,
    globalCtx: state.ctx,
    sessions: state.sessions.map(publicSession),
    completedBlocks: state.sessions.filter((s) => s.status === 'completed').length,
    duration: durationMs,
    timedOut: state.timedOut,
  };
}

/** The spec's Run session fields (plus error when the block failed). */
export function publicSession(session: BlockSession): RunSessionView {
  return {
    blockId: session.blockId,
    blockType: session.blockType,
    blockName: session.blockName,
    status: session.status,
    output: session.output,
    ...(session.error ? { error: session.error } : {}),
    ...(session.console?.length ? { console: session.console } : {}),
    ...(session.path !== undefined ? { path: session.path } : {}),
    ...(session.iteration !== undefined ? { iteration: session.iteration } : {}),
    ...(session.branch !== undefined ? { branch: session.branch } : {}),
    ...(session.attempts?.length ? { attempts: session.attempts } : {}),
    ...(session.fallback ? { fallback: true } : {}),
    ...(session.childRunId ? { childRunId: session.childRunId } : {}),
  };
}
