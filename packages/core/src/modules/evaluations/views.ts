import type { Dataset, DatasetCase } from './entities/dataset.entity.js';
import { caseStatuses, evaluationStatuses, type Evaluation, type EvaluationResult, type EvaluationSummary } from './entities/evaluation.entity.js';
import type { Comparison } from './services/evaluation.service.js';

const dateTime = { type: 'string', format: 'date-time' } as const;
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' } as const;
const uuid = { type: 'string', format: 'uuid' } as const;
const nullableNumber = { type: ['number', 'null'] } as const;
const error = { type: ['object', 'null'], required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } } as const;
const page = (items: Record<string, unknown>) => ({
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
});

export const datasetSchema = {
  type: 'object',
  required: ['id', 'blockId', 'name', 'caseCount', 'createdBy', 'createdAt', 'updatedAt'],
  properties: { id: uuid, blockId: uuid, name: { type: 'string' }, caseCount: { type: 'integer' }, createdBy: uuid, createdAt: dateTime, updatedAt: dateTime },
};
export const datasetPageSchema = page(datasetSchema);

export const toDatasetView = (d: Dataset) => ({
  id: d.id,
  blockId: d.block.id,
  name: d.name,
  caseCount: d.caseCount,
  createdBy: d.createdBy.id,
  createdAt: d.createdAt.toISOString(),
  updatedAt: d.updatedAt.toISOString(),
});

export const datasetCaseSchema = {
  type: 'object',
  required: ['id', 'datasetId', 'name', 'inputs', 'expected', 'sourceRunId', 'createdAt'],
  properties: {
    id: uuid,
    datasetId: uuid,
    name: { type: ['string', 'null'] },
    inputs: { type: 'object', additionalProperties: true },
    expected: { description: 'What the output should be (any JSON value), or null.' },
    sourceRunId: { type: ['string', 'null'], format: 'uuid', description: 'The run the case was taken from (`fromRuns`).' },
    createdAt: dateTime,
  },
};
export const datasetCasePageSchema = page(datasetCaseSchema);
export const datasetCaseListSchema = { type: 'object', required: ['items'], properties: { items: { type: 'array', items: datasetCaseSchema } } };

export const toDatasetCaseView = (c: DatasetCase) => ({
  id: c.id,
  datasetId: c.dataset.id,
  name: c.name,
  inputs: c.inputs,
  expected: c.expected ?? null,
  sourceRunId: c.sourceRunId,
  createdAt: c.createdAt.toISOString(),
});

const summarySchema = {
  type: 'object',
  required: ['cases', 'passed', 'failed', 'errored', 'meanScore', 'credits', 'latencyMs'],
  properties: {
    cases: { type: 'integer' },
    passed: { type: 'integer', description: 'Cases whose run completed and every evaluator passed.' },
    failed: { type: 'integer', description: 'Cases whose run completed and some evaluator failed.' },
    errored: { type: 'integer', description: 'Cases whose run did not complete (failed, timed out, waited for an answer, could not start).' },
    meanScore: { ...nullableNumber, description: 'Mean case score (0 to 1) over completed cases; null before any.' },
    credits: { type: 'integer', description: 'Credits of the runs and of judge calls.' },
    latencyMs: { type: 'object', required: ['p50', 'p95'], properties: { p50: nullableNumber, p95: nullableNumber }, description: 'Run durations (nearest rank); null before any.' },
  },
};

export const evaluationSchema = {
  type: 'object',
  required: ['id', 'datasetId', 'blockId', 'version', 'status', 'evaluators', 'concurrency', 'summary', 'error', 'createdBy', 'createdAt', 'startedAt', 'finishedAt'],
  properties: {
    id: uuid,
    datasetId: uuid,
    blockId: uuid,
    version: { type: 'string' },
    status: { type: 'string', enum: [...evaluationStatuses] },
    evaluators: { type: 'array', items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } }, additionalProperties: true } },
    concurrency: { type: 'integer' },
    summary: summarySchema,
    error: { ...error, description: 'Why a `failed` evaluation could not run (the version or block is gone).' },
    createdBy: uuid,
    createdAt: dateTime,
    startedAt: nullableDateTime,
    finishedAt: nullableDateTime,
  },
};
export const evaluationPageSchema = page(evaluationSchema);

