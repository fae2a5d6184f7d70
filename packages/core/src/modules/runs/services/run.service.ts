import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { Page, Paging } from '../../../kernel/http/dto/paging.js';
import type { Kernel } from '../../../kernel/kernel.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import { entityManagerServiceIdentifier, hooksServiceIdentifier, kernelServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import type { Hooks } from '../../../kernel/hooks.js';
import { aiGatewayServiceIdentifier } from '../../../ports/ai-provider.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import type { PreparedStatements } from '../../../ports/database.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { pubSubServiceIdentifier, type PubSub } from '../../../ports/pubsub.js';
import { runQueueServiceIdentifier, type RunJob, type RunQueue } from '../../../ports/run-queue.js';
import { CreditService } from '../../billing/index.js';
import { DocumentService } from '../../documents/index.js';
import { BlockKinds } from '../blocks/registry.js';
import type { InputDefinition } from '../blocks/workflow.js';
import { Run as RunEntity, type Run, type RunSource, type RunStatus } from '../entities/run.entity.js';
import type { RunResultFields } from '../queries.js';
import type { RunsConfig } from '../runs.config.js';
import { runsConfigServiceIdentifier } from '../tokens.js';
import type { RunEventRecord, RunEventText } from './event-text.js';
import type { RunContext } from './run-context.js';
import { RunControl } from './run-control.js';
import { ModelCallReader } from '../../ai/index.js';
import { metricsServiceIdentifier } from '../../../kernel/observability/metrics.js';
import { RunMetrics } from './run-metrics.js';
import { RunCredits } from './run-credits.js';
import { RunEngine } from './run-engine.js';
import { RunExecutor } from './run-executor.js';
import { RunBudgets } from './run-budget.js';
import { RunReader } from './run-reader.js';
import { RunRecorder } from './run-recorder.js';
import type { RunResult } from './run-result.js';
import { RunControlChannel } from './run-control-channel.js';
import { SqlRunStore } from '../store/sql-run-store.js';
import { RunStarter, type DocumentRunBody, type StartedRun, type StartRunInput } from './run-starter.js';

export { idempotencyOf, type RunIdempotency } from './idempotency.js';
export type { RunResult } from './run-result.js';
export type { DocumentRunBody, StartedRun, StartRunInput } from './run-starter.js';

/**
 * The workflow runtime, as the routes and other modules call it: a facade over the parts that do
 * each job (`RunStarter` starts and attaches, `RunExecutor` executes queued runs, `RunControl`
 * resumes, cancels and recovers, `RunReader` reads records, streams and results).
 */
@injectable()
export class RunService {
  private readonly starter: RunStarter;
  private readonly executor: RunExecutor;
  private readonly control: RunControl;
  private readonly reader: RunReader;

  constructor(
    @inject(runsConfigServiceIdentifier) config: RunsConfig,
    @inject(entityManagerServiceIdentifier) rootEm: EntityManager,
    @inject(pubSubServiceIdentifier) pubsub: PubSub,
    @inject(runQueueServiceIdentifier) queue: RunQueue,
    @inject(idsServiceIdentifier) ids: Ids,
    @inject(clockServiceIdentifier) clock: Clock,
    @inject(CreditService) credits: CreditService,
    @inject(DocumentService) documents: DocumentService,
    @inject(kernelServiceIdentifier) kernel: Kernel,
    @inject(loggerServiceIdentifier) log: Logger,
    @inject(preparedStatementsServiceIdentifier) sql: PreparedStatements,
    @inject(hooksServiceIdentifier) hooks: Hooks,
    @inject(BlockKinds) kinds: BlockKinds,
  ) {
    const optional = <T>(id: import('inversify').ServiceIdentifier<T>): T | undefined => (kernel.container.isBound(id) ? kernel.container.get(id) : undefined);
    // One executor per registered block kind (built-in and added by packages).
    const executors = kinds.executors({ get: (id) => kernel.container.get(id), optional });
    const engine = new RunEngine(executors, {
      blockEvents: config.maxBlockEvents,
      blockBytes: config.maxBlockOutputBytes,
      runEvents: config.maxRunEvents,
      runBytes: config.maxRunOutputBytes,
    });
    const fork = (): EntityManager => rootEm.fork();
    const ctx: RunContext = {
      config,
      fork,
      pubsub,
      queue,
      ids,
      clock,
      log: log.child({ module: 'runs' }),
      sql,
      hooks,
      control: new RunControlChannel(pubsub),
      store: kernel.database.runStore?.({ fork, sql, pubsub }) ?? new SqlRunStore({ fork, sql, pubsub }),
      engine,
      kinds,
      local: new Map(),
      consuming: false,
      metrics: kernel.container.isBound(metricsServiceIdentifier) ? new RunMetrics(kernel.container.get(metricsServiceIdentifier), fork) : undefined,
    };
    const runCredits = new RunCredits(ctx, credits, () => optional(aiGatewayServiceIdentifier), () => optional(ModelCallReader));
    const recorder = new RunRecorder(ctx, runCredits);
    this.reader = new RunReader(ctx, documents);
    this.starter = new RunStarter(ctx, runCredits, this.reader, documents);
    const budgets = new RunBudgets(ctx, () => optional(aiGatewayServiceIdentifier));
    this.executor = new RunExecutor(ctx, recorder, budgets);
    this.control = new RunControl(ctx, recorder, this.reader, documents, budgets);
  }

