import type { EntityManager } from '@mikro-orm/core';
import { TrellisError } from '../../../kernel/errors.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { RowSink } from '../../../ports/database.js';
import type { RunCreditHold } from '../../../ports/run-store.js';
import { type DocumentService, ContentError, normalizeDocument } from '../../documents/index.js';
import { inputDefinitions, parseWorkflow, validateInputs, type InputDefinition } from '../blocks/workflow.js';
import { Run, type RunSource } from '../entities/run.entity.js';
import { runErrors } from '../errors.js';
import { startDebugRun } from './debug-run.js';
import type { RunEventRecord, RunEventText } from './event-text.js';
import { idempotencyOf, type RunIdempotency } from './idempotency.js';
import { localRun, type RunContext } from './run-context.js';
import { HoldFailed, holdWroteNothing, type RunCredits } from './run-credits.js';
import { initialState } from './run-engine.js';
import type { RunReader } from './run-reader.js';
import type { RunResult } from './run-result.js';
import { SEQ_BLOCK } from './stored-event-sink.js';

/** What `RunService.start` needs: the Block API and the document run route both call it. */
export interface StartRunInput {
  /** The user the run executes for (AI models and tools resolve for this user). */
  userId: string;
  /** The document whose content runs, or null for a run of given content only (block test runs). */
  documentId: string | null;
  projectId: string | null;
  /** The team whose credits pay; null answers 400 `no_team_associated`. */
  teamId: string | null;
  /** Document JSON `{ type: 'doc', content: [...] }`: the workflow. */
  content: unknown;
  inputs?: Record<string, unknown>;
  /** Input definitions that replace the workflow's input blocks for checking `inputs` (a deployment's). */
  inputDefinitions?: InputDefinition[];
  source: RunSource;
  /** The deployed version a run of a block deployment executes. */
  version?: string | null;
  /** Seconds; absent means `runs.defaultTimeoutSeconds`; more than `runs.maxTimeoutSeconds` is 400 `timeout_too_large`. */
  timeoutSeconds?: number;
  onError?: 'stop' | 'continue';
  /**
   * The caller's `Idempotency-Key` (see `idempotencyOf`): a stored run started with the same key
   * by the same caller within `runs.idempotencyKeyHours` is attached to instead of starting another.
   */
  idempotency?: RunIdempotency;
  /** A sub-workflow's run: the run and block that start it, and its depth (blocks/kinds/subworkflow.ts). */
  parent?: { runId: string; blockId: string; depth: number; budgetRootId?: string };
  /** The run's budget in credits (docs/runs.md, "Budgets"); null or absent: none. A sub-workflow's run has none of its own: its root's bounds it. */
  budget?: number | null;
  /**
   * true: a stored run (record, event log, queue, resumable, reconnectable). false: a debug run
   * executed in this process, with its events on the returned stream only and nothing stored.
   */
  store: boolean;
}

/** A started run: its event stream (from the start, or after a sequence number) and its final result. */
export interface StartedRun {
  runId: string;
  documentId: string | null;
  stored: boolean;
  /** An earlier run this request attached to (a repeated `Idempotency-Key`), not one it started. */
  attached?: boolean;
  events(after?: number, signal?: AbortSignal): AsyncIterable<RunEventRecord>;
  /** The same events in the batches they arrive in (what the HTTP writers use: one write per batch). */
  batches(after?: number, signal?: AbortSignal): AsyncIterable<RunEventText[]>;
  /** Resolves when the run completes, fails or waits for an answer. */
  result(): Promise<RunResult>;
}

export interface DocumentRunBody {
  inputs?: Record<string, unknown>;
  content?: unknown;
  timeout?: number;
  onError?: 'stop' | 'continue';
  /** The run's budget (null or absent: none). */
  budget?: { credits: number } | null;
}

/** A request's `budget` field as `StartRunInput.budget`. */
export const budgetOf = (budget: { credits: number } | null | undefined): number | null | undefined => (budget === undefined ? undefined : budget === null ? null : budget.credits);

