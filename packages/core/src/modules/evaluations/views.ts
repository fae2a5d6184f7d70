import { dateTime, jsonObject, nullable, pageSchema, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import type { Dataset, DatasetCase } from './entities/dataset.entity.js';
import { caseStatuses, evaluationStatuses, type Evaluation, type EvaluationResult, type EvaluationSummary } from './entities/evaluation.entity.js';
import type { Comparison } from './services/evaluation.service.js';

/** The dataset and evaluation responses, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
const error = nullable(Type.Object({ code: Type.String(), message: Type.String() }));
const nullableNumber = () => nullable(Type.Number());

export const datasetSchema = Type.Object({ id: uuid(), blockId: uuid(), name: Type.String(), caseCount: Type.Integer(), createdBy: uuid(), createdAt: dateTime(), updatedAt: dateTime() });
export type DatasetView = Static<typeof datasetSchema>;
export const datasetPageSchema = pageSchema(datasetSchema);

export const toDatasetView = (d: Dataset): DatasetView => ({
  id: d.id,
  blockId: d.block.id,
  name: d.name,
  caseCount: d.caseCount,
  createdBy: d.createdBy.id,
  createdAt: d.createdAt.toISOString(),
  updatedAt: d.updatedAt.toISOString(),
});

export const datasetCaseSchema = Type.Object({
  id: uuid(),
  datasetId: uuid(),
  name: nullable(Type.String()),
  inputs: jsonObject({ additionalProperties: true }),
  expected: Type.Unknown({ description: 'What the output should be (any JSON value), or null.' }),
  sourceRunId: nullable(uuid(), { description: 'The run the case was taken from (`fromRuns`).' }),
  createdAt: dateTime(),
});
export type DatasetCaseView = Static<typeof datasetCaseSchema>;
export const datasetCasePageSchema = pageSchema(datasetCaseSchema);
export const datasetCaseListSchema = Type.Object({ items: Type.Array(datasetCaseSchema) });

export const toDatasetCaseView = (c: DatasetCase): DatasetCaseView => ({
  id: c.id,
  datasetId: c.dataset.id,
  name: c.name,
  inputs: c.inputs,
  expected: c.expected ?? null,
  sourceRunId: c.sourceRunId,
  createdAt: c.createdAt.toISOString(),
});

const summarySchema = Type.Object({
  cases: Type.Integer(),
  passed: Type.Integer({ description: 'Cases whose run completed and every evaluator passed.' }),
  failed: Type.Integer({ description: 'Cases whose run completed and some evaluator failed.' }),
  errored: Type.Integer({ description: 'Cases whose run did not complete (failed, timed out, waited for an answer, could not start).' }),
  meanScore: nullable(Type.Number(), { description: 'Mean case score (0 to 1) over completed cases; null before any.' }),
  credits: Type.Integer({ description: 'Credits of the runs and of judge calls.' }),
  latencyMs: Type.Object({ p50: nullableNumber(), p95: nullableNumber() }, { description: 'Run durations (nearest rank); null before any.' }),
});

export const evaluationSchema = Type.Object({
  id: uuid(),
  datasetId: uuid(),
  blockId: uuid(),
  version: Type.String(),
  status: stringEnum(evaluationStatuses),
  evaluators: Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true })),
  concurrency: Type.Integer(),
  summary: summarySchema,
  error: nullable(Type.Object({ code: Type.String(), message: Type.String() }), { description: 'Why a `failed` evaluation could not run (the version or block is gone).' }),
  createdBy: uuid(),
  createdAt: dateTime(),
  startedAt: nullable(dateTime()),
  finishedAt: nullable(dateTime()),
});
export type EvaluationView = Static<typeof evaluationSchema>;
export const evaluationPageSchema = pageSchema(evaluationSchema);

export const toEvaluationView = (e: Evaluation, summary: EvaluationSummary): EvaluationView => ({
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

const scoreSchema = Type.Object({
  evaluator: Type.String({ description: 'The evaluator\'s type, with `:path` when it judges a field.' }),
  score: Type.Number(),
  passed: Type.Boolean(),
  detail: nullable(Type.String(), { description: 'Why it failed, or the judge\'s reason.' }),
  credits: Type.Optional(Type.Integer({ description: 'Credits of a judge\'s model call.' })),
});

export const evaluationResultSchema = Type.Object({
  caseId: uuid(),
  caseName: nullable(Type.String()),
  runId: nullable(uuid(), { description: 'The case\'s run (GET /documents/{blockId}/runs/{runId}).' }),
  status: stringEnum(caseStatuses),
  output: Type.Unknown({ description: 'The run\'s output (any JSON value), or null.' }),
  scores: Type.Array(scoreSchema),
  score: nullable(Type.Number(), { description: 'The weighted mean of the scores.' }),
  passed: Type.Boolean({ description: 'The run completed and every evaluator passed.' }),
  credits: Type.Integer(),
  latencyMs: nullable(Type.Integer()),
  error,
});
export type EvaluationResultView = Static<typeof evaluationResultSchema>;
export const evaluationResultPageSchema = pageSchema(evaluationResultSchema);

export const toEvaluationResultView = (r: EvaluationResult): EvaluationResultView => ({
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

const sideSchema = Type.Object({ passed: Type.Boolean(), score: nullableNumber(), output: Type.Unknown() });
const changes = ['improved', 'regressed', 'unchanged', 'changed'] as const;

export const comparisonSchema = Type.Object({
  base: evaluationSchema,
  candidate: evaluationSchema,
  summary: Type.Object({ improved: Type.Integer(), regressed: Type.Integer(), unchanged: Type.Integer(), changed: Type.Integer() }),
  cases: Type.Array(Type.Object({ caseId: uuid(), caseName: nullable(Type.String()), base: sideSchema, candidate: sideSchema, change: stringEnum(changes) })),
});
export type ComparisonView = Static<typeof comparisonSchema>;

export const toComparisonView = (c: Comparison, summaries: { base: EvaluationSummary; candidate: EvaluationSummary }): ComparisonView => ({
  base: toEvaluationView(c.base, summaries.base),
  candidate: toEvaluationView(c.candidate, summaries.candidate),
  summary: c.summary,
  cases: c.cases,
});
