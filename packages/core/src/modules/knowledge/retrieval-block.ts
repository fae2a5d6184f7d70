import { TrellisError } from '../../kernel/errors.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../runs/blocks/executor.js';
import { renderDeep, renderTemplate } from '../runs/blocks/template.js';
import type { WorkflowBlock } from '../runs/blocks/workflow.js';
import { citedContext } from './cited-context.js';
import type { KnowledgeRetriever } from './retriever-port.js';

const modes = ['hybrid', 'keyword', 'vector'];

/**
 * Retrieval block (`retrievalBlock`): looks up `attrs.query` (a template; default the block's text)
 * in the knowledge base `attrs.knowledgeBase`, with `attrs.limit`, `attrs.mode`, `attrs.minScore` and
 * `attrs.filter`. The retrieval shows in the events as a `tool_start`/`tool_result` pair (tool name
 * `knowledge_retrieve`, the result the passages with citations). The output is `{ query, passages,
 * context }`, `context` the passages numbered for an LLM block to cite (`{{ name.context }}`).
 */
export class RetrievalBlockExecutor implements BlockExecutor {
  readonly kind = 'retrieval' as const;

  constructor(private readonly retriever: () => KnowledgeRetriever | undefined) {}

  async execute(block: WorkflowBlock, io: BlockIo): Promise<BlockOutcome> {
    const retriever = this.retriever();
    if (!retriever) throw new TrellisError('unavailable', 'knowledge_not_configured', 'Knowledge bases are not loaded in this deployment (the knowledge module), so retrieval blocks cannot run.');
    const a = block.attrs;
    const query = renderTemplate(typeof a.query === 'string' && a.query ? a.query : block.text, io.ctx).trim();
    if (!query) throw new TrellisError('bad_request', 'knowledge_empty_query', 'The retrieval block rendered an empty query.');
    const callId = `${block.id}:retrieve`;
    await io.toolStart(callId, 'knowledge_retrieve');
    const passages = await retriever.retrieve({
      userId: io.userId,
      baseId: a.knowledgeBase as string,
      query,
      limit: typeof a.limit === 'number' ? a.limit : undefined,
      mode: modes.includes(a.mode as string) ? (a.mode as 'hybrid') : undefined,
      minScore: typeof a.minScore === 'number' ? a.minScore : undefined,
      filter: a.filter === undefined ? undefined : renderDeep(a.filter, io.ctx),
      signal: io.signal,
    });
    await io.toolResult(callId, { query, passages });
    return { output: { query, passages, context: citedContext(passages) } };
  }
}