/** The record of a new stored run, queued (attempt 0), as it is inserted. */
function newRunRecord(a: { runId: string; input: StartRunInput; content: unknown; values: Record<string, unknown>; onError: 'stop' | 'continue'; timeoutSeconds: number; idempotency: RunIdempotency | undefined; now: Date }): Run {
  const { runId, input, content, values, onError, timeoutSeconds, idempotency, now } = a;
  return {
    id: runId,
    documentId: input.documentId,
    projectId: input.projectId,
    teamId: input.teamId,
    userId: input.userId,
    source: input.source,
    version: input.version ?? null,
    status: 'queued',
    inputs: values,
    content,
    cursor: 0,
    sessions: [],
    ctx: [],
    output: null,
    error: null,
    usage: { models: {}, sandboxMs: 0 },
    onError,
    timeoutSeconds,
    timedOut: false,
    reservationId: null,
    reservedCredits: 0,
    usedCredits: null,
    seqCeiling: 0,
    attempt: 0,
    waiting: null,
    answer: null,
    cancelRequested: false,
    heartbeatAt: now,
    startedAt: null,
    deadlineAt: null,
    finishedAt: null,
    durationMs: null,
    idempotencyKey: idempotency?.key ?? null,
    idempotencyScope: idempotency?.scope ?? null,
    requestHash: idempotency?.requestHash ?? null,
    parentRunId: input.parent?.runId ?? null,
    parentBlockId: input.parent?.blockId ?? null,
    depth: input.parent?.depth ?? 0,
    budgetCredits: input.parent ? null : (input.budget ?? null),
    budgetRootId: input.parent ? (input.parent.budgetRootId ?? input.parent.runId) : runId,
    createdAt: now,
    updatedAt: now,
  } as Run;
}

/** Starting runs: the checks, the record with its credit hold, the queue; and attaching to a stored run. */
export class RunStarter {
  constructor(
    private readonly ctx: RunContext,
    private readonly credits: RunCredits,
    private readonly reader: RunReader,
    private readonly documents: DocumentService,
  ) {}

  /** The input definitions of a workflow (for the Block API's deployment and docs). */
  inputsOf(content: unknown): InputDefinition[] {
    return inputDefinitions(parseWorkflow(content, runErrors.invalidWorkflow, this.ctx.kinds));
  }

