import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { entityManagerServiceIdentifier } from '../../kernel/tokens.js';
import { parseVdbFilter } from '../tools/index.js';
import { KnowledgeService } from './services/knowledge.service.js';
import { RetrievalService, type Passage } from './services/retrieval.service.js';
import type { KnowledgeRetrieveInput, KnowledgeRetriever } from '../../ports/knowledge-retriever.js';

export { knowledgeRetrieverServiceIdentifier, type KnowledgeRetriever, type KnowledgeRetrieveInput } from '../../ports/knowledge-retriever.js';

@injectable()
export class KnowledgeRetrieverService implements KnowledgeRetriever {
  constructor(
    @inject(entityManagerServiceIdentifier) private readonly root: EntityManager,
    @inject(KnowledgeService) private readonly knowledge: KnowledgeService,
    @inject(RetrievalService) private readonly retrieval: RetrievalService,
  ) {}

  async retrieve(input: KnowledgeRetrieveInput): Promise<Passage[]> {
    const em = this.root.fork();
    const teamId = await this.knowledge.teamOf(em, input.userId);
    const base = await this.knowledge.getBase(em, teamId, input.baseId);
    const filter = parseVdbFilter(input.filter ?? null, 'filter');
    return this.retrieval.retrieve(em, base, { query: input.query, limit: input.limit, mode: input.mode, minScore: input.minScore, filter, userId: input.userId, signal: input.signal });
  }
}
