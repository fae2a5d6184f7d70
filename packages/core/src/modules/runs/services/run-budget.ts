import type { EntityManager } from '@mikro-orm/core';
import type { AiGateway } from '../../../ports/ai-provider.js';
import { Block } from '../../blocks/index.js';
import { deploymentRunSources, Run, type RunWaiting } from '../entities/run.entity.js';
import type { RunContext } from './run-context.js';

/*
 * Budgets (docs/runs.md, "Budgets"). A budget is a number of credits; before every model call of
 * a stored run, each budget that bounds the run is checked: when what was spent under it plus
 * the call's credit hold (the AI layer's estimate of one call of the model) would exceed it, the
 * run waits (reason `budget`) instead of calling. What was spent is read from the model call
 * records (`ai_model_calls.credits`), so every attempt's calls count, each once:
 *
 * - the run's budget (`runs.budget_credits` of its root): the calls of the root run and of every
 *   sub-workflow run below it (`runs.budget_root_id`);
 * - the deployment's budget (`blocks.budget_credits`), for a run of the Block API (`source: api`,
 *   a sub-workflow's run included): the calls of every API run of that deployment, ever.
 */

/** A budget a model call would exceed: which, its credits, what was spent under it, and what the call holds. */
export interface BudgetShortfall {
  scope: 'run' | 'deployment';
  credits: number;
  spent: number;
  required: number;
}

/** The budget fields of a run this module reads. */
export type BudgetedRun = Pick<Run, 'id' | 'documentId' | 'source' | 'budgetRootId'>;

/** The message of a budget wait (its `question`). */
export function budgetQuestion(shortfall: BudgetShortfall): string {
  const whose = shortfall.scope === 'run' ? "The run's budget" : "The deployment's budget";
  return `${whose} of ${shortfall.credits} credits would be exceeded: ${shortfall.spent} spent, the next model call holds ${shortfall.required}. Raise the budget to go on.`;
}

const sumOf = (rows: unknown): number => Number((rows as Array<{ spent: unknown }>)[0]?.spent ?? 0) || 0;

export class RunBudgets {
  constructor(
    private readonly ctx: RunContext,
    private readonly gateway: () => AiGateway | undefined,
  ) {}

  /** The check made before each model call of `run`: the first budget the call would exceed, or null. */
  guard(run: BudgetedRun): (modelId: string) => Promise<BudgetShortfall | null> {
    return async (modelId) => {
      const em = this.ctx.fork();
      const root = run.budgetRootId ?? run.id;
      const rootRun = await em.findOne(Run, { id: root }, { fields: ['budgetCredits'] });
      const deployment = (deploymentRunSources as readonly string[]).includes(run.source) && run.documentId ? await em.findOne(Block, { id: run.documentId }, { fields: ['budgetCredits'] }) : null;
      const runBudget = rootRun?.budgetCredits ?? null;
      const deploymentBudget = deployment?.budgetCredits ?? null;
      if (runBudget === null && deploymentBudget === null) return null;
      let required = 0;
      try {
        required = Math.max(0, Math.ceil((await this.gateway()?.estimate(modelId)) ?? 0));
      } catch {
        // An unknown model fails its block when it calls; it holds nothing.
      }
      if (runBudget !== null) {
        const spent = await this.spentUnderRun(em, root);
        if (spent + required > runBudget) return { scope: 'run', credits: runBudget, spent, required };
      }
      if (deploymentBudget !== null) {
        const spent = await this.spentByDeployment(em, run.documentId!);
        if (spent + required > deploymentBudget) return { scope: 'deployment', credits: deploymentBudget, spent, required };
      }
      return null;
    };
  }

  /** Credits the model calls of a root run and of the sub-workflow runs below it cost. */
  async spentUnderRun(em: EntityManager, rootId: string): Promise<number> {
    const rows = await em
      .getConnection()
      .execute(
        'select coalesce(sum(c.credits), 0) as spent from ai_model_calls c where c.run_id = ? or c.run_id in (select r.id from runs r where r.budget_root_id = ? and r.id <> ?)',
        [rootId, rootId, rootId],
        'all',
      );
    return sumOf(rows);
  }

  /** Credits the model calls of a deployment's runs cost (Block API, sub-workflow children and triggers). */
  async spentByDeployment(em: EntityManager, blockId: string): Promise<number> {
    const rows = await em
      .getConnection()
      .execute(
        `select coalesce(sum(c.credits), 0) as spent from ai_model_calls c join runs r on r.id = c.run_id where r.document_id = ? and r.source in (${deploymentRunSources.map(() => '?').join(', ')})`,
        [blockId, ...deploymentRunSources],
        'all',
      );
    return sumOf(rows);
  }

  /**
   * Queues the continuation of each run in `runs` that waits for a budget (and of each run above
   * it that waits for it), the lowest first, so a parent's sub-workflow block attaches to a child
   * that is going on again. Answers the ids of the runs queued.
   */
  async resume(em: EntityManager, runs: readonly Run[]): Promise<string[]> {
    const chosen = new Map<string, Run>();
    for (const run of runs) {
      let current: Run | null = run;
      for (let hops = 0; current && hops <= 64; hops++) {
        if (!waitsForBudget(current) || chosen.has(current.id)) break;
        chosen.set(current.id, current);
        current = current.parentRunId ? await em.findOne(Run, { id: current.parentRunId }, { refresh: true }) : null;
      }
    }
    const queued: string[] = [];
    for (const run of [...chosen.values()].sort((a, b) => b.depth - a.depth)) {
      const now = this.ctx.clock.now();
      const changed = await em.nativeUpdate(
        Run,
        { id: run.id, status: 'waiting', cancelRequested: false },
        { status: 'queued', waiting: null, answer: null, heartbeatAt: now, deadlineAt: new Date(now.getTime() + run.timeoutSeconds * 1000), updatedAt: now },
      );
      if (!changed) continue;
      await this.ctx.queue.enqueue({ runId: run.id, teamId: run.teamId ?? run.userId });
      queued.push(run.id);
    }
    return queued;
  }

  /** The runs of a deployment that wait for its budget. */
  async waitingOnDeployment(em: EntityManager, blockId: string): Promise<Run[]> {
    const waiting = await em.find(Run, { documentId: blockId, source: { $in: [...deploymentRunSources] }, status: 'waiting' }, { limit: 10_000 });
    return waiting.filter((run) => run.waiting?.reason === 'budget' && run.waiting.budget?.scope === 'deployment');
  }

  /** The runs under a root run (itself included) that wait for its budget. */
  async waitingUnderRun(em: EntityManager, root: Run): Promise<Run[]> {
    const below = await em.find(Run, { budgetRootId: root.id, status: 'waiting', id: { $ne: root.id } }, { limit: 10_000 });
    return [root, ...below].filter((run) => waitsForBudget(run) && run.waiting!.budget?.scope === 'run');
  }
}

/** Whether a stored run waits for a budget (not for an answer). */
export const waitsForBudget = (run: Pick<Run, 'status' | 'waiting'>): boolean => run.status === 'waiting' && run.waiting?.reason === 'budget';

/** The wait of a run stopped before a call `shortfall` refused. */
export function budgetWaiting(blockId: string, path: string | undefined, shortfall: BudgetShortfall): RunWaiting {
  return { blockId, question: budgetQuestion(shortfall), reason: 'budget', budget: shortfall, ...(path !== undefined && path !== blockId ? { path } : {}) };
}
