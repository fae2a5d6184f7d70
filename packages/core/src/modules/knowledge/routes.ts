import type { CredentialKind } from '../../kernel/auth/principal.js';
import { paging, pageOf } from '../../kernel/http/dto/paging.js';
import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RequestContext, type RouteDefinition } from '../../kernel/http/route.js';
import { parseVdbFilter } from '../tools/index.js';
import { KnowledgeBaseCreateBody, KnowledgeBaseParams, KnowledgeRetrieveBody, KnowledgeSourceListQuery, KnowledgeSourceParams, KnowledgeUrlBody } from './dto/knowledge.dto.js';
import { PageQuery } from '../../kernel/http/dto/paging.js';
import type { KnowledgeConfig } from './knowledge.config.js';
import { KnowledgeService } from './services/knowledge.service.js';
import { RetrievalService } from './services/retrieval.service.js';
import { readUpload } from './upload.js';
import { pageSchema } from '../../kernel/http/response-schema.js';
import { knowledgeBaseSchema, knowledgeSourceSchema, retrieveSchema, sourceBatchSchema, toBaseView, toSourceView } from './views.js';

const tags = ['Knowledge bases'];
const auth: readonly CredentialKind[] = ['jwt', 'api_key'];
const baseMissing = 'Your team has no such knowledge base (knowledge_base_not_found)';
const sourceMissing = 'No such knowledge base (knowledge_base_not_found) or source (knowledge_source_not_found)';

async function scope(ctx: RequestContext<{ baseId: string }, unknown, unknown>) {
  const service = ctx.get(KnowledgeService);
  const teamId = await service.teamOf(ctx.em, ctx.requirePrincipal().userId);
  return { service, teamId, base: await service.getBase(ctx.em, teamId, ctx.params.baseId) };
}