export const toEvaluationView = (e: Evaluation, summary: EvaluationSummary) => ({
  id: e.id,
  datasetId: e.dataset.id,
  blockId: e.block.id,
  version: e.version,
  status: e.status,
  evaluators: e.evaluators,
  concurrency: e.concurrency,
  summary,
  error: e.error ?? null,
  createdBy: e.createdBy.id,
  createdAt: e.createdAt.toISOString(),
  startedAt: e.startedAt?.toISOString() ?? null,
  finishedAt: e.finishedAt?.toISOString() ?? null,
});

const scoreSchema = {
  type: 'object',
  required: ['evaluator', 'score', 'passed', 'detail'],
  properties: {
    evaluator: { type: 'string', description: 'The evaluator\'s type, with `:path` when it judges a field.' },
    score: { type: 'number' },
    passed: { type: 'boolean' },
    detail: { type: ['string', 'null'], description: 'Why it failed, or the judge\'s reason.' },
    credits: { type: 'integer', description: 'Credits of a judge\'s model call.' },
  },
};

export const evaluationResultSchema = {
  type: 'object',
  required: ['caseId', 'caseName', 'runId', 'status', 'output', 'scores', 'score', 'passed', 'credits', 'latencyMs', 'error'],
  properties: {
    caseId: uuid,
    caseName: { type: ['string', 'null'] },
    runId: { type: ['string', 'null'], format: 'uuid', description: 'The case\'s run (GET /documents/{blockId}/runs/{runId}).' },
    status: { type: 'string', enum: [...caseStatuses] },
    output: { description: 'The run\'s output (any JSON value), or null.' },
    scores: { type: 'array', items: scoreSchema },
    score: { ...nullableNumber, description: 'The weighted mean of the scores.' },
    passed: { type: 'boolean', description: 'The run completed and every evaluator passed.' },
    credits: { type: 'integer' },
    latencyMs: { type: ['integer', 'null'] },
    error: error,
  },
};
export const evaluationResultPageSchema = page(evaluationResultSchema);

export const toEvaluationResultView = (r: EvaluationResult) => ({
  caseId: r.caseId,
  caseName: r.caseName,
  runId: r.runId,
  status: r.status,
  output: r.output ?? null,
  scores: r.scores,
  score: r.score ?? null,
  passed: r.passed === true,
  credits: r.credits,
  latencyMs: r.latencyMs,
  error: r.error ?? null,
});

const sideSchema = { type: 'object', required: ['passed', 'score', 'output'], properties: { passed: { type: 'boolean' }, score: nullableNumber, output: {} } };
const changes = ['improved', 'regressed', 'unchanged', 'changed'];

export const comparisonSchema = {
  type: 'object',
  required: ['base', 'candidate', 'summary', 'cases'],
  properties: {
    base: evaluationSchema,
    candidate: evaluationSchema,
    summary: { type: 'object', required: changes, properties: Object.fromEntries(changes.map((c) => [c, { type: 'integer' }])) },
    cases: {
      type: 'array',
      items: {
        type: 'object',
        required: ['caseId', 'caseName', 'base', 'candidate', 'change'],
        properties: { caseId: uuid, caseName: { type: ['string', 'null'] }, base: sideSchema, candidate: sideSchema, change: { type: 'string', enum: changes } },
      },
    },
  },
};

export const toComparisonView = (c: Comparison, summaries: { base: EvaluationSummary; candidate: EvaluationSummary }) => ({
  base: toEvaluationView(c.base, summaries.base),
  candidate: toEvaluationView(c.candidate, summaries.candidate),
  summary: c.summary,
  cases: c.cases,
});
