import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Page, Paging } from '../../../kernel/http/dto/paging.js';
import { pageOf } from '../../../kernel/http/dto/paging.js';
import type { Kernel } from '../../../kernel/kernel.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import { entityManagerServiceIdentifier, hooksServiceIdentifier, kernelServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import type { Hooks, TrellisHooks } from '../../../kernel/hooks.js';
import { aiGatewayServiceIdentifier } from '../../../ports/ai-provider.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { codeSandboxServiceIdentifier } from '../../../ports/code-sandbox.js';
import type { PreparedStatements, RowSink } from '../../../ports/database.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { pubSubServiceIdentifier, type PubSub } from '../../../ports/pubsub.js';
import { runQueueServiceIdentifier, type RunJob, type RunQueue } from '../../../ports/run-queue.js';
import { CreditService } from '../../billing/services/credit.service.js';
import { canonicalJson } from '../../documents/content/canonical-json.js';
import { ContentError, normalizeDocument } from '../../documents/content/rich-text.js';
import { DocumentService } from '../../documents/services/document.service.js';
import { AskBlockExecutor, InputBlockExecutor, OutputBlockExecutor } from '../blocks/basic-executors.js';
import { LlmBlockExecutor, ToolBlockExecutor } from '../blocks/ai-executors.js';
import { CodeBlockExecutor } from '../blocks/code-executor.js';
import type { BlockExecutor } from '../blocks/executor.js';
import { inputDefinitions, parseWorkflow, validateInputs, type BlockKind, type InputDefinition, type WorkflowBlock } from '../blocks/workflow.js';
import { RunEvent } from '../entities/run-event.entity.js';
import { Run, terminalRunStatuses, type RunSource, type RunStatus } from '../entities/run.entity.js';
import { runErrors, runFailure } from '../errors.js';
import type { RunsConfig } from '../runs.config.js';
import { runsConfigServiceIdentifier } from '../tokens.js';
import { finishRun, insertRun, readRunResult, type RunResultFields } from '../queries.js';
import type { RunHookSubject } from '../hooks.js';
import '../hooks.js';
import { followRun, followRunBatches, LocalEventSink, runControlTopic, SEQ_BLOCK, StoredEventSink, type RunEventRecord, type RunEventText } from './event-log.js';
import { GroupCommit, RunAlone } from '../../../kernel/group-commit.js';
import { completion, initialState, outputOf, publicSession, RunCancelled, RunEngine, RunSuperseded, type RunPersistence, type RunState, type StopReason } from './run-engine.js';

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
  /**
   * true: a stored run (record, event log, queue, resumable, reconnectable). false: a debug run
   * executed in this process, with its events on the returned stream only and nothing stored.
   */
  store: boolean;
}

/** An `Idempotency-Key` with whose it is (`scope`) and the hash of the request it came with. */
export interface RunIdempotency {
  scope: string;
  key: string;
  requestHash: string;
}

/** sf-string or bare token: 1 to 255 visible ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The idempotency of a run start from its `Idempotency-Key` header (undefined without one; 400
 * `invalid_idempotency_key` for a malformed one): the key (a quoted sf-string as the IETF draft
 * writes it, or bare), the caller it belongs to, and a SHA-256 of what the request asks for
 * (`request`: endpoint, target and body fields that decide the run, keys in canonical order).
 */