/** The knowledge base routes; the upload's size limit comes from the configuration. */
export function knowledgeRoutes(config: KnowledgeConfig): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/knowledge/bases',
      summary: 'Create a knowledge base',
      description: 'A base of your (first) team, with its embedding model and chunking settings, both fixed for its life.',
      tags,
      auth,
      body: KnowledgeBaseCreateBody,
      response: { status: 201, schema: knowledgeBaseSchema },
      errors: {
        400: 'Malformed body, or you belong to no team (no_team)',
        404: 'The embedding model is not yours (ai_model_not_found)',
        422: 'Values fail validation (validation_failed) or do not fit together (knowledge_invalid_chunking)',
      },
      async handler(ctx) {
        const service = ctx.get(KnowledgeService);
        const userId = ctx.requirePrincipal().userId;
        const teamId = await service.teamOf(ctx.em, userId);
        const base = await service.createBase(ctx.em, userId, teamId, {
          name: ctx.body.name,
          description: ctx.body.description,
          embeddingModelId: ctx.body.embeddingModelId,
          embeddingDimension: ctx.body.embeddingDimension,
          chunking: ctx.body.chunking,
        });
        return Reply.json(toBaseView(base), 201);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/knowledge/bases',
      summary: "List your team's knowledge bases",
      tags,
      auth,
      query: PageQuery,
      response: { schema: pageSchema(knowledgeBaseSchema) },
      errors: { 400: 'You belong to no team (no_team)' },
      async handler(ctx) {
        const service = ctx.get(KnowledgeService);
        const teamId = await service.teamOf(ctx.em, ctx.requirePrincipal().userId);
        const page = paging(ctx.query);
        const { items, total } = await service.listBases(ctx.em, teamId, page);
        return pageOf(items.map((base) => toBaseView(base)), total, page);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/knowledge/bases/:baseId',
      summary: 'Read a knowledge base, with counts of its sources and chunks',
      tags,
      auth,
      params: KnowledgeBaseParams,
      response: { schema: knowledgeBaseSchema },
      errors: { 404: baseMissing },
      async handler(ctx) {
        const { service, base } = await scope(ctx);
        return toBaseView(base, await service.statsOf(ctx.em, base.id));
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/knowledge/bases/:baseId',
      summary: 'Delete a knowledge base with its sources, chunks and vectors (irreversible)',
      tags,
      auth,
      params: KnowledgeBaseParams,
      response: { status: 204 },
      errors: { 404: baseMissing },
      async handler(ctx) {
        const { service, teamId, base } = await scope(ctx);
        await service.deleteBase(ctx.em, teamId, base.id);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/knowledge/bases/:baseId/sources',
      summary: 'Upload files to a knowledge base',
      description:
        'A `multipart/form-data` body: one or more `file` fields (PDF, DOCX, HTML, Markdown, plain text or CSV, told by their media type or name) and an optional `metadata` field (a JSON object) given to each. Answers at once with the queued sources; ingestion (parse, chunk, embed) runs in the background: follow `status` and `progress`.',
      tags,
      auth,
      params: KnowledgeBaseParams,
      maxBodyBytes: config.maxFileBytes + 64 * 1024,
      rawBodyDoc: {
        contentType: 'multipart/form-data',
        schema: {
          type: 'object',
          required: ['file'],
          properties: {
            file: { type: 'array', items: { type: 'string', format: 'binary' }, description: 'The files.' },
            metadata: { type: 'string', description: 'A JSON object of metadata for each file, which retrieval filters can test.' },
          },
        },
      },
      response: { status: 202, schema: sourceBatchSchema },
      errors: {
        400: 'Not a multipart upload, no file, or metadata that is not a JSON object (knowledge_invalid_upload)',
        404: baseMissing,
        409: 'The base holds knowledge.maxSourcesPerBase sources (knowledge_base_full)',
        413: 'A file is larger than knowledge.maxFileBytes (knowledge_file_too_large), or the body larger than the route accepts (payload_too_large)',
        415: 'A file is in a format a knowledge base does not read (knowledge_unsupported_type)',
      },
      async handler(ctx) {
        // The body is read (and refused when malformed) before the path is looked up, as for JSON bodies.
        const { files, metadata } = await readUpload(ctx.headers['content-type'], ctx.rawBody, config.maxFileBytes);
        const { service, base } = await scope(ctx);
        const items = [];
        for (const file of files) items.push(await service.addSource(ctx.em, base, { kind: 'file', name: file.name, mediaType: file.mediaType, data: file.data, metadata }));
        return { items: items.map(toSourceView) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/knowledge/bases/:baseId/sources/url',
      summary: 'Add a web page or file by URL',
      description: 'The server fetches the URL in the background through the network guard (private and internal addresses are refused unless `network.allowPrivateNetworks` lets them through); a refused or failing URL fails the source with the reason in `error`.',
      tags,
      auth,
      params: KnowledgeBaseParams,
      body: KnowledgeUrlBody,
      response: { status: 202, schema: knowledgeSourceSchema },
      errors: { 400: 'Malformed body', 404: baseMissing, 409: 'The base is full (knowledge_base_full)', 422: 'Not an http or https URL (validation_failed)' },
      async handler(ctx) {
        const { service, base } = await scope(ctx);
        const source = await service.addSource(ctx.em, base, { kind: 'url', name: ctx.body.name ?? ctx.body.url.slice(0, 500), mediaType: '', url: ctx.body.url, metadata: ctx.body.metadata });
        return Reply.json(toSourceView(source), 202);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/knowledge/bases/:baseId/sources',
      summary: 'List the sources of a knowledge base with their status',
      tags,
      auth,
      params: KnowledgeBaseParams,
      query: KnowledgeSourceListQuery,
      response: { schema: pageSchema(knowledgeSourceSchema) },
      errors: { 404: baseMissing },
      async handler(ctx) {
        const { service, base } = await scope(ctx);
        const page = paging(ctx.query);
        const { items, total } = await service.listSources(ctx.em, base, page, ctx.query.status);
        return pageOf(items.map(toSourceView), total, page);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/knowledge/bases/:baseId/sources/:sourceId',
      summary: 'Read a source: status, progress, and why it failed',
      tags,
      auth,
      params: KnowledgeSourceParams,
      response: { schema: knowledgeSourceSchema },
      errors: { 404: sourceMissing },
      async handler(ctx) {
        const { service, base } = await scope(ctx);
        return toSourceView(await service.getSource(ctx.em, base, ctx.params.sourceId));
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/knowledge/bases/:baseId/sources/:sourceId',
      summary: 'Delete a source with its chunks, keyword rows and vectors (irreversible)',
      tags,
      auth,
      params: KnowledgeSourceParams,
      response: { status: 204 },
      errors: { 404: sourceMissing },
      async handler(ctx) {
        const { service, base } = await scope(ctx);
        await service.deleteSource(ctx.em, base, ctx.params.sourceId);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/knowledge/bases/:baseId/sources/:sourceId/reindex',
      summary: 'Ingest a source again',
      description: 'Parses, chunks and embeds the stored file (or fetches the URL) again; the current chunks answer until the new ones replace them.',
      tags,
      auth,
      params: KnowledgeSourceParams,
      response: { status: 202, schema: knowledgeSourceSchema },
      errors: { 404: sourceMissing },
      async handler(ctx) {
        const { service, base } = await scope(ctx);
        return Reply.json(toSourceView(await service.reindex(ctx.em, base, ctx.params.sourceId)), 202);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/knowledge/bases/:baseId/retrieve',
      summary: 'Retrieve passages for a query (to test a base)',
      description:
        'Keyword and vector rankings of the matched chunks fused by reciprocal rank (or one of them with `mode`), each chunk answered as its parent passage with a citation, filtered by `filter` and `minScore`, optionally reranked by an AI model. The retrieval block of workflows and the `knowledge` tool action answer the same passages.',
      tags,
      auth,
      params: KnowledgeBaseParams,
      body: KnowledgeRetrieveBody,
      response: { schema: retrieveSchema },
      errors: {
        400: 'Malformed body or an invalid filter (invalid_filter)',
        404: 'No such knowledge base (knowledge_base_not_found), or the rerank model is not yours (ai_model_not_found)',
        422: 'Values fail validation (validation_failed), or the query could not be embedded (knowledge_embedding_failed)',
      },
      async handler(ctx) {
        const { base } = await scope(ctx);
        const filter = parseVdbFilter(ctx.body.filter, 'filter');
        const items = await ctx.get(RetrievalService).retrieve(ctx.em, base, {
          query: ctx.body.query,
          limit: ctx.body.limit,
          mode: ctx.body.mode,
          minScore: ctx.body.minScore,
          filter,
          rerank: ctx.body.rerank,
          userId: ctx.requirePrincipal().userId,
          signal: ctx.signal,
        });
        return { query: ctx.body.query, items };
      },
    }),
  ];
}
