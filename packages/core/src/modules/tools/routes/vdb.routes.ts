import { TrellisError } from '../../../kernel/errors.js';
import { Reply } from '../../../kernel/http/reply.js';
import { defineRoute, type RequestContext, type RouteDefinition } from '../../../kernel/http/route.js';
import { VdbBatchCreateBody, VdbCollectionParams, VdbCreateBody, VdbListQuery, VdbRecordParams, VdbSearchBody, VdbUpdateBody } from '../dto/vdb.dto.js';
import { vdbBatchSchema, vdbDeletedSchema, vdbListSchema, vdbRecordSchema, vdbSearchSchema } from '../schemas.js';
import { VdbService, type VdbTag } from '../services/vdb.service.js';
import { parseVdbFilter, parseWhereParameter } from '../vdb/filter.js';
import { toVdbRecordView } from '../vdb/views.js';
import { toolAuth } from './auth.js';

const tags = ['Tool service'];
const badRequest = 'Malformed body, or an invalid filter (invalid_filter) or query (invalid_query)';
const processing = 'Values fail validation (validation_failed, vdb_content_too_long, vdb_metadata_too_large), or the content could not be embedded (vdb_embedding_failed, vdb_embedder_mismatch)';
const collectionMissing = 'Your team has no collection of that name (vdb_collection_not_found)';
const recordMissing = 'No such collection (vdb_collection_not_found) or record (vdb_record_not_found)';

function checkTags(value: unknown[] | undefined, at = ''): VdbTag[] | undefined {
  if (value === undefined) return undefined;
  value.forEach((tag, index) => {
    const ok = (typeof tag === 'string' && tag.length <= 200) || (typeof tag === 'number' && Number.isFinite(tag)) || typeof tag === 'boolean';
    if (!ok) {
      throw new TrellisError('validation', 'validation_failed', 'Tags are strings (at most 200 characters), numbers or booleans.', {
        details: [{ field: `${at}tags.${index}`, constraint: 'tagType', message: 'must be a string of at most 200 characters, a number or a boolean' }],
      });
    }
  });
  return value as VdbTag[];
}

async function scope(ctx: RequestContext<unknown, unknown, unknown>): Promise<{ service: VdbService; teamId: string }> {
  const service = ctx.get(VdbService);
  return { service, teamId: await service.teamOf(ctx.em, ctx.requirePrincipal().userId) };
}

