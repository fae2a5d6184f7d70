import { EntitySchema } from '@mikro-orm/core';
import { Block } from '../../blocks/index.js';
import { User } from '../../identity/index.js';
import type { EvaluatorSpec, EvaluatorScore } from '../services/evaluators.js';
import { Dataset } from './dataset.entity.js';

export const evaluationStatuses = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type EvaluationStatus = (typeof evaluationStatuses)[number];

/** A case's state in an evaluation: waiting, its run going on, scored, its run did not complete, or dropped by a cancel. */
export const caseStatuses = ['pending', 'running', 'completed', 'errored', 'cancelled'] as const;
export type CaseStatus = (typeof caseStatuses)[number];

export interface EvaluationSummary {
  cases: number;
  passed: number;
  failed: number;
  errored: number;
  meanScore: number | null;
  credits: number;
  latencyMs: { p50: number | null; p95: number | null };
}

/**
 * One deployed version of a block run over every case of a dataset, scored by evaluators. The
 * process driving it renews `heartbeatAt`; another process takes over an evaluation whose
 * heartbeat stopped (see `EvaluationRunner`).
 */
export class Evaluation {
  id!: string;
  dataset!: Dataset;
  block!: Block;
  createdBy!: User;
  version!: string;
  evaluators!: EvaluatorSpec[];
  concurrency!: number;
  status!: EvaluationStatus;
  summary!: EvaluationSummary | null;
  error!: { code: string; message: string } | null;
  heartbeatAt!: Date | null;
  createdAt!: Date;
  startedAt!: Date | null;
  finishedAt!: Date | null;
}

export const EvaluationSchema = new EntitySchema<Evaluation>({
  class: Evaluation,
  tableName: 'evaluations',
  indexes: [{ properties: ['status', 'heartbeatAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    dataset: { kind: 'm:1', entity: () => Dataset, deleteRule: 'cascade', index: true },
    block: { kind: 'm:1', entity: () => Block, deleteRule: 'cascade', index: true },
    createdBy: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    version: { type: 'string', length: 32 },
    evaluators: { type: 'json' },
    concurrency: { type: 'integer' },
    status: { type: 'string', length: 16 },
    summary: { type: 'json', nullable: true },
    error: { type: 'json', nullable: true },
    heartbeatAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    startedAt: { type: 'datetime', nullable: true },
    finishedAt: { type: 'datetime', nullable: true },
  },
});

/** One case of an evaluation: its run, the output, each evaluator's score, and what it cost. */
export class EvaluationResult {
  id!: string;
  evaluation!: Evaluation;
  caseId!: string;
  caseName!: string | null;
  position!: number;
  inputs!: Record<string, unknown>;
  expected!: unknown;
  runId!: string | null;
  status!: CaseStatus;
  output!: unknown;
  scores!: EvaluatorScore[];
  score!: number | null;
  passed!: boolean | null;
  credits!: number;
  latencyMs!: number | null;
  error!: { code: string; message: string } | null;
}

export const EvaluationResultSchema = new EntitySchema<EvaluationResult>({
  class: EvaluationResult,
  tableName: 'evaluation_results',
  uniques: [{ properties: ['evaluation', 'position'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    evaluation: { kind: 'm:1', entity: () => Evaluation, deleteRule: 'cascade' },
    caseId: { type: 'uuid' },
    caseName: { type: 'string', length: 200, nullable: true },
    position: { type: 'integer' },
    inputs: { type: 'json' },
    expected: { type: 'json', nullable: true },
    runId: { type: 'uuid', nullable: true },
    status: { type: 'string', length: 16 },
    output: { type: 'json', nullable: true },
    scores: { type: 'json' },
    score: { type: 'double', nullable: true },
    passed: { type: 'boolean', nullable: true },
    credits: { type: 'integer' },
    latencyMs: { type: 'integer', nullable: true },
    error: { type: 'json', nullable: true },
  },
});