export function idempotencyOf(header: string | undefined, scope: string, request: Record<string, unknown>): RunIdempotency | undefined {
  if (header === undefined) return undefined;
  let key = header.trim();
  if (key.length >= 2 && key.startsWith('"') && key.endsWith('"')) key = key.slice(1, -1).replace(/\\(["\\])/g, '$1');
  if (!IDEMPOTENCY_KEY.test(key)) throw runErrors.invalidIdempotencyKey();
  return { scope, key, requestHash: createHash('sha256').update(canonicalJson(request)).digest('hex') };
}

/** The 200 body of a run with `stream: false` (the spec's fields, plus status, output and error). */
export interface RunResult {
  runId: string;
  documentId: string | null;
  status: RunStatus;
  globalCtx: unknown[];
  sessions: Record<string, unknown>[];
  duration: number;
  timedOut: boolean;
  output: unknown;
  error: { code: string; message: string } | null;
  waiting: { blockId: string; question: string } | null;
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
}

const activeStatuses: RunStatus[] = ['queued', 'running'];

const subjectOf = (run: Run): RunHookSubject => ({
  runId: run.id,
  documentId: run.documentId,
  projectId: run.projectId,
  teamId: run.teamId,
  userId: run.userId,
  source: run.source,
  version: run.version,
});

/** The credit hold of a run failed (told apart from a failure to store the run). */
class HoldFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('The credit hold failed.');
  }
}

/** A failed hold wrote nothing when it failed with a TrellisError (see `CreditService.hold`); otherwise its transaction must roll back. */
const holdWroteNothing = (error: unknown): boolean => error instanceof HoldFailed && error.cause instanceof TrellisError;

/** A run this process executes: its result, handed to a waiting `stream: false` caller from memory (null: read it from the store). */
interface LocalRun {
  promise: Promise<RunResult | null>;
  resolve(result: RunResult | null): void;
  /** The run as it was stored (queued, attempt 0): its first execution here needs not read it back. */
  stored?: Run;
  /** The run was stored already claimed for its first attempt, in a slot of the in-process queue. */
  claimed?: boolean;
}

/** What closing a run's credit reservation does (worked out before the final write, applied in it). */
interface CreditClose {
  reservationId: string;
  used: number;
  release: boolean;
}

/**
 * The workflow runtime: starts runs (checking inputs, timeout and credits), executes queued runs
 * through the RunQueue port, resumes runs that wait for an answer, cancels, lists, and streams
 * runs' events from their log.
 */
@injectable()
export class RunService {
  private readonly engine: RunEngine;
  private readonly log: Logger;
  /** Runs queued on, or executing in, this process (in-process queue), by id. */
  private readonly local = new Map<string, LocalRun>();
  private consuming = false;
  /** The runs' writes (record, claim, events, checkpoints, credits): grouped into shared commits on SQLite. */
  private readonly group: GroupCommit;

  constructor(
    @inject(runsConfigServiceIdentifier) private readonly config: RunsConfig,
    @inject(entityManagerServiceIdentifier) private readonly rootEm: EntityManager,
    @inject(pubSubServiceIdentifier) private readonly pubsub: PubSub,
    @inject(runQueueServiceIdentifier) private readonly queue: RunQueue,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(CreditService) private readonly credits: CreditService,
    @inject(DocumentService) private readonly documents: DocumentService,
    @inject(kernelServiceIdentifier) private readonly kernel: Kernel,
    @inject(loggerServiceIdentifier) log: Logger,
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
  ) {
    this.log = log.child({ module: 'runs' });
    const executors: BlockExecutor[] = [
      new InputBlockExecutor(),
      new LlmBlockExecutor(() => this.optional(aiGatewayServiceIdentifier), config.maxToolRounds),
      new CodeBlockExecutor(() => this.optional(codeSandboxServiceIdentifier), { timeoutMs: config.codeTimeoutMs, memoryBytes: config.codeMemoryBytes }),
      new ToolBlockExecutor(() => this.optional(aiGatewayServiceIdentifier)),
      new AskBlockExecutor(),
      new OutputBlockExecutor(),
    ];
    this.engine = new RunEngine(new Map<BlockKind, BlockExecutor>(executors.map((e) => [e.kind, e])), {
      blockEvents: config.maxBlockEvents,
      blockBytes: config.maxBlockOutputBytes,
      runEvents: config.maxRunEvents,
      runBytes: config.maxRunOutputBytes,
    });
    this.group = new GroupCommit(this.fork, sql.dialect === 'sqlite', sql);
  }

  private optional<T>(id: symbol | import('inversify').ServiceIdentifier<T>): T | undefined {
    const { container } = this.kernel;
    return container.isBound(id) ? (container.get(id) as T) : undefined;
  }

  private readonly fork = (): EntityManager => this.rootEm.fork();

  // ---------------------------------------------------------------------------------------------
  // Starting

  /** The input definitions of a workflow (for the Block API's deployment and docs). */
  inputsOf(content: unknown): InputDefinition[] {
    return inputDefinitions(parseWorkflow(content, runErrors.invalidWorkflow));
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
    const timeoutSeconds = input.timeoutSeconds ?? Math.min(this.config.defaultTimeoutSeconds, this.config.maxTimeoutSeconds);
    // The routes refuse other values; a caller from code gets the same answer (the column is an integer).
    if (!Number.isSafeInteger(timeoutSeconds) || timeoutSeconds < 1) {
      throw new TrellisError('bad_request', 'validation_failed', 'timeout must be a whole number of seconds, at least 1.', { details: [{ field: 'timeout', constraint: 'isInt', message: 'must be an integer of at least 1' }] });
    }
    if (timeoutSeconds > this.config.maxTimeoutSeconds) throw runErrors.timeoutTooLarge(timeoutSeconds, this.config.maxTimeoutSeconds);
    let content: unknown;
    try {
      content = normalizeDocument(input.content);
    } catch (error) {
      if (!(error instanceof ContentError)) throw error;
      throw new TrellisError('bad_request', 'invalid_content', `content: ${error.message}`, { details: [{ field: `content${error.path ? `.${error.path}` : ''}`, constraint: error.reason, message: error.message }] });
    }
    const blocks = parseWorkflow(content, runErrors.invalidWorkflow);
    const { values, issues } = validateInputs(input.inputDefinitions ?? inputDefinitions(blocks), input.inputs ?? {});
    if (issues.length) throw runErrors.invalidInputs(issues);
    if (!input.teamId) throw runErrors.noTeam();
    const runId = this.ids.next();
    const amount = await this.estimate(blocks);
    const teamId = input.teamId;
    const hold = async (tx: EntityManager, alone: boolean, rows: RowSink, id?: string): Promise<string> => {
      try {
        return (await this.credits.hold(tx, { teamId, amount, reason: `run ${runId}`, userId: input.userId, ttlSeconds: this.config.reservationTtlSeconds, id }, { alone, rows })).id;
      } catch (error) {
        if (error instanceof RunAlone) throw error;
        throw new HoldFailed(error);
      }
    };
    const holdFailed = (failure: HoldFailed) => {
      const error = failure.cause;
      if (error instanceof TrellisError && error.code === 'insufficient_credits') return error;
      this.log.error({ err: error, runId }, 'credit balance check failed');
      return runErrors.balanceCheckFailed(error);
    };
    const now = this.clock.now();
    const onError = input.onError ?? this.config.onError;
    if (!input.store) {
      let reservationId: string | null = null;
      try {
        if (amount > 0) reservationId = await this.group.run(hold, { atomic: holdWroteNothing, concurrent: true });
      } catch (error) {
        throw error instanceof HoldFailed ? holdFailed(error) : error;
      }
      return this.startDebug({ runId, input, blocks, values, onError, timeoutSeconds, reservationId, amount, teamId });
    }
    // The run is inserted as is (not through the caller's unit of work: flushing it would also
    // write whatever it loaded back when SQLite sees its datetimes as changed).
    const run = {
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
      createdAt: now,
      updatedAt: now,
    } as Run;
    const initial = initialState({ id: runId, documentId: input.documentId, userId: input.userId, blocks, inputs: values, onError, startedAt: now.getTime(), timeoutSeconds });
    run.sessions = initial.sessions;
    run.ctx = initial.ctx;
    // A free slot of the in-process queue: the run is stored already claimed for its first attempt
    // (as `execute` would claim it) and starts in the slot at once, without a claim of its own.
    const slot = this.consuming && this.queue.claim ? this.queue.claim(runId, input.teamId) : null;
    if (slot) Object.assign(run, { status: 'running', attempt: 1, startedAt: now, deadlineAt: new Date(now.getTime() + timeoutSeconds * 1000) });
    // The credit hold and the run's record are one transaction: a hold without its run is never stored.
    try {
      await this.group.run(
        async (tx, alone, rows) => {
          if (amount > 0 && this.sql.dialect === 'postgresql') {
            // PostgreSQL: the run's record first, the hold last before the commit (it holds the
            // balance's row lock, which the team's other runs wait for, until then). The
            // reservation's id is chosen here so the record carries it.
            const reservationId = this.ids.next();
            await insertRun(rows, tx, { ...run, reservationId, reservedCredits: amount, ...(slot ? { seqCeiling: SEQ_BLOCK } : {}) } as Run);
            if ((await hold(tx, alone, rows, reservationId)) !== reservationId) throw new Error('The credit hold of a run took another reservation id.');
            run.reservationId = reservationId;
            run.reservedCredits = amount;
            return;
          }
          if (amount > 0) {
            run.reservationId = await hold(tx, alone, rows);
            run.reservedCredits = amount;
          }
          // The claim reserves the attempt's sequence numbers (see StoredEventSink.reserved); the run kept here has them from 0.
          await insertRun(rows, tx, slot ? { ...run, seqCeiling: SEQ_BLOCK } : run);
        },
        // A hold that failed with a domain error wrote nothing; a failed insert comes after the hold.
        { atomic: holdWroteNothing, concurrent: true },
      );
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
    if (this.consuming && this.queue.claim) Object.assign(this.localRun(runId), { stored: run, claimed: slot !== null });
    if (slot) {
      slot.start({ runId, teamId: input.teamId });
      return this.handle(runId, input.documentId);
    }
    try {
      await this.queue.enqueue({ runId, teamId: input.teamId });
    } catch (error) {
      this.local.delete(runId);
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
    const em = this.fork();
    const where = { idempotencyScope: idempotency.scope, idempotencyKey: idempotency.key };
    const earlier = await em.findOne(Run, where, { fields: ['id', 'documentId', 'requestHash', 'createdAt'] });
    if (!earlier) return null;
    if (earlier.createdAt.getTime() < this.clock.nowMs() - this.config.idempotencyKeyHours * 3_600_000) {
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
  private handle(runId: string, documentId: string | null): StartedRun {
    return {
      runId,
      documentId,
      stored: true,
      events: (after = 0, signal) => this.follow(runId, after, { endWhenWaiting: true, signal }),
      batches: (after = 0, signal) => followRunBatches(this.fork, this.pubsub, runId, after, { endWhenWaiting: true, signal, sql: this.sql }),
      result: async () => {
        const local = this.local.get(runId);
        if (local) {
          const result = await local.promise;
          this.local.delete(runId);
          if (result) return result;
        }
        for await (const _event of this.follow(runId, 0, { endWhenWaiting: true, fromEnd: true })) {
          // Wait for the end of the stream.
        }
        // The answer's fields only, in one prepared read (the ORM's read of the whole record cost
        // a queued run's accepting process more than the rest of its answer).
        const run = (await readRunResult(this.sql, runId)) ?? (await this.fork().findOneOrFail(Run, { id: runId }));
        return this.resultOf(run);
      },
    };
  }

  private startDebug(args: { runId: string; input: StartRunInput; blocks: WorkflowBlock[]; values: Record<string, unknown>; onError: 'stop' | 'continue'; timeoutSeconds: number; reservationId: string | null; amount: number; teamId: string }): StartedRun {
    const { runId, input, blocks } = args;
    const state = initialState({ id: runId, documentId: input.documentId, userId: input.userId, blocks, inputs: args.values, onError: args.onError, startedAt: Date.now(), timeoutSeconds: args.timeoutSeconds });
    state.teamId = args.teamId;
    const sink = new LocalEventSink();
    /** The duration run_complete carried (the result answers the same). */
    let durationMs: number | null = null;
    const persistence: RunPersistence = {
      checkpoint: async () => undefined,
      heartbeat: async () => undefined,
      finish: async (final, events) => {
        await this.closeCredits(args.reservationId, args.amount, final);
        durationMs = Date.now() - final.startedAt;
        events.emit('run_complete', completion(final, durationMs));
      },
    };
    const done = this.engine
      .execute(state, sink, persistence, { heartbeatMs: this.config.heartbeatSeconds * 1000 })
      .then(async () => {
        // A debug run stopped at an ask block cannot be resumed: its credits are settled now.
        if (state.status === 'waiting') await this.closeCredits(args.reservationId, args.amount, state);
      })
      .catch((error: unknown) => {
        this.log.error({ err: error, runId }, 'debug run failed');
        if (args.reservationId) void this.credits.release(this.fork(), args.reservationId, 'the run failed').catch(() => undefined);
      })
      .finally(() => void sink.close());
    let consumed = false;
    const batches = () => {
      if (consumed) throw new Error('The events of a debug run can be read once.');
      consumed = true;
      return sink.batches();
    };
    return {
      runId,
      documentId: input.documentId,
      stored: false,
      batches,
      events: () =>
        (async function* () {
          for await (const batch of batches()) yield* batch;
        })(),
      result: async () => {
        // Asked for the result only: the events will not be read, so they are not kept.
        if (!consumed) {
          consumed = true;
          sink.discard();
        }
        await done;
        return {
          runId,
          documentId: input.documentId,
          status: state.status,
          globalCtx: state.ctx,
          sessions: state.sessions.map(publicSession),
          duration: durationMs ?? Date.now() - state.startedAt,
          timedOut: state.timedOut,
          output: state.output,
          error: state.error,
          waiting: state.waiting,
        };
      },
    };
  }

  /** Credits a run reserves: `creditsPerRun` plus one model turn's estimate per LLM block. */
  private async estimate(blocks: readonly WorkflowBlock[]): Promise<number> {
    let amount = this.config.creditsPerRun;
    const gateway = this.optional(aiGatewayServiceIdentifier);
    if (gateway) {
      for (const block of blocks) {
        if (block.kind !== 'llm') continue;
        try {
          amount += Math.max(0, Math.ceil(await gateway.estimate(block.attrs.model as string)));
        } catch {
          // An unknown model fails its block when it runs; it reserves nothing.
        }
      }
    }
    return amount;
  }

  /** What closing the reservation of a run that ends with `state` does: settle its real usage (at most what was reserved), or release it. */
  private async creditClose(reservationId: string | null, reserved: number, state: RunState): Promise<CreditClose | null> {
    if (!reservationId) return null;
    if (state.status !== 'completed' && state.status !== 'waiting') return { reservationId, used: 0, release: true };
    let used = this.config.creditsPerRun;
    const gateway = this.optional(aiGatewayServiceIdentifier);
    for (const [modelId, usage] of Object.entries(state.usage.models)) {
      try {
        used += gateway ? Math.ceil(await gateway.price(modelId, usage)) : 0;
      } catch {
        used = reserved;
      }
    }
    return { reservationId, used: Math.min(Math.max(0, used), reserved), release: false };
  }

  /** Applies `creditClose`'s answer in `tx` (the run's final write); the credits used, or null when there was nothing to close or closing failed. */
  private async applyCreditClose(tx: EntityManager, rows: RowSink, close: CreditClose | null, state: RunState): Promise<number | null> {
    if (!close) return null;
    try {
      await this.credits.closeOnly(tx, close.reservationId, close.release ? { used: 0, release: true, reason: `run ${state.status}` } : { used: close.used, reason: `run ${state.id}` }, rows);
      return close.used;
    } catch (error) {
      // Any other failure may have written part of the settlement: it fails the whole write (rolled back).
      if (!(error instanceof TrellisError)) throw error;
      // The reservation was closed already, or is gone: nothing was written, the final write goes on.
      this.log.warn({ err: error, runId: state.id }, 'could not close the credit reservation of a run');
      return null;
    }
  }

  /** Settles a completed run's real usage (at most what was reserved); releases the credits of a run that did not complete. */
  private async closeCredits(reservationId: string | null, reserved: number, state: RunState): Promise<number | null> {
    const close = await this.creditClose(reservationId, reserved, state);
    return close ? this.group.run((tx, _alone, rows) => this.applyCreditClose(tx, rows, close, state), { concurrent: true }) : null;
  }

  /** `POST /documents/:id/run`: execute permission on the document, its project's team pays. */
  async startDocumentRun(em: EntityManager, principal: Principal, documentId: string, body: DocumentRunBody, idempotencyKey?: string): Promise<StartedRun> {
    const { doc } = await this.documents.requireDocument(em, documentId, principal, 'execute');
    const debug = body.content !== undefined;
    const idempotency = idempotencyOf(idempotencyKey, `user:${principal.userId}`, { run: 'document', documentId, inputs: body.inputs ?? {}, timeout: body.timeout ?? null, onError: body.onError ?? null });
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
      idempotency,
      store: !debug,
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Executing (the RunQueue handler)

  /** Starts this process consuming the run queue. */
  async consume(): Promise<void> {
    this.queue.onDropped?.((job) => this.local.get(job.runId)?.resolve(null));
    await this.queue.process((job, signal) => this.executeJob(job, signal));
    this.consuming = true;
  }

  /** The local record of a run this process executes (created once). */
  private localRun(runId: string): LocalRun {
    let local = this.local.get(runId);
    if (!local) {
      let resolve!: (result: RunResult | null) => void;
      const promise = new Promise<RunResult | null>((r) => (resolve = r));
      this.local.set(runId, (local = { promise, resolve }));
    }
    return local;
  }

  /** Executes (or continues) one queued run. Safe to call again for an interrupted run. */
  async executeJob(job: RunJob, signal: AbortSignal): Promise<void> {
    const local = this.local.get(job.runId);
    let result: RunResult | null = null;
    try {
      result = await this.execute(job, signal);
    } finally {
      if (local) {
        // A `stream: false` caller already waits on the promise (it asks right after the start,
        // long before a run ends); a later one reads the stored run.
        local.resolve(result);
        this.local.delete(job.runId);
      }
    }
  }

  /** Executes one queued run; its result when it ended or paused here (null when it did not run, or stopped unfinished). */
  private async execute(job: RunJob, signal: AbortSignal): Promise<RunResult | null> {
    const local = this.local.get(job.runId);
    const stored = local?.stored;
    // Stored already claimed for this first attempt (see `start`): no claim, no read back.
    const preclaimed = local?.claimed === true && stored !== undefined && stored.attempt === 1;
    const run = preclaimed || (stored && stored.attempt === 0) ? stored! : await this.fork().findOne(Run, { id: job.runId });
    if (!run || !activeStatuses.includes(run.status)) return null;
    if (signal.aborted) {
      // The queue gave up on the run (its workers kept dying): fail it rather than continue.
      const reason = signal.reason as { code?: string } | undefined;
      if (reason?.code === 'run_worker_lost') await this.endWithoutEngine(run, 'failed');
      return null;
    }
    if (!preclaimed) {
      if (run.cancelRequested) return this.endWithoutEngine(run, 'cancelled').then(() => null);
      if (run.attempt >= this.config.maxAttempts) return this.endWithoutEngine(run, 'failed').then(() => null);
      const now = this.clock.now();
      const attempt = run.attempt + 1;
      const startedAt = run.startedAt ?? now;
      const deadlineAt = run.deadlineAt ?? new Date(now.getTime() + run.timeoutSeconds * 1000);
      // The claim also reserves the attempt's sequence numbers (see StoredEventSink.reserved).
      const claimed = await this.group.run(
        (tx) =>
          tx.nativeUpdate(
            Run,
            { id: run.id, attempt: run.attempt, status: { $in: activeStatuses } },
            { attempt, status: 'running', heartbeatAt: now, startedAt, deadlineAt, updatedAt: now, seqCeiling: run.seqCeiling + SEQ_BLOCK },
          ),
        { atomic: true, concurrent: true },
      );
      if (!claimed) return null;
      Object.assign(run, { attempt, startedAt, deadlineAt });
    }
    if (run.attempt === 1) await this.notify('run.started', subjectOf(run));
    const state = this.stateOf(run);
    const sink = StoredEventSink.reserved(this.group, this.pubsub, this.sql, run, this.config.flushIntervalMs);
    const cancel = new AbortController();
    let why: StopReason = 'shutdown';
    const unsubscribe = await this.pubsub.subscribe(runControlTopic(run.id), (message) => {
      if (String(message) === 'cancel') {
        why = 'cancel';
        cancel.abort();
      }
    });
    const onShutdown = () => cancel.abort();
    signal.addEventListener('abort', onShutdown);
    const persistence = this.persistence(run, sink);
    try {
      await this.engine.execute(state, sink, persistence, { signal: cancel.signal, stopReason: () => why, heartbeatMs: this.config.heartbeatSeconds * 1000 });
      await sink.close();
      // A run that goes on later (waiting for an answer, or stopped by a shutdown) numbers its
      // events right after the last stored one; a finished run keeps its reservation.
      if (!terminalRunStatuses.has(state.status)) await this.group.run((tx) => tx.nativeUpdate(Run, { id: run.id, attempt: run.attempt }, { seqCeiling: sink.lastSeq }), { atomic: true, concurrent: true });
      if (state.status === 'running' || state.status === 'queued') return null;
      const durationMs = persistence.durationMs ?? this.clock.nowMs() - state.startedAt;
      await this.notifyEnd(run, state, durationMs);
      return {
        runId: run.id,
        documentId: run.documentId,
        status: state.status,
        globalCtx: state.ctx,
        sessions: state.sessions.map(publicSession),
        duration: durationMs,
        timedOut: state.timedOut,
        output: state.status === 'waiting' ? (run.output ?? null) : (state.output ?? null),
        error: state.error,
        waiting: state.status === 'waiting' ? state.waiting : null,
      };
    } catch (error) {
      if (!(error instanceof RunSuperseded)) this.log.error({ err: error, runId: run.id }, 'run execution failed');
      return null;
    } finally {
      signal.removeEventListener('abort', onShutdown);
      await sink.close().catch(() => undefined);
      await unsubscribe();
    }
  }

  /** The engine state of a stored run (its checkpoint). */
  private stateOf(run: Run): RunState {
    const blocks = parseWorkflow(run.content, runErrors.invalidWorkflow);
    return {
      id: run.id,
      documentId: run.documentId,
      userId: run.userId,
      teamId: run.teamId,
      status: run.status,
      inputs: run.inputs,
      blocks,
      cursor: run.cursor,
      sessions: run.sessions,
      ctx: run.ctx,
      usage: run.usage,
      onError: run.onError,
      startedAt: (run.startedAt ?? run.createdAt).getTime(),
      deadline: (run.deadlineAt ?? new Date(Date.now() + run.timeoutSeconds * 1000)).getTime(),
      timedOut: run.timedOut,
      waiting: run.waiting,
      answer: run.answer,
      hasAnswer: run.waiting !== null && run.status !== 'waiting',
      output: run.output,
      error: run.error,
      fresh: run.seqCeiling === 0,
    };
  }

  private persistence(run: Run, sink: StoredEventSink): RunPersistence & { durationMs: number | null } {
    const fence = { id: run.id, attempt: run.attempt };
    const persistence = {
      durationMs: null as number | null,
      checkpoint: async (s: RunState) => {
        // The block's events and the checkpoint in one transaction.
        const now = this.clock.now();
        const changed = await sink.flushWith((tx) =>
          tx.nativeUpdate(
            Run,
            { ...fence, cancelRequested: false },
            { cursor: s.cursor, sessions: s.sessions, ctx: s.ctx, usage: s.usage, status: s.status, waiting: s.waiting, answer: null, heartbeatAt: now, updatedAt: now },
          ),
        );
        if (changed) return;
        const current = await this.fork().findOne(Run, fence);
        if (!current) throw new RunSuperseded();
        if (current.cancelRequested) {
          await this.fork().nativeUpdate(Run, fence, { cursor: s.cursor, sessions: s.sessions, ctx: s.ctx, usage: s.usage });
          if (s.status === 'waiting') {
            // The cancel came while the run paused: end it now.
            await this.endWithoutEngine(current, 'cancelled');
            return;
          }
          throw new RunCancelled();
        }
      },
      heartbeat: async () => {
        await this.fork().nativeUpdate(Run, fence, { heartbeatAt: this.clock.now() });
      },
      finish: async (s: RunState) => {
        const close = await this.creditClose(run.reservationId, run.reservedCredits, s);
        const now = this.clock.now();
        const durationMs = now.getTime() - s.startedAt;
        // run_complete is stored with the final record and published once both are; the credits
        // are settled (or released) in the same transaction.
        sink.emitStored('run_complete', completion(s, durationMs));
        const changed = await sink.flushWith(
          async (tx, rows) => {
            const used = await this.applyCreditClose(tx, rows, close, s);
            return finishRun(this.sql, tx, fence, {
              cursor: s.cursor,
              sessions: s.sessions,
              ctx: s.ctx,
              usage: s.usage,
              status: s.status,
              output: s.output ?? null,
              error: s.error,
              timedOut: s.timedOut,
              usedCredits: used,
              finishedAt: now,
              durationMs,
              updatedAt: now,
            });
          },
          (count) => count > 0,
        );
        if (!changed) throw new RunSuperseded();
        persistence.durationMs = durationMs;
      },
    };
    return persistence;
  }

  /**
   * Ends a run that is not executing (queued, waiting, or lost with no attempts left): takes it
   * over with a new attempt number, emits `run_error` and `run_complete`, releases its credits.
   */
  private async endWithoutEngine(run: Run, status: 'cancelled' | 'failed'): Promise<void> {
    const em = this.fork();
    const attempt = run.attempt + 1;
    const claimed = await em.nativeUpdate(Run, { id: run.id, attempt: run.attempt }, { attempt });
    if (!claimed) return;
    const fresh = await em.findOneOrFail(Run, { id: run.id }, { refresh: true });
    if (terminalRunStatuses.has(fresh.status)) return;
    const state = this.stateOf(fresh);
    const failure = status === 'cancelled' ? runFailure.cancelled : runFailure.workerLost;
    const sink = await StoredEventSink.open(this.group, this.pubsub, this.sql, fresh, this.config.flushIntervalMs);
    if (state.fresh) sink.emit('run_start', { runId: run.id, documentId: run.documentId });
    for (const session of state.sessions) {
      if (session.status === 'running' || session.status === 'waiting') {
        // Its block_start went out: the block ends on the stream too, as a block the engine stopped does.
        session.status = 'failed';
        session.error = failure;
        sink.emit('block_error', { blockId: session.blockId, error: failure.message, code: failure.code });
        sink.emit('block_end', { blockId: session.blockId });
      }
    }
    state.status = status;
    state.error = failure;
    state.waiting = null;
    state.output = outputOf(state);
    sink.emit('run_error', { runId: run.id, error: failure.code, message: failure.message });
    try {
      await this.persistence(fresh, sink).finish(state, sink);
    } catch (error) {
      // Another ending took the run over meanwhile (a cancel racing the continuation of a resume,
      // both ending the same queued run): its events and final record stand, nothing of this one
      // was stored (the final write and its events are one transaction).
      await sink.close().catch(() => undefined);
      const now = await this.fork().findOne(Run, { id: run.id }, { fields: ['attempt'] });
      if (error instanceof RunSuperseded || (now && now.attempt !== fresh.attempt)) return;
      throw error;
    }
    await sink.close();
    await this.fork().nativeUpdate(Run, { id: run.id, attempt: fresh.attempt }, { seqCeiling: sink.lastSeq });
    await this.notifyEnd(fresh, state, this.clock.nowMs() - state.startedAt);
  }

  /** Fires `run.finished` or `run.waiting` for a run that ended or paused with `state`. */
  private async notifyEnd(run: Run, state: RunState, durationMs: number): Promise<void> {
    const subject = subjectOf(run);
    if (state.status === 'waiting' && state.waiting) await this.notify('run.waiting', { ...subject, ...state.waiting });
    else if (state.status === 'completed' || state.status === 'failed' || state.status === 'timed_out' || state.status === 'cancelled') {
      await this.notify('run.finished', { ...subject, status: state.status, output: state.output ?? null, error: state.error, usage: state.usage, durationMs });
    }
  }

  /** Runs a hook's handlers after the fact: a failing handler is logged and changes nothing. */
  private async notify<K extends 'run.started' | 'run.waiting' | 'run.finished'>(name: K, payload: TrellisHooks[K]): Promise<void> {
    try {
      await this.hooks.emit(name, payload);
    } catch (error) {
      this.log.error({ err: error, hook: name, runId: payload.runId }, 'a run hook failed');
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Resume, cancel, lost runs

  /**
   * Gives the answer to the ask block a run waits at and queues the continuation (answers at
   * once): answers the run's id and the status the resume left it in (`queued`), not a read of the
   * run after it (the continuation may be running by then).
   */
  async resume(em: EntityManager, principal: Principal, documentId: string, runId: string, answer: unknown): Promise<{ id: string; status: 'queued' }> {
    await this.documents.requireDocument(em, documentId, principal, 'execute');
    const run = await this.requireRun(em, documentId, runId);
    if (run.status !== 'waiting') throw runErrors.notWaiting(run.status);
    const now = this.clock.now();
    // Not once a cancel was asked for: the cancel ends the waiting run (a continuation queued now
    // would race it for the run).
    const changed = await em.nativeUpdate(
      Run,
      { id: run.id, status: 'waiting', cancelRequested: false },
      { status: 'queued', answer: answer === undefined ? null : answer, heartbeatAt: now, deadlineAt: new Date(now.getTime() + run.timeoutSeconds * 1000), updatedAt: now },
    );
    if (!changed) {
      const current = await em.findOne(Run, { id: run.id }, { refresh: true, fields: ['status', 'cancelRequested'] });
      throw runErrors.notWaiting(current?.cancelRequested && !terminalRunStatuses.has(current.status) ? 'being cancelled' : (current?.status ?? 'gone'));
    }
    await this.queue.enqueue({ runId: run.id, teamId: run.teamId ?? run.userId });
    return { id: run.id, status: 'queued' };
  }

  /** Stops a run: a queued or waiting run ends at once; an executing one is told to stop (in whichever process runs it). */
  async cancel(em: EntityManager, principal: Principal, documentId: string, runId: string): Promise<Run> {
    await this.documents.requireDocument(em, documentId, principal, 'execute');
    const run = await this.requireRun(em, documentId, runId);
    if (terminalRunStatuses.has(run.status)) throw runErrors.alreadyFinished(run.status);
    await em.nativeUpdate(Run, { id: run.id }, { cancelRequested: true, updatedAt: this.clock.now() });
    if (run.status === 'running') await this.pubsub.publish(runControlTopic(run.id), 'cancel');
    else await this.endWithoutEngine(run, 'cancelled');
    return em.findOneOrFail(Run, { id: run.id }, { refresh: true });
  }

  /**
   * Finds runs whose executing process went away (queued or running, no heartbeat for
   * `staleAfterSeconds`) and queues them again: the next attempt continues from the last
   * completed block. A run out of attempts fails with `run_error` `worker_lost`.
   */
  async recoverLostRuns(): Promise<number> {
    const em = this.fork();
    const staleBefore = new Date(this.clock.nowMs() - this.config.staleAfterSeconds * 1000);
    const lost = await em.find(Run, { status: { $in: activeStatuses }, heartbeatAt: { $lt: staleBefore } }, { limit: 100, orderBy: { heartbeatAt: 'asc' } });
    let count = 0;
    for (const run of lost) {
      const claimed = await em.nativeUpdate(Run, { id: run.id, heartbeatAt: run.heartbeatAt }, { heartbeatAt: this.clock.now() });
      if (!claimed) continue;
      count++;
      if (run.attempt >= this.config.maxAttempts) await this.endWithoutEngine(run, 'failed');
      else await this.queue.enqueue({ runId: run.id, teamId: run.teamId ?? run.userId });
    }
    return count;
  }

  // ---------------------------------------------------------------------------------------------
  // Reading

  private async requireRun(em: EntityManager, documentId: string, runId: string): Promise<Run> {
    const run = await em.findOne(Run, { id: runId, documentId }, { refresh: true });
    if (!run) throw runErrors.runNotFound();
    return run;
  }

  /** A run of a document the caller may read. */
  async get(em: EntityManager, principal: Principal, documentId: string, runId: string): Promise<Run> {
    await this.documents.requireDocument(em, documentId, principal, 'read');
    return this.requireRun(em, documentId, runId);
  }

  /** Runs of a document the caller may read, newest first. */
  async listForDocument(em: EntityManager, principal: Principal, documentId: string, p: Paging): Promise<Page<Run>> {
    await this.documents.requireDocument(em, documentId, principal, 'read');
    const [items, total] = await em.findAndCount(Run, { documentId }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: p.size, offset: p.offset });
    return pageOf(items, total, p);
  }

  /** Runs of a project, newest first. The caller (the Project API) checks access to the project. */
  async listForProject(em: EntityManager, projectId: string, p: Paging): Promise<Page<Run>> {
    const [items, total] = await em.findAndCount(Run, { projectId }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: p.size, offset: p.offset });
    return pageOf(items, total, p);
  }

  /** The event stream of a stored run after `after` (see `followRun`). */
  follow(runId: string, after: number, options: { endWhenWaiting: boolean; signal?: AbortSignal; fromEnd?: boolean }): AsyncGenerator<RunEventRecord> {
    return followRun(this.fork, this.pubsub, runId, after, { endWhenWaiting: options.endWhenWaiting, signal: options.signal, sql: this.sql });
  }

  /**
   * The reconnect stream of a run of a document the caller may read; null when the run ended and
   * the client has every event already (`after` at or past its last one): nothing will follow.
   */
  async events(em: EntityManager, principal: Principal, documentId: string, runId: string, after: number, signal?: AbortSignal): Promise<AsyncIterable<RunEventText[]> | null> {
    const run = await this.get(em, principal, documentId, runId);
    if (terminalRunStatuses.has(run.status) && (await this.delivered(runId, after))) return null;
    return followRunBatches(this.fork, this.pubsub, runId, after, { endWhenWaiting: true, signal, sql: this.sql });
  }

  /** The status of a run (for a caller that already holds its handle), or null. */
  async attachedStatus(runId: string): Promise<RunStatus | null> {
    return (await this.fork().findOne(Run, { id: runId }, { fields: ['status'] }))?.status ?? null;
  }

  /**
   * Whether a client that has the events up to `after` has every event of the run (read for a
   * finished run: its record is final only once run_complete is stored with it).
   */
  async delivered(runId: string, after: number): Promise<boolean> {
    if (after <= 0) return false;
    const last = await this.fork().findOne(RunEvent, { runId }, { orderBy: { lastSeq: 'desc' }, fields: ['lastSeq'] });
    return last !== null && after >= last.lastSeq;
  }

  resultOf(run: RunResultFields): RunResult {
    return {
      runId: run.id,
      documentId: run.documentId,
      status: run.status,
      globalCtx: run.ctx,
      sessions: run.sessions.map(publicSession),
      duration: run.durationMs ?? (run.startedAt ? this.clock.nowMs() - run.startedAt.getTime() : 0),
      timedOut: run.timedOut,
      output: run.output ?? null,
      error: run.error,
      waiting: run.waiting,
    };
  }
}
