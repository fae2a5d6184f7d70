import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable, optional } from 'inversify';
import type { Logger } from 'pino';
import { toTrellisError } from '../../../kernel/errors.js';
import type { Kernel } from '../../../kernel/kernel.js';
import { kernelServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { aiGatewayServiceIdentifier, type AiGateway } from '../../../ports/ai-provider.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { CreditService } from '../../billing/index.js';
import { loadBlock, DeploymentService } from '../../blocks/index.js';
import { Run, type StartedRun } from '../../runs/index.js';
import { DeploymentRuns } from '../../triggers/index.js';
import { Evaluation, EvaluationResult, type EvaluationSummary } from '../entities/evaluation.entity.js';
import type { EvaluationsConfig } from '../evaluations.config.js';
import { evaluationsConfigServiceIdentifier } from '../tokens.js';
import { caseScore, evaluatePure, type EvaluatorScore } from './evaluators.js';
import { judge } from './judge.js';
import { summarize } from './summary.js';

const failure = (error: unknown) => {
  const e = toTrellisError(error);
  return { code: e.code, message: e.message };
};

/**
 * Drives evaluations: runs the deployed version over each pending case through the run queue
 * (the in-process queue or BullMQ: `RunService.start` enqueues, any worker executes), at most
 * `concurrency` runs at once, and scores each run when it ends. The driving process renews the
 * heartbeat; `recover` takes over an evaluation whose heartbeat stopped. Each case's run is
 * started with an idempotency key of the case, so a takeover attaches to a run already started
 * instead of starting another.
 */
@injectable()
export class EvaluationRunner {
  private readonly driving = new Map<string, Promise<void>>();
  private readonly abort = new AbortController();

  constructor(
    @inject(kernelServiceIdentifier) private readonly kernel: Kernel,
    @inject(DeploymentRuns) private readonly runs: DeploymentRuns,
    @inject(DeploymentService) private readonly deployments: DeploymentService,
    @inject(CreditService) private readonly credits: CreditService,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(evaluationsConfigServiceIdentifier) private readonly config: EvaluationsConfig,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
    @inject(aiGatewayServiceIdentifier) @optional() private readonly gateway: AiGateway | undefined,
  ) {}

  /** Starts driving an evaluation in this process (no-op when this process already drives it). */
  kick(evaluationId: string, takeover = false): void {
    if (this.driving.has(evaluationId) || this.abort.signal.aborted) return;
    const driven = this.drive(evaluationId, takeover)
      .catch((error) => this.log.error({ err: error, evaluationId }, 'evaluation driver failed'))
      .finally(() => this.driving.delete(evaluationId));
    this.driving.set(evaluationId, driven);
  }

  /** Waits for the evaluations this process drives (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.driving.size) await Promise.allSettled([...this.driving.values()]);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled([...this.driving.values()]);
  }

  /** Takes over queued or running evaluations whose driving process stopped renewing their heartbeat. */
  async recover(em: EntityManager): Promise<number> {
    const stale = new Date(this.clock.nowMs() - this.config.staleAfterSeconds * 1000);
    const lost = await em.find(Evaluation, { status: { $in: ['queued', 'running'] }, heartbeatAt: { $lt: stale } }, { fields: ['id', 'heartbeatAt'], limit: 20 });
    let taken = 0;
    for (const evaluation of lost) {
      if (this.driving.has(evaluation.id)) continue;
      const claimed = await em.nativeUpdate(Evaluation, { id: evaluation.id, heartbeatAt: evaluation.heartbeatAt }, { heartbeatAt: this.clock.now() });
      if (!claimed) continue;
      taken++;
      this.kick(evaluation.id, true);
    }
    return taken;
  }

  private async drive(evaluationId: string, takeover: boolean): Promise<void> {
    const em = this.kernel.fork();
    const now = this.clock.now();
    if (takeover) await em.nativeUpdate(Evaluation, { id: evaluationId, status: 'queued' }, { status: 'running', startedAt: now, heartbeatAt: now });
    else if (!(await em.nativeUpdate(Evaluation, { id: evaluationId, status: 'queued' }, { status: 'running', startedAt: now, heartbeatAt: now }))) return;
    const beat = setInterval(() => {
      void em
        .fork()
        .nativeUpdate(Evaluation, { id: evaluationId, status: 'running' }, { heartbeatAt: this.clock.now() })
        .catch(() => undefined);
    }, this.config.heartbeatSeconds * 1000);
    beat.unref?.();
    try {
      const evaluation = await em.findOneOrFail(Evaluation, { id: evaluationId });
      const block = await loadBlock(em, evaluation.block.id);
      try {
        if (!block || block.trashedAt) throw new Error('block gone');
        await this.deployments.version(em, block, evaluation.version);
      } catch (error) {
        const why = block && !block.trashedAt ? failure(error) : { code: 'block_not_found', message: 'The block is gone or in the trash.' };
        await em.nativeUpdate(EvaluationResult, { evaluation: evaluationId, status: { $in: ['pending', 'running'] } }, { status: 'errored', error: why });
        await this.finish(em, evaluationId, 'failed', why);
        return;
      }
      const teamId = block.project.team.id;
      const todo = await em.find(EvaluationResult, { evaluation: evaluationId, status: { $in: ['pending', 'running'] } }, { orderBy: { position: 'asc' } });
      const worker = async () => {
        for (let next = todo.shift(); next; next = todo.shift()) {
          if (this.abort.signal.aborted || (await this.cancelled(em, evaluationId))) return;
          await this.runCase(evaluation, teamId, next);
        }
      };
      await Promise.all(Array.from({ length: Math.min(evaluation.concurrency, todo.length) }, worker));
      if (this.abort.signal.aborted) return;
      await this.finish(em, evaluationId, 'completed', null);
    } finally {
      clearInterval(beat);
    }
  }

  /** The promise's value, or null once this process stops. */
  private untilStopped<T>(promise: Promise<T>): Promise<T | null> {
    const signal = this.abort.signal;
    if (signal.aborted) return Promise.resolve(null);
    return new Promise<T | null>((resolve, reject) => {
      const stop = () => resolve(null);
      signal.addEventListener('abort', stop, { once: true });
      promise.then(
        (value) => {
          signal.removeEventListener('abort', stop);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', stop);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  private async cancelled(em: EntityManager, evaluationId: string): Promise<boolean> {
    const row = await em.fork().findOne(Evaluation, { id: evaluationId }, { fields: ['status'] });
    return !row || row.status !== 'running';
  }

  /** Ends a running evaluation with its summary (a cancelled one keeps its status; its summary is brought up to date). */
  private async finish(em: EntityManager, evaluationId: string, status: 'completed' | 'failed', error: { code: string; message: string } | null): Promise<void> {
    const summary: EvaluationSummary = await summarize(em, evaluationId);
    const ended = await em.nativeUpdate(Evaluation, { id: evaluationId, status: 'running' }, { status, summary, error, finishedAt: this.clock.now() });
    if (!ended) await em.nativeUpdate(Evaluation, { id: evaluationId, status: 'cancelled' }, { summary });
  }

  private async runCase(evaluation: Evaluation, teamId: string, result: EvaluationResult): Promise<void> {
    const em = this.kernel.fork();
    const blockId = evaluation.block.id;
    let started: StartedRun | null = null;
    try {
      if (result.runId) started = await this.runs.attach(em, blockId, result.runId);
      if (!started) {
        started = await this.runs.start(em, blockId, {
          source: 'evaluation',
          inputs: result.inputs,
          version: evaluation.version,
          idempotency: { scope: `evaluation:${evaluation.id}`, key: result.id, requestHash: result.id },
        });
        const marked = await em.nativeUpdate(EvaluationResult, { id: result.id, status: { $in: ['pending', 'running'] } }, { runId: started.runId, status: 'running' });
        if (!marked) return;
      }
    } catch (error) {
      await em.nativeUpdate(EvaluationResult, { id: result.id, status: { $in: ['pending', 'running'] } }, { status: 'errored', error: failure(error) });
      return;
    }
    // At shutdown the process stops waiting (the run goes on); the process that takes the evaluation over attaches to it.
    let ran;
    try {
      ran = await this.untilStopped(started.result());
    } catch (error) {
      await em.nativeUpdate(EvaluationResult, { id: result.id, status: 'running' }, { status: 'errored', error: failure(error) });
      return;
    }
    if (!ran) return;
    const run = await em.findOne(Run, { id: started.runId }, { fields: ['usedCredits', 'reservedCredits'] });
    const runCredits = run?.usedCredits ?? 0;
    const base = { runId: started.runId, latencyMs: Math.round(ran.duration), output: ran.output ?? null };
    if (ran.status !== 'completed') {
      const error = ran.status === 'waiting' ? { code: 'run_waiting', message: 'The run waits for an answer (an ask block): evaluations run workflows that need none.' } : (ran.error ?? { code: `run_${ran.status}`, message: `The run ended ${ran.status}.` });
      await em.nativeUpdate(EvaluationResult, { id: result.id, status: 'running' }, { ...base, status: 'errored', error, credits: runCredits, passed: false, score: null });
      return;
    }
    const scores: EvaluatorScore[] = [];
    for (const spec of evaluation.evaluators) {
      if (spec.type !== 'judge') scores.push(evaluatePure(spec, ran.output, result.expected));
      else if (!this.gateway) scores.push({ evaluator: spec.path ? `judge:${spec.path}` : 'judge', score: 0, passed: false, detail: 'judge failed: no AI gateway in this server', credits: 0 });
      else scores.push(await judge({ gateway: this.gateway, credits: this.credits, em }, spec, { userId: evaluation.createdBy.id, teamId, evaluationId: evaluation.id, inputs: result.inputs, expected: result.expected, output: ran.output, signal: this.abort.signal }));
    }
    const credits = runCredits + scores.reduce((sum, s) => sum + (s.credits ?? 0), 0);
    await em.nativeUpdate(
      EvaluationResult,
      { id: result.id, status: 'running' },
      { ...base, status: 'completed', scores, score: caseScore(evaluation.evaluators, scores), passed: scores.every((s) => s.passed), credits },
    );
  }
}