export const vdbRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/tool/vdb/:className',
    summary: 'List the records of a collection',
    description: 'Oldest first. `where` filters by tags and metadata in the filter language (see docs/http/tools.md).',
    tags,
    auth: toolAuth,
    params: VdbCollectionParams,
    query: VdbListQuery,
    // A bad limit, skip or where is a malformed query, answered as the search's query is.
    validationError: { status: 400, code: 'invalid_query' },
    response: { schema: vdbListSchema },
    errors: { 400: 'An invalid filter (invalid_filter), or limit, skip or where out of range (invalid_query)', 404: collectionMissing },
    async handler(ctx) {
      const filter = parseWhereParameter(ctx.query.where);
      const { service, teamId } = await scope(ctx);
      const limit = ctx.query.limit ?? 20;
      const skip = ctx.query.skip ?? 0;
      const { items, total } = await service.list(ctx.em, teamId, ctx.params.className, { limit, skip, filter });
      return { items: items.map((record) => toVdbRecordView(record, ctx.params.className)), total, page: Math.floor(skip / limit) + 1, size: limit, skip, limit };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tool/vdb/:className/vector',
    summary: 'Similarity search in a collection',
    description:
      'Embeds `content` and answers the `query.limit` nearest records by cosine similarity among those that match `query.filter`. The search is exact and filters first: it answers `limit` hits whenever that many records match.',
    tags,
    auth: toolAuth,
    params: VdbCollectionParams,
    body: VdbSearchBody,
    response: { schema: vdbSearchSchema },
    errors: { 400: badRequest, 404: collectionMissing, 422: processing },
    async handler(ctx) {
      const query = ctx.body.query ?? {};
      for (const key of Object.keys(query)) {
        if (key !== 'filter' && key !== 'limit') {
          throw new TrellisError('bad_request', 'invalid_query', `query.${key} is not a query field (use filter and limit).`, {
            details: [{ field: `query.${key}`, constraint: 'whitelistValidation', message: 'unknown field' }],
          });
        }
      }
      const limit = query.limit;
      if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1)) {
        throw new TrellisError('bad_request', 'invalid_query', 'query.limit is a positive integer.', { details: [{ field: 'query.limit', constraint: 'isInt', message: 'a positive integer' }] });
      }
      const filter = parseVdbFilter(query.filter, 'query.filter');
      const { service, teamId } = await scope(ctx);
      const hits = await service.search(ctx.em, teamId, ctx.params.className, ctx.body.content, { limit: limit as number | undefined, filter });
      return {
        items: hits.map((hit) => ({ ...toVdbRecordView(hit.record, ctx.params.className), score: hit.score, distance: hit.distance })),
        total: hits.length,
        page: 1 as const,
        size: (limit as number | undefined) ?? ctx.get(VdbService).defaultLimit,
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tool/vdb/:className/:id',
    summary: 'Read a record',
    tags,
    auth: toolAuth,
    params: VdbRecordParams,
    response: { schema: vdbRecordSchema },
    errors: { 404: recordMissing },
    async handler(ctx) {
      const { service, teamId } = await scope(ctx);
      return toVdbRecordView(await service.get(ctx.em, teamId, ctx.params.className, ctx.params.id), ctx.params.className);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tool/vdb/:className',
    summary: 'Add a record (creates the collection on its first record)',
    tags,
    auth: toolAuth,
    params: VdbCollectionParams,
    body: VdbCreateBody,
    response: { status: 201, schema: vdbRecordSchema },
    errors: { 400: 'Malformed body, or you belong to no team (no_team)', 422: processing },
    async handler(ctx) {
      const tagList = checkTags(ctx.body.tags);
      const { service, teamId } = await scope(ctx);
      const record = await service.create(ctx.em, teamId, ctx.params.className, { content: ctx.body.content, tags: tagList, metadata: ctx.body.metadata });
      return Reply.json(toVdbRecordView(record, ctx.params.className), 201);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tool/vdb/:className/batch',
    summary: 'Add many records at once (creates the collection on its first records)',
    description: 'Up to 1,000 records: their contents are embedded in batches and all are written in one transaction, so either every record is added or none. Answers them in the order sent.',
    tags,
    auth: toolAuth,
    params: VdbCollectionParams,
    body: VdbBatchCreateBody,
    // A thousand records of up to 100,000 characters each.
    maxBodyBytes: 64 * 1024 * 1024,
    response: { status: 201, schema: vdbBatchSchema },
    errors: { 400: 'Malformed body, or you belong to no team (no_team)', 413: 'The body is larger than 64 MiB (payload_too_large)', 422: processing },
    async handler(ctx) {
      ctx.body.records.forEach((record, index) => checkTags(record.tags, `records.${index}.`));
      const { service, teamId } = await scope(ctx);
      const records = await service.createMany(ctx.em, teamId, ctx.params.className, ctx.body.records.map((record) => ({ content: record.content, tags: record.tags as VdbTag[] | undefined, metadata: record.metadata })));
      return Reply.json({ items: records.map((record) => toVdbRecordView(record, ctx.params.className)), total: records.length }, 201);
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/tool/vdb/:className/:id',
    summary: 'Update a record (the fields given)',
    description: 'A new `content` is embedded again; `tags` and `metadata` replace the stored ones.',
    tags,
    auth: toolAuth,
    params: VdbRecordParams,
    body: VdbUpdateBody,
    response: { schema: vdbRecordSchema },
    errors: { 400: 'Malformed body', 404: recordMissing, 422: processing },
    async handler(ctx) {
      const tagList = checkTags(ctx.body.tags);
      const { service, teamId } = await scope(ctx);
      const record = await service.update(ctx.em, teamId, ctx.params.className, ctx.params.id, { content: ctx.body.content, tags: tagList, metadata: ctx.body.metadata });
      return toVdbRecordView(record, ctx.params.className);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/tool/vdb/:className/:id',
    summary: 'Delete a record (irreversible)',
    tags,
    auth: toolAuth,
    params: VdbRecordParams,
    response: { schema: vdbDeletedSchema },
    errors: { 404: recordMissing },
    async handler(ctx) {
      const { service, teamId } = await scope(ctx);
      await service.delete(ctx.em, teamId, ctx.params.className, ctx.params.id);
      return { id: ctx.params.id, deleted: true as const };
    },
  }),
];
