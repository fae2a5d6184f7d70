import { Reply } from '../../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { pageOf, paging, PageQuery } from '../../../kernel/http/dto/paging.js';
import { blockAuth } from '../../blocks/index.js';
import { AddCasesBody, CreateDatasetBody, DatasetListQuery, DatasetParams } from '../dto/evaluations.dto.js';
import { DatasetService } from '../services/dataset.service.js';
import { datasetCaseListSchema, datasetCasePageSchema, datasetPageSchema, datasetSchema, toDatasetCaseView, toDatasetView } from '../views.js';

const tags = ['Evaluations'];
const missing = 'No such dataset, or no access to its block (dataset_not_found)';
const noWrite = "No write permission in the block's project (block_access_denied)";
const tooLarge = 'More cases than `evaluations.maxCases` (dataset_too_large); bad body (validation_failed)';

/** Datasets of cases for evaluations (docs/evaluations.md). */
export function datasetRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/datasets',
      summary: 'Create a dataset of cases for a block',
      tags,
      auth: blockAuth,
      body: CreateDatasetBody,
      response: { status: 201, schema: datasetSchema },
      errors: { 403: noWrite, 404: 'No such block, or no access to it (block_not_found)', 422: tooLarge },
      async handler(ctx) {
        return Reply.json(toDatasetView(await ctx.get(DatasetService).create(ctx.em, ctx.requirePrincipal(), ctx.body)), 201);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/datasets',
      summary: 'Datasets: those of one block, or those you created',
      tags,
      auth: blockAuth,
      query: DatasetListQuery,
      response: { schema: datasetPageSchema },
      errors: { 404: 'No such block, or no access to it (block_not_found)' },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(DatasetService).list(ctx.em, ctx.requirePrincipal(), ctx.query.blockId, p);
        return pageOf(items.map(toDatasetView), total, p);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/datasets/:datasetId',
      summary: 'One dataset',
      tags,
      auth: blockAuth,
      params: DatasetParams,
      response: { schema: datasetSchema },
      errors: { 404: missing },
      async handler(ctx) {
        return toDatasetView(await ctx.get(DatasetService).get(ctx.em, ctx.requirePrincipal(), ctx.params.datasetId));
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/datasets/:datasetId',
      summary: 'Delete a dataset, its cases and its evaluations',
      tags,
      auth: blockAuth,
      params: DatasetParams,
      response: { status: 204 },
      errors: { 403: noWrite, 404: missing },
      async handler(ctx) {
        await ctx.get(DatasetService).remove(ctx.em, ctx.requirePrincipal(), ctx.params.datasetId);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/datasets/:datasetId/cases',
      summary: 'Add cases: given ones, or taken from earlier runs of the block',
      description: 'Send `cases`, or `fromRuns` (run ids of the dataset\'s block; each run\'s inputs become a case, and with `expectOutput` its output the expectation).',
      tags,
      auth: blockAuth,
      params: DatasetParams,
      body: AddCasesBody,
      response: { status: 201, schema: datasetCaseListSchema },
      errors: { 403: noWrite, 404: missing, 422: `A run is not of this block, or did not complete with expectOutput (run_not_usable); ${tooLarge}` },
      async handler(ctx) {
        const created = await ctx.get(DatasetService).addCases(ctx.em, ctx.requirePrincipal(), ctx.params.datasetId, ctx.body);
        return { items: created.map(toDatasetCaseView) };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/datasets/:datasetId/cases',
      summary: "A dataset's cases, oldest first",
      tags,
      auth: blockAuth,
      params: DatasetParams,
      query: PageQuery,
      response: { schema: datasetCasePageSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(DatasetService).cases(ctx.em, ctx.requirePrincipal(), ctx.params.datasetId, p);
        return pageOf(items.map(toDatasetCaseView), total, p);
      },
    }),
  ];
}
