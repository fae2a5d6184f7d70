import { Reply } from '../../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { pageOf, paging, PageQuery } from '../../../kernel/http/dto/paging.js';
import { blockAuth } from '../../blocks/index.js';
import { CompareQuery, CreateEvaluationBody, EvaluationListQuery, EvaluationParams } from '../dto/evaluations.dto.js';
import { EvaluationService } from '../services/evaluation.service.js';
import { comparisonSchema, evaluationPageSchema, evaluationResultPageSchema, evaluationSchema, toComparisonView, toEvaluationResultView, toEvaluationView } from '../views.js';

const tags = ['Evaluations'];
const missing = 'No such evaluation, or no access to its block (evaluation_not_found)';

/** Evaluations of deployed versions over datasets (docs/evaluations.md). */
export function evaluationRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/evaluations',
      summary: 'Evaluate a deployed version over a dataset',
      description: 'Queues one run of the version per case (at most `concurrency` at once) and scores each output with the evaluators. Follow it with GET /evaluations/{evaluationId}.',
      tags,
      auth: blockAuth,
      body: CreateEvaluationBody,
      response: { status: 202, schema: evaluationSchema },
      errors: {
        403: "No write permission in the block's project (block_access_denied)",
        404: 'No such block (block_not_found), dataset (dataset_not_found), deployment (deployment_not_found) or version (block_version_not_found)',
        422: 'An evaluator is invalid (invalid_evaluator); the dataset is of another block (dataset_block_mismatch) or has no cases (dataset_empty); concurrency above the maximum (concurrency_too_high); bad body (validation_failed)',
      },
      async handler(ctx) {
        const service = ctx.get(EvaluationService);
        const evaluation = await service.create(ctx.em, ctx.requirePrincipal(), ctx.body);
        return Reply.json(toEvaluationView(evaluation, await service.summaryOf(ctx.em, evaluation)), 202);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/evaluations',
      summary: 'Evaluations of a block or a dataset (or those you started), newest first',
      tags,
      auth: blockAuth,
      query: EvaluationListQuery,
      response: { schema: evaluationPageSchema },
      errors: { 404: 'No such block (block_not_found) or dataset (dataset_not_found), or no access to it' },
      async handler(ctx) {
        const service = ctx.get(EvaluationService);
        const p = paging(ctx.query);
        const { items, total } = await service.list(ctx.em, ctx.requirePrincipal(), { ...(ctx.query.blockId ? { blockId: ctx.query.blockId } : {}), ...(ctx.query.datasetId ? { datasetId: ctx.query.datasetId } : {}) }, p);
        const views = [];
        for (const item of items) views.push(toEvaluationView(item, await service.summaryOf(ctx.em, item)));
        return pageOf(views, total, p);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/evaluations/compare',
      summary: 'Compare two evaluations of the same dataset case by case',
      tags,
      auth: blockAuth,
      query: CompareQuery,
      response: { schema: comparisonSchema },
      errors: { 404: missing, 422: 'The evaluations ran different datasets (evaluations_not_comparable); bad query (validation_failed)' },
      async handler(ctx) {
        const service = ctx.get(EvaluationService);
        const comparison = await service.compare(ctx.em, ctx.requirePrincipal(), ctx.query.base, ctx.query.candidate);
        return toComparisonView(comparison, { base: await service.summaryOf(ctx.em, comparison.base), candidate: await service.summaryOf(ctx.em, comparison.candidate) });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/evaluations/:evaluationId',
      summary: 'One evaluation with its summary',
      tags,
      auth: blockAuth,
      params: EvaluationParams,
      response: { schema: evaluationSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const service = ctx.get(EvaluationService);
        const evaluation = await service.get(ctx.em, ctx.requirePrincipal(), ctx.params.evaluationId);
        return toEvaluationView(evaluation, await service.summaryOf(ctx.em, evaluation));
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/evaluations/:evaluationId/results',
      summary: "An evaluation's per-case results, in dataset order",
      tags,
      auth: blockAuth,
      params: EvaluationParams,
      query: PageQuery,
      response: { schema: evaluationResultPageSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const p = paging(ctx.query);
        const { items, total } = await ctx.get(EvaluationService).results(ctx.em, ctx.requirePrincipal(), ctx.params.evaluationId, p);
        return pageOf(items.map(toEvaluationResultView), total, p);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/evaluations/:evaluationId/cancel',
      summary: 'Cancel an evaluation (its runs going on are cancelled; no further case starts)',
      tags,
      auth: blockAuth,
      params: EvaluationParams,
      response: { schema: evaluationSchema },
      errors: { 403: "No write permission in the block's project (block_access_denied)", 404: missing, 409: 'The evaluation has already ended (evaluation_finished)' },
      async handler(ctx) {
        const service = ctx.get(EvaluationService);
        const evaluation = await service.cancel(ctx.em, ctx.requirePrincipal(), ctx.params.evaluationId);
        return toEvaluationView(evaluation, await service.summaryOf(ctx.em, evaluation));
      },
    }),
  ];
}
