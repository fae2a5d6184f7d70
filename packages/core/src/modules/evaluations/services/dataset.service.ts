import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { BlockService } from '../../blocks/index.js';
import { User } from '../../identity/index.js';
import { Run } from '../../runs/index.js';
import { Dataset, DatasetCase } from '../entities/dataset.entity.js';
import { evaluationErrors } from '../errors.js';
import type { EvaluationsConfig } from '../evaluations.config.js';
import { evaluationsConfigServiceIdentifier } from '../tokens.js';
import { requireBlockOf } from './access.js';

export interface CaseInput {
  name?: string;
  inputs: Record<string, unknown>;
  expected?: unknown;
}

/** Datasets of cases, owned by a block: whoever can read the block reads them, whoever can write it changes them. */
@injectable()
export class DatasetService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(BlockService) private readonly blocks: BlockService,
    @inject(evaluationsConfigServiceIdentifier) private readonly config: EvaluationsConfig,
  ) {}

  async create(em: EntityManager, principal: Principal, input: { name: string; blockId: string; cases?: CaseInput[] }): Promise<Dataset> {
    const { block } = await this.blocks.requireBlock(em, principal, input.blockId, { wanted: 'write' });
    const cases = input.cases ?? [];
    if (cases.length > this.config.maxCases) throw evaluationErrors.tooManyCases(this.config.maxCases);
    const dataset = em.create(Dataset, { id: this.ids.next(), block, createdBy: em.getReference(User, principal.userId), name: input.name, caseCount: cases.length, createdAt: new Date(), updatedAt: new Date() });
    for (const c of cases) em.create(DatasetCase, this.caseOf(dataset, c));
    await em.flush();
    return dataset;
  }

  private caseOf(dataset: Dataset, c: CaseInput & { sourceRunId?: string }): DatasetCase {
    return { id: this.ids.next(), dataset, name: c.name ?? null, inputs: c.inputs, expected: c.expected ?? null, sourceRunId: c.sourceRunId ?? null, createdAt: new Date() };
  }

  /** The datasets of a block (read permission), or without one those the caller created. */
  async list(em: EntityManager, principal: Principal, blockId: string | undefined, page: Paging): Promise<{ items: Dataset[]; total: number }> {
    const where = blockId ? { block: (await this.blocks.requireBlock(em, principal, blockId)).block.id } : { createdBy: principal.userId };
    const [items, total] = await em.findAndCount(Dataset, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  /** A dataset whose block the caller may read (`write` to change it); 404 `dataset_not_found` otherwise. */
  async get(em: EntityManager, principal: Principal, datasetId: string, wanted: 'read' | 'write' = 'read'): Promise<Dataset> {
    const dataset = await em.findOne(Dataset, { id: datasetId });
    if (!dataset) throw evaluationErrors.datasetNotFound();
    await requireBlockOf(this.blocks, em, principal, dataset.block.id, wanted, evaluationErrors.datasetNotFound);
    return dataset;
  }

  async remove(em: EntityManager, principal: Principal, datasetId: string): Promise<void> {
    const dataset = await this.get(em, principal, datasetId, 'write');
    await em.nativeDelete(Dataset, { id: dataset.id });
  }

  async cases(em: EntityManager, principal: Principal, datasetId: string, page: Paging): Promise<{ items: DatasetCase[]; total: number }> {
    const dataset = await this.get(em, principal, datasetId);
    const [items, total] = await em.findAndCount(DatasetCase, { dataset: dataset.id }, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  /** Every case of a dataset, oldest first (what an evaluation runs). */
  allCases(em: EntityManager, datasetId: string): Promise<DatasetCase[]> {
    return em.find(DatasetCase, { dataset: datasetId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  /**
   * Adds cases: given ones, or one per earlier run of the dataset's block (its inputs, and with
   * `expectOutput` its output as the expectation; such a run must have completed).
   */
  async addCases(em: EntityManager, principal: Principal, datasetId: string, input: { cases?: CaseInput[]; fromRuns?: string[]; expectOutput?: boolean }): Promise<DatasetCase[]> {
    if ((input.cases === undefined) === (input.fromRuns === undefined)) throw evaluationErrors.casesOrRuns();
    const dataset = await this.get(em, principal, datasetId, 'write');
    let cases: Array<CaseInput & { sourceRunId?: string }>;
    if (input.cases) cases = input.cases;
    else {
      const ids = [...new Set(input.fromRuns)];
      const runs = await em.find(Run, { id: { $in: ids } }, { fields: ['id', 'documentId', 'status', 'inputs', 'output'] });
      const byId = new Map(runs.map((r) => [r.id, r]));
      cases = ids.map((id) => {
        const run = byId.get(id);
        if (!run || run.documentId !== dataset.block.id) throw evaluationErrors.runNotUsable(id, "is not a run of the dataset's block");
        if (input.expectOutput && run.status !== 'completed') throw evaluationErrors.runNotUsable(id, `did not complete (${run.status}), so it has no output to expect`);
        return { inputs: run.inputs ?? {}, ...(input.expectOutput ? { expected: run.output ?? null } : {}), sourceRunId: run.id };
      });
    }
    if (dataset.caseCount + cases.length > this.config.maxCases) throw evaluationErrors.tooManyCases(this.config.maxCases);
    const created = cases.map((c) => em.create(DatasetCase, this.caseOf(dataset, c)));
    await em.flush();
    await em.nativeUpdate(Dataset, { id: dataset.id }, { caseCount: (await em.count(DatasetCase, { dataset: dataset.id })), updatedAt: new Date() });
    return created;
  }
}