  /**
   * Starts a run of `input.content`. Checks, in order: the workflow (400 `invalid_workflow`), the
   * inputs (400 `invalid_inputs` with details), the timeout (400 `timeout_too_large`), the team
   * (400 `no_team_associated`), the credits (402 `insufficient_credits`, 500
   * `balance_check_failed`). A stored run is recorded and queued; a debug run starts executing in
   * this process.
   */
  async start(em: EntityManager, input: StartRunInput): Promise<StartedRun> {
    // A repeated request (same caller, same key): the run it started, before anything is checked
    // or reserved again. Debug runs store nothing, so they have nothing to attach to.
    const idempotency = input.store ? input.idempotency : undefined;
    if (idempotency) {
      const earlier = await this.idempotentRun(idempotency);
      if (earlier) return earlier;
    }
    const timeoutSeconds = input.timeoutSeconds ?? Math.min(this.ctx.config.defaultTimeoutSeconds, this.ctx.config.maxTimeoutSeconds);
    // The routes refuse other values; a caller from code gets the same answer (the column is an integer).
    if (!Number.isSafeInteger(timeoutSeconds) || timeoutSeconds < 1) {
      throw new TrellisError('bad_request', 'validation_failed', 'timeout must be a whole number of seconds, at least 1.', { details: [{ field: 'timeout', constraint: 'isInt', message: 'must be an integer of at least 1' }] });
    }
    if (timeoutSeconds > this.ctx.config.maxTimeoutSeconds) throw runErrors.timeoutTooLarge(timeoutSeconds, this.ctx.config.maxTimeoutSeconds);
    let content: unknown;
    try {
      content = normalizeDocument(input.content);
    } catch (error) {
      if (!(error instanceof ContentError)) throw error;
      throw new TrellisError('bad_request', 'invalid_content', `content: ${error.message}`, { details: [{ field: `content${error.path ? `.${error.path}` : ''}`, constraint: error.reason, message: error.message }] });
    }
    const blocks = parseWorkflow(content, runErrors.invalidWorkflow, this.ctx.kinds);
    const { values, issues } = validateInputs(input.inputDefinitions ?? inputDefinitions(blocks), input.inputs ?? {});
    if (issues.length) throw runErrors.invalidInputs(issues);
    if (!input.teamId) throw runErrors.noTeam();
    const runId = this.ctx.ids.next();
    const amount = await this.credits.estimate(blocks, values);
    const teamId = input.teamId;
    const held = { runId, teamId, userId: input.userId, amount };
    const hold = (tx: EntityManager, alone: boolean, rows: RowSink, id?: string) => this.credits.hold(tx, alone, rows, held, id);
    const holdFailed = (failure: HoldFailed) => this.credits.holdError(failure, runId);
    const now = this.ctx.clock.now();
    const onError = input.onError ?? this.ctx.config.onError;
    if (!input.store) {
      let reservationId: string | null = null;
      try {
        if (amount > 0) reservationId = await this.ctx.store.write((tx, rows, alone) => hold(tx, alone, rows), { atomic: holdWroteNothing, concurrent: true });
      } catch (error) {
        throw error instanceof HoldFailed ? holdFailed(error) : error;
      }
      return startDebugRun(this.ctx, this.credits, { runId, input, blocks, values, onError, timeoutSeconds, reservationId, amount, teamId });
    }
    // The run is inserted as is (not through the caller's unit of work: flushing it would also
    // write whatever it loaded back when SQLite sees its datetimes as changed).
    const run = newRunRecord({ runId, input, content, values, onError, timeoutSeconds, idempotency, now });
    const initial = initialState({ id: runId, documentId: input.documentId, userId: input.userId, blocks, inputs: values, onError, startedAt: now.getTime(), timeoutSeconds });
    run.sessions = initial.sessions;
    run.ctx = initial.ctx;
    // A free slot of the in-process queue: the run is stored already claimed for its first attempt
    // (as `execute` would claim it) and starts in the slot at once, without a claim of its own.
    // A sub-workflow's child runs in the slot its parent holds while it waits (see RunQueue.claim).
    const slot = this.ctx.consuming && this.ctx.queue.claim ? this.ctx.queue.claim(runId, input.teamId, { lent: input.parent !== undefined }) : null;
    if (slot) Object.assign(run, { status: 'running', attempt: 1, startedAt: now, deadlineAt: new Date(now.getTime() + timeoutSeconds * 1000) });
    // The credit hold and the run's record are one transaction: a hold without its run is never stored.
    try {
      const creditHold: RunCreditHold | null = amount > 0 ? { amount, take: hold, newId: () => this.ctx.ids.next(), wroteNothing: holdWroteNothing, grant: this.credits.grant(held, now) } : null;
      // The claim reserves the attempt's sequence numbers (see StoredEventSink.reserved); the run kept here has them from 0.
      const reservationId = await this.ctx.store.create(slot ? { ...run, seqCeiling: SEQ_BLOCK } : { ...run }, creditHold);
      if (reservationId) {
        run.reservationId = reservationId;
        run.reservedCredits = amount;
      }
    } catch (error) {
      slot?.cancel();
      if (idempotency && !(error instanceof HoldFailed)) {
        // A parallel request with the same key stored its run first (the key is unique per caller).
        const earlier = await this.idempotentRun(idempotency).catch((lookup: unknown) => {
          if (lookup instanceof TrellisError) throw lookup;
          return null;
        });
        if (earlier) return earlier;
      }
      throw error instanceof HoldFailed ? holdFailed(error) : error;
    }
    // The in-process queue executes the run here: its result can come from memory.
    if (this.ctx.consuming && this.ctx.queue.claim) Object.assign(localRun(this.ctx, runId), { stored: run, claimed: slot !== null });
    if (slot) {
      slot.start({ runId, teamId: input.teamId });
      return this.handle(runId, input.documentId);
    }
    try {
      await this.ctx.queue.enqueue({ runId, teamId: input.teamId });
    } catch (error) {
      this.ctx.local.delete(runId);
      throw error;
    }
    return this.handle(runId, input.documentId);
  }

