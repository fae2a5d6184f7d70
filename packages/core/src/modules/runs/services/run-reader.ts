import type { EntityManager } from '@mikro-orm/core';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { Page, Paging } from '../../../kernel/http/dto/paging.js';
import { pageOf } from '../../../kernel/http/dto/paging.js';
import type { DocumentService } from '../../documents/index.js';
import { RunEvent } from '../entities/run-event.entity.js';
import { Run, terminalRunStatuses, type RunStatus } from '../entities/run.entity.js';
import { runErrors } from '../errors.js';
import { readRunResult, type RunResultFields } from '../queries.js';
import type { RunEventRecord, RunEventText } from './event-text.js';
import { followRun, followRunBatches } from './follow.js';
import type { RunContext } from './run-context.js';
import { runResult, type RunResult } from './run-result.js';

/** Reading runs: records (one, or a page), their event streams, and their results. */
export class RunReader {
  constructor(
    private readonly ctx: RunContext,
    private readonly documents: DocumentService,
  ) {}

  async requireRun(em: EntityManager, documentId: string, runId: string): Promise<Run> {
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
    return followRun(this.ctx.fork, this.ctx.pubsub, runId, after, { endWhenWaiting: options.endWhenWaiting, signal: options.signal, sql: this.ctx.sql });
  }

  /** `follow` in the batches the events arrive in (what the HTTP writers use). */
  followBatches(runId: string, after: number, options: { endWhenWaiting: boolean; signal?: AbortSignal }): AsyncGenerator<RunEventText[]> {
    return followRunBatches(this.ctx.fork, this.ctx.pubsub, runId, after, { endWhenWaiting: options.endWhenWaiting, signal: options.signal, sql: this.ctx.sql });
  }

  /**
   * The reconnect stream of a run of a document the caller may read; null when the run ended and
   * the client has every event already (`after` at or past its last one): nothing will follow.
   */
  async events(em: EntityManager, principal: Principal, documentId: string, runId: string, after: number, signal?: AbortSignal): Promise<AsyncIterable<RunEventText[]> | null> {
    const run = await this.get(em, principal, documentId, runId);
    if (terminalRunStatuses.has(run.status) && (await this.delivered(runId, after))) return null;
    return this.followBatches(runId, after, { endWhenWaiting: true, signal });
  }

  /** The status of a run (for a caller that already holds its handle), or null. */
  async attachedStatus(runId: string): Promise<RunStatus | null> {
    return (await this.ctx.fork().findOne(Run, { id: runId }, { fields: ['status'] }))?.status ?? null;
  }

  /**
   * Whether a client that has the events up to `after` has every event of the run (read for a
   * finished run: its record is final only once run_complete is stored with it).
   */
  async delivered(runId: string, after: number): Promise<boolean> {
    if (after <= 0) return false;
    const last = await this.ctx.fork().findOne(RunEvent, { runId }, { orderBy: { lastSeq: 'desc' }, fields: ['lastSeq'] });
    return last !== null && after >= last.lastSeq;
  }

  /**
   * The stored result of a run (read once its stream ended). The answer's fields only, in one
   * prepared read (the ORM's read of the whole record cost a queued run's accepting process more
   * than the rest of its answer).
   */
  async result(runId: string): Promise<RunResult> {
    const run = (await readRunResult(this.ctx.sql, runId)) ?? (await this.ctx.fork().findOneOrFail(Run, { id: runId }));
    return this.resultOf(run);
  }

  /** The result of a run from its record. */
  resultOf(run: RunResultFields): RunResult {
    const durationMs = run.durationMs ?? (run.startedAt ? this.ctx.clock.nowMs() - run.startedAt.getTime() : 0);
    return runResult({ ...run, durationMs });
  }
}