  // Starting

  /** The input definitions of a workflow (for the Block API's deployment and docs). */
  inputsOf(content: unknown): InputDefinition[] {
    return this.starter.inputsOf(content);
  }

  /** See `RunStarter.start`. */
  start(em: EntityManager, input: StartRunInput): Promise<StartedRun> {
    return this.starter.start(em, input);
  }

  /** `POST /documents/:id/run`: execute permission on the document, its project's team pays. */
  startDocumentRun(em: EntityManager, principal: Principal, documentId: string, body: DocumentRunBody, idempotencyKey?: string): Promise<StartedRun> {
    return this.starter.startDocumentRun(em, principal, documentId, body, idempotencyKey);
  }

  /** The handle of an earlier stored run of `documentId` (for the Block API's `runId`), or null. */
  attach(em: EntityManager, documentId: string, runId: string, where: { source?: RunSource } = {}): Promise<StartedRun | null> {
    return this.starter.attach(em, documentId, runId, where);
  }

  // Executing

  /** Starts this process consuming the run queue. */
  consume(): Promise<void> {
    return this.executor.consume();
  }

  /** Executes (or continues) one queued run. Safe to call again for an interrupted run. */
  executeJob(job: RunJob, signal: AbortSignal): Promise<void> {
    return this.executor.executeJob(job, signal);
  }

  // Resume, cancel, lost runs

  resume(em: EntityManager, principal: Principal, documentId: string, runId: string, answer: unknown): Promise<{ id: string; status: 'queued' }> {
    return this.control.resume(em, principal, documentId, runId, answer);
  }

  /** `POST .../runs/:runId/budget`: sets a run's budget; raising it resumes the runs that wait for it. */
  setBudget(em: EntityManager, principal: Principal, documentId: string, runId: string, credits: number | null): Promise<{ run: Run; resumed: string[] }> {
    return this.control.setBudget(em, principal, documentId, runId, credits);
  }

  /** After a deployment's budget changed: resumes its runs that wait for it (when raised or cleared). */
  deploymentBudgetChanged(blockId: string, before: number | null, after: number | null): Promise<string[]> {
    return this.control.deploymentBudgetChanged(blockId, before, after);
  }

  cancel(em: EntityManager, principal: Principal, documentId: string, runId: string): Promise<Run> {
    return this.control.cancel(em, principal, documentId, runId);
  }

  /** Cancels a run without a permission check (a sub-workflow's run, when its parent stops). */
  cancelRun(runId: string): Promise<void> {
    return this.control.cancelById(runId);
  }

  /** The runs a run's sub-workflow blocks started (read permission on the parent's document), oldest first. */
  async children(em: EntityManager, principal: Principal, documentId: string, runId: string): Promise<Run[]> {
    const parent = await this.reader.get(em, principal, documentId, runId);
    return em.find(RunEntity, { parentRunId: parent.id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  recoverLostRuns(): Promise<number> {
    return this.control.recoverLostRuns();
  }

  // Reading

  get(em: EntityManager, principal: Principal, documentId: string, runId: string): Promise<Run> {
    return this.reader.get(em, principal, documentId, runId);
  }

  listForDocument(em: EntityManager, principal: Principal, documentId: string, p: Paging): Promise<Page<Run>> {
    return this.reader.listForDocument(em, principal, documentId, p);
  }

  listForProject(em: EntityManager, projectId: string, p: Paging): Promise<Page<Run>> {
    return this.reader.listForProject(em, projectId, p);
  }

  follow(runId: string, after: number, options: { endWhenWaiting: boolean; signal?: AbortSignal; fromEnd?: boolean }): AsyncGenerator<RunEventRecord> {
    return this.reader.follow(runId, after, options);
  }

  events(em: EntityManager, principal: Principal, documentId: string, runId: string, after: number, signal?: AbortSignal): Promise<AsyncIterable<RunEventText[]> | null> {
    return this.reader.events(em, principal, documentId, runId, after, signal);
  }

  attachedStatus(runId: string): Promise<RunStatus | null> {
    return this.reader.attachedStatus(runId);
  }

  delivered(runId: string, after: number): Promise<boolean> {
    return this.reader.delivered(runId, after);
  }

  resultOf(run: RunResultFields): RunResult {
    return this.reader.resultOf(run);
  }
}
