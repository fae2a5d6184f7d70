import { Type, type Static } from '@sinclair/typebox';
import { TrellisError } from '../../kernel/errors.js';
import { attrIssue, optionalText, type BlockExecutor, type BlockIo, type BlockOutcome, defineBlockKind, renderDeep, renderTemplate, type WorkflowBlock } from '../runs/index.js';
import { citedContext } from './cited-context.js';
import { knowledgeRetrieverServiceIdentifier, type KnowledgeRetriever } from '../../ports/knowledge-retriever.js';

export const RetrievalAttrs = Type.Object({
  knowledgeBase: Type.String({ minLength: 1, ...attrIssue('required', 'a retrieval block needs a knowledge base id') }),
  /** The query's template, instead of the block's text. */
  query: optionalText(),
  limit: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 100 }), Type.Null()], attrIssue('isInt', 'must be an integer from 1 to 100'))),
  mode: Type.Optional(Type.Union([Type.Literal('hybrid'), Type.Literal('keyword'), Type.Literal('vector'), Type.Null()], attrIssue('isIn', 'must be one of hybrid, keyword, vector'))),
  minScore: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], attrIssue('isNumber', 'must be a number from 0 to 1'))),
  /** A metadata filter (the vector store's filter language); strings inside are templates. */
  filter: Type.Optional(Type.Unknown()),
});
export type RetrievalAttrs = Static<typeof RetrievalAttrs>;

/**
 * Retrieval block (`retrievalBlock`): looks up `attrs.query` (a template; default the block's text)
 * in the knowledge base `attrs.knowledgeBase`, with `attrs.limit`, `attrs.mode`, `attrs.minScore` and
 * `attrs.filter`. The retrieval shows in the events as a `tool_start`/`tool_result` pair (tool name
 * `knowledge_retrieve`, the result the passages with citations). The output is `{ query, passages,
 * context }`, `context` the passages numbered for an LLM block to cite (`{{ name.context }}`).
 */
export class RetrievalBlockExecutor implements BlockExecutor<RetrievalAttrs> {
  readonly kind = 'retrieval' as const;

  constructor(private readonly retriever: () => KnowledgeRetriever | undefined) {}

  async execute(block: WorkflowBlock<RetrievalAttrs>, io: BlockIo): Promise<BlockOutcome> {
    const retriever = this.retriever();
    if (!retriever) throw new TrellisError('unavailable', 'knowledge_not_configured', 'Knowledge bases are not loaded in this deployment (the knowledge module), so retrieval blocks cannot run.');
    const a = block.attrs;
    const query = renderTemplate(a.query || block.text, io.ctx).trim();
    if (!query) throw new TrellisError('bad_request', 'knowledge_empty_query', 'The retrieval block rendered an empty query.');
    const callId = `${block.id}:retrieve`;
    await io.toolStart(callId, 'knowledge_retrieve');
    const passages = await retriever.retrieve({
      userId: io.userId,
      baseId: a.knowledgeBase,
      query,
      limit: a.limit ?? undefined,
      mode: a.mode ?? undefined,
      minScore: a.minScore ?? undefined,
      filter: a.filter === undefined ? undefined : renderDeep(a.filter, io.ctx),
      signal: io.signal,
    });
    await io.toolResult(callId, { query, passages });
    return { output: { query, passages, context: citedContext(passages) } };
  }
}

/** The retrieval block kind, registered by the knowledge module. */
export const retrievalKind = defineBlockKind({
  kind: 'retrieval',
  nodeType: 'retrievalBlock',
  attrs: RetrievalAttrs,
  // It reads a knowledge base (and may embed the query through a paid model): a checkpoint before and after.
  replayable: false,
  check: (attrs, text) =>
    (typeof attrs.query === 'string' && attrs.query) || text
      ? []
      : [{ field: 'query', constraint: 'required', message: 'a retrieval block needs a query (attrs.query or its text)' }],
  executor: (services) => new RetrievalBlockExecutor(() => services.optional(knowledgeRetrieverServiceIdentifier)),
});
