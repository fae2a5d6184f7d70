import type { ServiceIdentifier } from 'inversify';
import type { Passage, RetrievalMode } from './services/retrieval.service.js';

export interface KnowledgeRetrieveInput {
  /** Whose team's knowledge base it is (the run's user, the tool's owner). */
  userId: string;
  baseId: string;
  query: string;
  limit?: number;
  mode?: RetrievalMode;
  minScore?: number;
  /** A filter in the vector database language (checked here). */
  filter?: unknown;
  signal?: AbortSignal;
}

/**
 * Retrieval for workflows and bots, behind one function: the retrieval block and the `knowledge`
 * action of AI tools call it. Bound by the knowledge module; absent when the module is not loaded.
 */
export interface KnowledgeRetriever {
  retrieve(input: KnowledgeRetrieveInput): Promise<Passage[]>;
}

export const knowledgeRetrieverServiceIdentifier: ServiceIdentifier<KnowledgeRetriever> = Symbol.for('@trellis/core/knowledge/Retriever');
