import { EntitySchema } from '@mikro-orm/core';

/**
 * Where a run was started from: the document API (`document`), the Block API (`block`, `test`,
 * `api`: `POST /block/{bid}/api`, and a sub-workflow's child), or a trigger of a deployment: an
 * inbound webhook (`webhook`), a schedule (`schedule`), an MCP tool call (`mcp`), the
 * OpenAI-compatible endpoint (`openai`), or an evaluation of a dataset (`evaluation`).
 */
export const runSources = ['document', 'block', 'test', 'api', 'webhook', 'schedule', 'mcp', 'openai', 'evaluation'] as const;
export type RunSource = (typeof runSources)[number];

/** The sources of a deployment's runs: what a deployment's budget counts (docs/runs.md, "Budgets"). */
export const deploymentRunSources = ['api', 'webhook', 'schedule', 'mcp', 'openai', 'evaluation'] as const satisfies readonly RunSource[];
export type DeploymentRunSource = (typeof deploymentRunSources)[number];

/**
 * Lifecycle: `queued` → `running` → `completed` | `failed` | `timed_out` | `cancelled`, with
 * `running` → `waiting` (an ask block) → `queued` (resume) in between.
 */
export const runStatuses = ['queued', 'running', 'waiting', 'completed', 'failed', 'timed_out', 'cancelled'] as const;
export type RunStatus = (typeof runStatuses)[number];
export const terminalRunStatuses: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'timed_out', 'cancelled']);

export type BlockSessionStatus = 'pending' | 'running' | 'completed' | 'failed' | 'waiting' | 'skipped';

/** The spec's Run session, plus what Trellis records about the block's execution. */
export interface BlockSession {
  blockId: string;
  blockType: string;
  blockName: string;
  status: BlockSessionStatus;
  /** The output as text (JSON for non-string values); '' until the block completes. */
  output: string;
  error?: { code: string; message: string };
  console?: Array<{ level: string; text: string }>;
  /** Failed attempts of a block with a retry policy or a fallback (blocks/failure-policy.ts). */
  attempts?: Array<{ attempt: number; code: string; message: string }>;
  /** The block's output is its fallback: every attempt failed. */
  fallback?: boolean;
  /** A sub-workflow block: the child run it started. */
  childRunId?: string;
  startedAt?: string;
  finishedAt?: string;
  durationMs?: number;
  /**
   * Set on the execution of a block inside a branch, loop or parallel block: where it ran
   * (docs/runs.md, "Control flow"), as its events say. Top-level blocks have none.
   */
  path?: string;
  iteration?: number;
  branch?: string;
  /** A block inside a container, once done (completed, skipped, or failed and continued): its output, for a continuation. Not public. */
  value?: unknown;
}

/** One entry of the run's context: an input, a block's output, or a text block's text. */
export interface CtxEntry {
  name: string;
  blockId: string;
  blockType: string;
  value: unknown;
}

export interface RunUsage {
  /** Tokens per model id. */
  models: Record<string, { inputTokens: number; outputTokens: number; calls: number }>;
  /** Milliseconds spent inside the code sandbox. */
  sandboxMs: number;
}

/** Why and where a run waits. Without `reason` it waits for an ask block's answer. */
export interface RunWaiting {
  blockId: string;
  question: string;
  reason?: 'budget';
  /** A budget wait: which budget (`run`, or the `deployment`'s), its credits, what was spent, and what the next call holds. */
  budget?: { scope: 'run' | 'deployment'; credits: number; spent: number; required: number };
  /** A budget wait inside a container: where the call was. */
  path?: string;
}

/**
 * A run of a workflow (a document's top-level blocks). The run keeps its own copy of the content
 * it executes, and a checkpoint after every block (`cursor`, `sessions`, `ctx`), so a
 * continuation (resume after an ask, a retry after a lost worker) starts from the last completed
 * block. Its events are in `RunEvent`, numbered by `seq`.
 */
