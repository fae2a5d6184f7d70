import type { ServiceIdentifier } from 'inversify';

export type RetrievalMode = 'hybrid' | 'keyword' | 'vector';

/** Where a passage comes from, for a model to cite. */
export interface Citation {
  sourceId: string;
  sourceName: string;
  url: string | null;
  page: number | null;
  headingPath: string[];
  /** Character offsets of the passage in the source's extracted text. */
  start: number;
  end: number;
}

export interface Passage {
  /** The passage returned: the matched chunk's parent, or the chunk itself. */
  id: string;
  text: string;
  score: number;
  /** The chunk that matched, with its own offsets. */
  match: { chunkId: string; start: number; end: number; keywordRank: number | null; vectorRank: number | null };
  citation: Citation;
}

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
