import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { BlockService, DeploymentService } from '../../blocks/index.js';
import { User } from '../../identity/index.js';
import { RunService } from '../../runs/index.js';
import { Evaluation, EvaluationResult, type EvaluationSummary } from '../entities/evaluation.entity.js';
import { evaluationErrors } from '../errors.js';
import type { EvaluationsConfig } from '../evaluations.config.js';
import { evaluationsConfigServiceIdentifier } from '../tokens.js';
import { requireBlockOf } from './access.js';
import { DatasetService } from './dataset.service.js';
import { EvaluationRunner } from './evaluation-runner.js';
import { jsonEqual, parseEvaluators } from './evaluators.js';
import { summarize } from './summary.js';

export type CaseChange = 'improved' | 'regressed' | 'unchanged' | 'changed';

export interface Comparison {
  base: Evaluation;
  candidate: Evaluation;
  summary: Record<CaseChange, number>;
  cases: Array<{
    caseId: string;
    caseName: string | null;
    base: { passed: boolean; score: number | null; output: unknown };
    candidate: { passed: boolean; score: number | null; output: unknown };
    change: CaseChange;
  }>;
}

const terminal = new Set(['completed', 'failed', 'cancelled']);

/** Evaluations: created (queued and driven by `EvaluationRunner`), read, cancelled and compared. */
@injectable()
export class EvaluationService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(BlockService) private readonly blocks: BlockService,
    @inject(DeploymentService) private readonly deployments: DeploymentService,
    @inject(DatasetService) private readonly datasets: DatasetService,
    @inject(RunService) private readonly runs: RunService,
    @inject(EvaluationRunner) private readonly runner: EvaluationRunner,
    @inject(evaluationsConfigServiceIdentifier) private readonly config: EvaluationsConfig,
  ) {}

  /**
   * Queues an evaluation of a deployed version of the dataset's block over every case, and starts
   * driving it in this process. Runs spend the block's team's credits, so the write permission is needed.
   */
  async create(em: EntityManager, principal: Principal, input: { datasetId: string; blockId: string; version: string; evaluators: unknown; concurrency?: number }): Promise<Evaluation> {
    const evaluators = parseEvaluators(input.evaluators);
    const concurrency = input.concurrency ?? this.config.defaultConcurrency;
    if (concurrency > this.config.maxConcurrency) throw evaluationErrors.concurrencyTooHigh(this.config.maxConcurrency);
    const { block } = await this.blocks.requireBlock(em, principal, input.blockId, { wanted: 'write' });
    const dataset = await this.datasets.get(em, principal, input.datasetId);
    if (dataset.block.id !== block.id) throw evaluationErrors.blockMismatch();
    await this.deployments.version(em, block, input.version);
    const cases = await this.datasets.allCases(em, dataset.id);
    if (!cases.length) throw evaluationErrors.emptyDataset();
    const now = this.clock.now();
    const evaluation = em.create(Evaluation, {
      id: this.ids.next(),
      dataset,
      block,
      createdBy: em.getReference(User, principal.userId),
      version: input.version,
      evaluators,
      concurrency,
      status: 'queued',
      summary: null,
      error: null,
      heartbeatAt: now,
      createdAt: now,
      startedAt: null,
      finishedAt: null,
    });
    cases.forEach((c, position) =>
      em.create(EvaluationResult, {
        id: this.ids.next(),
        evaluation,
        caseId: c.id,
        caseName: c.name,
        position,
        inputs: c.inputs,
        expected: c.expected ?? null,
        runId: null,
        status: 'pending',
        output: null,
        scores: [],
        score: null,
        passed: null,
        credits: 0,
        latencyMs: null,
        error: null,
      }),
    );
    await em.flush();
    this.runner.kick(evaluation.id);
    return evaluation;
  }

  /** An evaluation whose block the caller may read (`write` to cancel it); 404 `evaluation_not_found` otherwise. */
  async get(em: EntityManager, principal: Principal, evaluationId: string, wanted: 'read' | 'write' = 'read'): Promise<Evaluation> {
    const evaluation = await em.findOne(Evaluation, { id: evaluationId });
    if (!evaluation) throw evaluationErrors.evaluationNotFound();
    await requireBlockOf(this.blocks, em, principal, evaluation.block.id, wanted, evaluationErrors.evaluationNotFound);
    return evaluation;
  }

  /** The summary as stored when the evaluation ended, or as its results stand while it goes on. */
  async summaryOf(em: EntityManager, evaluation: Evaluation): Promise<EvaluationSummary> {
    return terminal.has(evaluation.status) && evaluation.summary ? evaluation.summary : summarize(em, evaluation.id);
  }

  /** Evaluations of a dataset or of a block (read permission), or without either those the caller started; newest first. */
  async list(em: EntityManager, principal: Principal, filter: { blockId?: string; datasetId?: string }, page: Paging): Promise<{ items: Evaluation[]; total: number }> {
    const where: Record<string, unknown> = {};
    if (filter.datasetId) where.dataset = (await this.datasets.get(em, principal, filter.datasetId)).id;
    if (filter.blockId) where.block = (await this.blocks.requireBlock(em, principal, filter.blockId)).block.id;
    if (!filter.datasetId && !filter.blockId) where.createdBy = principal.userId;
    const [items, total] = await em.findAndCount(Evaluation, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  async results(em: EntityManager, principal: Principal, evaluationId: string, page: Paging): Promise<{ items: EvaluationResult[]; total: number }> {
    const evaluation = await this.get(em, principal, evaluationId);
    const [items, total] = await em.findAndCount(EvaluationResult, { evaluation: evaluation.id }, { orderBy: { position: 'asc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  /**
   * Cancels a queued or running evaluation: no further case starts, the runs going on are
   * cancelled, and their cases (and those not started) are marked `cancelled`. 409 when it has ended.
   */
  async cancel(em: EntityManager, principal: Principal, evaluationId: string): Promise<Evaluation> {
    const evaluation = await this.get(em, principal, evaluationId, 'write');
    const now = this.clock.now();
    const cancelled = await em.nativeUpdate(Evaluation, { id: evaluation.id, status: { $in: ['queued', 'running'] } }, { status: 'cancelled', finishedAt: now });
    if (!cancelled) throw evaluationErrors.alreadyFinished((await em.fork().findOneOrFail(Evaluation, { id: evaluation.id })).status);
    const going = await em.find(EvaluationResult, { evaluation: evaluation.id, status: 'running' }, { fields: ['runId'] });
    await em.nativeUpdate(EvaluationResult, { evaluation: evaluation.id, status: { $in: ['pending', 'running'] } }, { status: 'cancelled' });
    for (const result of going) {
      if (result.runId) await this.runs.cancel(em.fork(), principal, evaluation.block.id, result.runId).catch(() => undefined);
    }
    await em.nativeUpdate(Evaluation, { id: evaluation.id }, { summary: await summarize(em, evaluation.id) });
    return em.fork().findOneOrFail(Evaluation, { id: evaluation.id });
  }

  /**
   * Two evaluations of the same dataset, case by case (the cases both ran): `improved` (failed or
   * errored in base, passed in candidate), `regressed` (the other way), `changed` (the same
   * verdict, but another score or output), `unchanged`.
   */
  async compare(em: EntityManager, principal: Principal, baseId: string, candidateId: string): Promise<Comparison> {
    const base = await this.get(em, principal, baseId);
    const candidate = await this.get(em, principal, candidateId);
    if (base.dataset.id !== candidate.dataset.id) throw evaluationErrors.notComparable('they ran different datasets');
    const fields = ['caseId', 'caseName', 'position', 'status', 'passed', 'score', 'output'] as const;
    const [baseRows, candidateRows] = await Promise.all([
      em.fork().find(EvaluationResult, { evaluation: base.id }, { fields: [...fields], orderBy: { position: 'asc' } }),
      em.fork().find(EvaluationResult, { evaluation: candidate.id }, { fields: [...fields], orderBy: { position: 'asc' } }),
    ]);
    const byCase = new Map(candidateRows.map((r) => [r.caseId, r]));
    const summary: Record<CaseChange, number> = { improved: 0, regressed: 0, unchanged: 0, changed: 0 };
    const cases: Comparison['cases'] = [];
    for (const b of baseRows) {
      const c = byCase.get(b.caseId);
      if (!c) continue;
      const side = (r: Pick<EvaluationResult, 'passed' | 'score' | 'output'>) => ({ passed: r.passed === true, score: r.score ?? null, output: r.output ?? null });
      const bs = side(b);
      const cs = side(c);
      const change: CaseChange =
        bs.passed !== cs.passed ? (cs.passed ? 'improved' : 'regressed') : bs.score === cs.score && jsonEqual(bs.output, cs.output) && b.status === c.status ? 'unchanged' : 'changed';
      summary[change]++;
      cases.push({ caseId: b.caseId, caseName: b.caseName ?? null, base: bs, candidate: cs, change });
    }
    return { base, candidate, summary, cases };
  }
}