export class Run {
  id!: string;
  documentId!: string | null;
  projectId!: string | null;
  teamId!: string | null;
  userId!: string;
  source!: RunSource;
  version!: string | null;
  status!: RunStatus;
  inputs!: Record<string, unknown>;
  content!: unknown;
  /** Index of the next top-level block to execute. */
  cursor!: number;
  sessions!: BlockSession[];
  ctx!: CtxEntry[];
  output!: unknown;
  error!: { code: string; message: string } | null;
  usage!: RunUsage;
  /** `stop` or `continue` after a failed block, for blocks that do not say. */
  onError!: 'stop' | 'continue';
  timeoutSeconds!: number;
  timedOut!: boolean;
  reservationId!: string | null;
  reservedCredits!: number;
  usedCredits!: number | null;
  /** Sequence numbers below this one may have been handed out; a new attempt starts here. */
  seqCeiling!: number;
  /** Executions started (a retry after a lost worker is a new attempt). */
  attempt!: number;
  /** Set while the run waits: for an ask block's answer (no `reason`), or for a budget (`reason: 'budget'`). */
  waiting!: RunWaiting | null;
  /** The answer given with resume, consumed by the continuation. */
  answer!: unknown;
  cancelRequested!: boolean;
  heartbeatAt!: Date | null;
  startedAt!: Date | null;
  /** When the current execution must end: the first start, or the last resume, plus the timeout. */
  deadlineAt!: Date | null;
  finishedAt!: Date | null;
  durationMs!: number | null;
  /**
   * The `Idempotency-Key` the run was started with, and whose it is (`idempotencyScope`: the
   * caller), so a retried POST attaches to this run; `requestHash` is the SHA-256 of what the
   * request asked for (a reuse of the key for another request answers 422).
   */
  idempotencyKey!: string | null;
  idempotencyScope!: string | null;
  requestHash!: string | null;
  /** A sub-workflow's run: the run and block that started it (blocks/kinds/subworkflow.ts); its depth below the top run. */
  parentRunId!: string | null;
  parentBlockId!: string | null;
  depth!: number;
  /** The run's budget in credits (null: none); docs/runs.md, "Budgets". A sub-workflow's run has none: its root's bounds it. */
  budgetCredits!: number | null;
  /** The run whose budget bounds this one: itself, or for a sub-workflow's run the top run above it. */
  budgetRootId!: string | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const RunSchema = new EntitySchema<Run>({
  class: Run,
  tableName: 'runs',
  indexes: [{ properties: ['documentId', 'createdAt'] }, { properties: ['parentRunId'] }, { properties: ['budgetRootId'] }, { properties: ['projectId', 'createdAt'] }, { properties: ['status', 'heartbeatAt'] }],
  uniques: [{ properties: ['idempotencyScope', 'idempotencyKey'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    documentId: { type: 'uuid', nullable: true },
    projectId: { type: 'uuid', nullable: true },
    teamId: { type: 'uuid', nullable: true },
    userId: { type: 'uuid' },
    source: { type: 'string', length: 16 },
    version: { type: 'string', length: 64, nullable: true },
    status: { type: 'string', length: 16 },
    inputs: { type: 'json', columnType: 'json' },
    content: { type: 'json', columnType: 'json' },
    cursor: { type: 'integer', default: 0 },
    sessions: { type: 'json', columnType: 'json' },
    ctx: { type: 'json', columnType: 'json' },
    output: { type: 'json', columnType: 'json', nullable: true },
    error: { type: 'json', columnType: 'json', nullable: true },
    usage: { type: 'json', columnType: 'json' },
    onError: { type: 'string', length: 16 },
    timeoutSeconds: { type: 'integer' },
    timedOut: { type: 'boolean', default: false },
    reservationId: { type: 'uuid', nullable: true },
    reservedCredits: { type: 'integer', default: 0 },
    usedCredits: { type: 'integer', nullable: true },
    seqCeiling: { type: 'integer', default: 0 },
    attempt: { type: 'integer', default: 0 },
    waiting: { type: 'json', columnType: 'json', nullable: true },
    answer: { type: 'json', columnType: 'json', nullable: true },
    cancelRequested: { type: 'boolean', default: false },
    heartbeatAt: { type: 'datetime', nullable: true },
    startedAt: { type: 'datetime', nullable: true },
    deadlineAt: { type: 'datetime', nullable: true },
    finishedAt: { type: 'datetime', nullable: true },
    durationMs: { type: 'integer', nullable: true },
    idempotencyKey: { type: 'string', length: 255, nullable: true },
    idempotencyScope: { type: 'string', length: 128, nullable: true },
    requestHash: { type: 'string', length: 64, nullable: true },
    parentRunId: { type: 'uuid', nullable: true },
    parentBlockId: { type: 'string', length: 128, nullable: true },
    depth: { type: 'integer', default: 0 },
    budgetCredits: { type: 'integer', nullable: true },
    budgetRootId: { type: 'uuid', nullable: true },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});
