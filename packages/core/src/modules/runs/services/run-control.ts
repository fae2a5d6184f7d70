import type { EntityManager } from '@mikro-orm/core';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { DocumentService } from '../../documents/index.js';
import { Run, terminalRunStatuses } from '../entities/run.entity.js';
import { runErrors } from '../errors.js';
import { RunControlChannel } from './run-control-channel.js';
import { activeStatuses, type RunContext } from './run-context.js';
import type { RunReader } from './run-reader.js';
import type { RunRecorder } from './run-recorder.js';
import { waitsForBudget, type RunBudgets } from './run-budget.js';

/** Steering stored runs from outside: resume a waiting run, cancel, and queue again the runs whose process went away. */
export class RunControl {
  constructor(
    private readonly ctx: RunContext,
    private readonly recorder: RunRecorder,
    private readonly reader: RunReader,
    private readonly documents: DocumentService,
    private readonly budgets: RunBudgets,
  ) {}

  /**
   * Gives the answer to the ask block a run waits at and queues the continuation (answers at
   * once): answers the run's id and the status the resume left it in (`queued`), not a read of the
   * run after it (the continuation may be running by then).
   */
  async resume(em: EntityManager, principal: Principal, documentId: string, runId: string, answer: unknown): Promise<{ id: string; status: 'queued' }> {
    await this.documents.requireDocument(em, documentId, principal, 'execute');
    const run = await this.reader.requireRun(em, documentId, runId);
    if (run.status !== 'waiting') throw runErrors.notWaiting(run.status);
    // A budget wait is not a question: raising the budget resumes it.
    if (waitsForBudget(run)) throw runErrors.waitingForBudget();
    const now = this.ctx.clock.now();
    // Not once a cancel was asked for: the cancel ends the waiting run (a continuation queued now
    // would race it for the run).
    const changed = await em.nativeUpdate(
      Run,
      { id: run.id, status: 'waiting', cancelRequested: false },
      { status: 'queued', answer: answer === undefined ? null : answer, heartbeatAt: now, deadlineAt: new Date(now.getTime() + run.timeoutSeconds * 1000), updatedAt: now },
    );
    if (!changed) {
      const current = await em.findOne(Run, { id: run.id }, { refresh: true, fields: ['status', 'cancelRequested'] });
      throw runErrors.notWaiting(current?.cancelRequested && !terminalRunStatuses.has(current.status) ? 'being cancelled' : (current?.status ?? 'gone'));
    }
    await this.ctx.queue.enqueue({ runId: run.id, teamId: run.teamId ?? run.userId });
    return { id: run.id, status: 'queued' };
  }

  /**
   * Sets the budget of a run (not finished, not a sub-workflow's, not waiting for an answer): null
   * clears it. Raising or clearing it queues again the runs under it that wait for it (its
   * sub-workflows' runs first, then it). Lowering it pauses the run at its next model call that
   * would exceed it.
   */
  async setBudget(em: EntityManager, principal: Principal, documentId: string, runId: string, credits: number | null): Promise<{ run: Run; resumed: string[] }> {
    await this.documents.requireDocument(em, documentId, principal, 'write');
    const run = await this.reader.requireRun(em, documentId, runId);
    if (terminalRunStatuses.has(run.status)) throw runErrors.alreadyFinished(run.status);
    if (run.parentRunId) throw runErrors.budgetOfParent(run.budgetRootId ?? run.parentRunId);
    if (run.status === 'waiting' && !waitsForBudget(run)) throw runErrors.waitingForInput();
    const before = run.budgetCredits;
    await em.nativeUpdate(Run, { id: run.id }, { budgetCredits: credits, updatedAt: this.ctx.clock.now() });
    run.budgetCredits = credits;
    const raised = credits === null || (before !== null && credits > before);
    const resumed = raised ? await this.budgets.resume(em, await this.budgets.waitingUnderRun(em, run)) : [];
    return { run: await em.findOneOrFail(Run, { id: run.id }, { refresh: true }), resumed };
  }

  /** Resumes the runs of a deployment that wait for its budget, when it was raised or cleared (`before`, `after`: the budgets). */
  async deploymentBudgetChanged(blockId: string, before: number | null, after: number | null): Promise<string[]> {
    if (before === null || (after !== null && after <= before)) return [];
    const em = this.ctx.fork();
    return this.budgets.resume(em, await this.budgets.waitingOnDeployment(em, blockId));
  }

  /** Stops a run: a queued or waiting run ends at once; an executing one is told to stop (in whichever process runs it). */
  async cancel(em: EntityManager, principal: Principal, documentId: string, runId: string): Promise<Run> {
    await this.documents.requireDocument(em, documentId, principal, 'execute');
    const run = await this.reader.requireRun(em, documentId, runId);
    if (terminalRunStatuses.has(run.status)) throw runErrors.alreadyFinished(run.status);
    await em.nativeUpdate(Run, { id: run.id }, { cancelRequested: true, updatedAt: this.ctx.clock.now() });
    if (run.status === 'running') await RunControlChannel.cancel(this.ctx.pubsub, run.id);
    else await this.recorder.endWithoutEngine(run, 'cancelled');
    return em.findOneOrFail(Run, { id: run.id }, { refresh: true });
  }

  /**
   * Stops a run without a permission check (the runtime's own cancel: a sub-workflow's run whose
   * parent was cancelled or timed out). Nothing happens to a finished or unknown run.
   */
  async cancelById(runId: string): Promise<void> {
    const em = this.ctx.fork();
    const run = await em.findOne(Run, { id: runId });
    if (!run || terminalRunStatuses.has(run.status)) return;
    await em.nativeUpdate(Run, { id: run.id }, { cancelRequested: true, updatedAt: this.ctx.clock.now() });
    if (run.status === 'running') await RunControlChannel.cancel(this.ctx.pubsub, run.id);
    else await this.recorder.endWithoutEngine(run, 'cancelled');
  }

  /**
   * Finds runs whose executing process went away (queued or running, no heartbeat for
   * `staleAfterSeconds`) and queues them again: the next attempt continues from the last
   * completed block. A run out of attempts fails with `run_error` `worker_lost`.
   */
  async recoverLostRuns(): Promise<number> {
    const em = this.ctx.fork();
    const staleBefore = new Date(this.ctx.clock.nowMs() - this.ctx.config.staleAfterSeconds * 1000);
    const lost = await em.find(Run, { status: { $in: activeStatuses }, heartbeatAt: { $lt: staleBefore } }, { limit: 100, orderBy: { heartbeatAt: 'asc' } });
    let count = 0;
    for (const run of lost) {
      const claimed = await em.nativeUpdate(Run, { id: run.id, heartbeatAt: run.heartbeatAt }, { heartbeatAt: this.ctx.clock.now() });
      if (!claimed) continue;
      count++;
      if (run.attempt >= this.ctx.config.maxAttempts) await this.recorder.endWithoutEngine(run, 'failed');
      else await this.ctx.queue.enqueue({ runId: run.id, teamId: run.teamId ?? run.userId });
    }
    return count;
  }
}
