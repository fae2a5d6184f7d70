import type { BlockSession, CtxEntry, RunStatus, RunWaiting } from '../entities/run.entity.js';
import type { RunResultView } from '../schemas.js';
import { publicSession } from './run-engine.js';

/** The 200 body of a run with `stream: false`: declared by `runResultSchema`. */
export type RunResult = RunResultView;

/** What a run's result is made of, whether read from its record or from the state it ended with. */
export interface RunResultSource {
  id: string;
  documentId: string | null;
  status: RunStatus;
  ctx: CtxEntry[];
  sessions: BlockSession[];
  durationMs: number;
  timedOut: boolean;
  output: unknown;
  error: { code: string; message: string } | null;
  waiting: RunWaiting | null;
}

/** The one place a run's result is built (from its stored record, an attempt's end, or a debug run). */
export function runResult(source: RunResultSource): RunResult {
  return {
    runId: source.id,
    documentId: source.documentId,
    status: source.status,
    globalCtx: source.ctx,
    sessions: source.sessions.map(publicSession),
    duration: source.durationMs,
    timedOut: source.timedOut,
    output: source.output ?? null,
    error: source.error,
    waiting: source.waiting,
  };
}
