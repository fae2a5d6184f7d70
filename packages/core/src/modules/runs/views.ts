import type { Run } from './entities/run.entity.js';
import type { RunView } from './schemas.js';
import { publicSession } from './services/run-engine.js';

/** A run record as the API returns it. */
export function toRunView(run: Run): RunView {
  return {
    id: run.id,
    documentId: run.documentId,
    projectId: run.projectId,
    userId: run.userId,
    source: run.source,
    version: run.version,
    status: run.status,
    inputs: run.inputs,
    sessions: run.sessions.map(publicSession),
    globalCtx: run.ctx,
    output: run.output ?? null,
    error: run.error,
    waiting: run.waiting,
    usage: run.usage,
    reservedCredits: run.reservedCredits,
    usedCredits: run.usedCredits,
    timeout: run.timeoutSeconds,
    timedOut: run.timedOut,
    attempts: run.attempt,
    parentRunId: run.parentRunId ?? null,
    parentBlockId: run.parentBlockId ?? null,
    depth: run.depth ?? 0,
    budget: run.budgetCredits === null || run.budgetCredits === undefined ? null : { credits: run.budgetCredits },
    budgetRootRunId: run.budgetRootId ?? null,
    startedAt: run.startedAt?.toISOString() ?? null,
    finishedAt: run.finishedAt?.toISOString() ?? null,
    duration: run.durationMs,
    createdAt: run.createdAt.toISOString(),
    updatedAt: run.updatedAt.toISOString(),
  };
}