  /**
   * The run an earlier request with this key started (its handle), or null: none, or one older
   * than `runs.idempotencyKeyHours` (its key is let go, so the key starts a new run). Another
   * request's key answers 422 `idempotency_key_reused`.
   */
  private async idempotentRun(idempotency: RunIdempotency): Promise<StartedRun | null> {
    const em = this.ctx.fork();
    const where = { idempotencyScope: idempotency.scope, idempotencyKey: idempotency.key };
    const earlier = await em.findOne(Run, where, { fields: ['id', 'documentId', 'requestHash', 'createdAt'] });
    if (!earlier) return null;
    if (earlier.createdAt.getTime() < this.ctx.clock.nowMs() - this.ctx.config.idempotencyKeyHours * 3_600_000) {
      await em.nativeUpdate(Run, { id: earlier.id, ...where }, { idempotencyKey: null, idempotencyScope: null, requestHash: null });
      return null;
    }
    if (earlier.requestHash !== idempotency.requestHash) throw runErrors.idempotencyKeyReused();
    return { ...this.handle(earlier.id, earlier.documentId), attached: true };
  }

  /** The handle of an earlier stored run of `documentId` (for the Block API's `runId`), or null. */
  async attach(em: EntityManager, documentId: string, runId: string, where: { source?: RunSource } = {}): Promise<StartedRun | null> {
    const run = await em.findOne(Run, { id: runId, documentId, ...(where.source ? { source: where.source } : {}) });
    return run ? this.handle(run.id, documentId) : null;
  }

  /** The started-run handle of a stored run. */
  handle(runId: string, documentId: string | null): StartedRun {
    return {
      runId,
      documentId,
      stored: true,
      events: (after = 0, signal) => this.reader.follow(runId, after, { endWhenWaiting: true, signal }),
      batches: (after = 0, signal) => this.reader.followBatches(runId, after, { endWhenWaiting: true, signal }),
      result: async () => {
        const local = this.ctx.local.get(runId);
        if (local) {
          const result = await local.promise;
          this.ctx.local.delete(runId);
          if (result) return result;
        }
        for await (const _event of this.reader.follow(runId, 0, { endWhenWaiting: true, fromEnd: true })) {
          // Wait for the end of the stream.
        }
        // The answer's fields only, in one prepared read (the ORM's read of the whole record cost
        // a queued run's accepting process more than the rest of its answer).
        return this.reader.result(runId);
      },
    };
  }

  /** `POST /documents/:id/run`: execute permission on the document, its project's team pays. */
  async startDocumentRun(em: EntityManager, principal: Principal, documentId: string, body: DocumentRunBody, idempotencyKey?: string): Promise<StartedRun> {
    const { doc } = await this.documents.requireDocument(em, documentId, principal, 'execute');
    const debug = body.content !== undefined;
    const idempotency = idempotencyOf(idempotencyKey, `user:${principal.userId}`, { run: 'document', documentId, inputs: body.inputs ?? {}, timeout: body.timeout ?? null, onError: body.onError ?? null, ...(body.budget !== undefined ? { budget: body.budget } : {}) });
    return this.start(em, {
      userId: principal.userId,
      documentId: doc.id,
      projectId: doc.project.id,
      teamId: doc.project.team?.id ?? null,
      content: debug ? body.content : doc.content,
      inputs: body.inputs,
      source: 'document',
      timeoutSeconds: body.timeout,
      onError: body.onError,
      budget: budgetOf(body.budget),
      idempotency,
      store: !debug,
    });
  }
}
