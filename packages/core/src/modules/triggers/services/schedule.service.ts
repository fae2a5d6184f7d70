import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { inject, injectable, optional } from 'inversify';
import type { Logger } from 'pino';
import type { Principal } from '../../../kernel/auth/principal.js';
import { toTrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { Block, deploymentNotFound, BlockService } from '../../blocks/index.js';
import { User } from '../../identity/index.js';
import { Schedule, ScheduleFire, type MissedPolicy } from '../entities/schedule.entity.js';
import { triggerErrors } from '../errors.js';
import { triggersConfigServiceIdentifier } from '../tokens.js';
import type { TriggersConfig } from '../triggers.config.js';
import { cronOf, dueTimes, nextDue } from './cron.js';
import { DeploymentRuns } from './deployment-runs.js';
import { scheduleTimerServiceIdentifier, type ScheduleTimer } from '../schedule-timer.js';

export interface ScheduleInput {
  name?: string;
  cron?: string;
  timezone?: string;
  inputs?: Record<string, unknown>;
  version?: string | null;
  missed?: MissedPolicy;
  paused?: boolean;
}

/** Schedules a pass looks at, at most. */
const PASS_LIMIT = 200;

/**
 * Schedules of deployments: CRUD, pause and resume, and `tick`, which every process calls: for
 * each schedule past its next due time, the process that moves its cursor forward (compare and
 * set on `cursorAt`) starts the runs of the due times it passed; a unique (schedule, due time)
 * row stands behind that, so a due time starts one run whoever looks.
 */
@injectable()
export class ScheduleService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(BlockService) private readonly blocks: BlockService,
    @inject(DeploymentRuns) private readonly runs: DeploymentRuns,
    @inject(triggersConfigServiceIdentifier) private readonly config: TriggersConfig,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
    @inject(scheduleTimerServiceIdentifier) @optional() private readonly timer: ScheduleTimer | undefined,
  ) {}

  /** Whether an external timer (BullMQ) tells this process when schedules fall due, instead of `tick`. */
  get timed(): boolean {
    return this.timer !== undefined;
  }

  /** Puts the external timer in step with a schedule as stored (paused or deleted: no timer). */
  private async sync(schedule: Pick<Schedule, 'id' | 'cron' | 'timezone' | 'paused'> | { id: string; deleted: true }): Promise<void> {
    if (!this.timer) return;
    if ('deleted' in schedule || schedule.paused) await this.timer.remove(schedule.id);
    else await this.timer.upsert({ id: schedule.id, cron: schedule.cron, timezone: schedule.timezone });
  }

  /**
   * With an external timer: consume its due times in this process, after putting every stored
   * schedule's timer in step (schedules changed while no process ran, or created before Redis).
   */
  async startTimer(em: EntityManager): Promise<void> {
    if (!this.timer) return;
    for (let offset = 0; ; offset += 500) {
      const batch = await em.find(Schedule, {}, { orderBy: { id: 'asc' }, limit: 500, offset });
      for (const schedule of batch) await this.sync(schedule);
      if (batch.length < 500) break;
    }
    await this.timer.listen((scheduleId, dueAt) => this.due(em.fork(), scheduleId, dueAt));
  }

  /**
   * A due time the external timer handed to this process: run, unless it is older than the grace
   * window (the timer was not consumed then: downtime), where the `missed` policy decides. The
   * BullMQ timer keeps one pending due time per schedule, so a downtime leaves at most one.
   */
  private async due(em: EntityManager, scheduleId: string, dueAt: Date): Promise<void> {
    const schedule = await em.findOne(Schedule, { id: scheduleId });
    if (!schedule) return this.timer?.remove(scheduleId);
    if (schedule.paused) return;
    const cutoff = new Date(this.clock.nowMs() - this.config.schedules.graceSeconds * 1000);
    const late = dueAt.getTime() < cutoff.getTime();
    if (late && schedule.missed === 'skip') return;
    const cron = cronOf(schedule.cron, schedule.timezone);
    // BullMQ computes a scheduler's next due time when a worker takes its job, from the later of
    // then and the job's due time: a job taken late (a saturated machine) leaves the due times
    // in between without a job. They run here, those within the grace window (a fire is unique
    // per due time: two workers filling the same gap start each run once).
    const skipped = late ? [] : dueTimes(cron, schedule.cursorAt, new Date(dueAt.getTime() - 1), cutoff).recent;
    await em.nativeUpdate(Schedule, { id: schedule.id, cursorAt: { $lt: dueAt } }, { cursorAt: dueAt, nextDueAt: nextDue(cron, new Date(Math.max(dueAt.getTime(), this.clock.nowMs()))) });
    for (const time of skipped) await this.fire(em, schedule, time);
    await this.fire(em, schedule, dueAt);
  }

  /** The schedules of a block (the read permission), or, without one, those the caller created. */
  async list(em: EntityManager, principal: Principal, blockId: string | undefined, page: Paging): Promise<{ items: Schedule[]; total: number }> {
    const where = blockId ? { block: (await this.blocks.requireBlock(em, principal, blockId)).block.id } : { createdBy: principal.userId };
    const [items, total] = await em.findAndCount(Schedule, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  /** A schedule whose block the caller may read (`write` to change it). */
  async get(em: EntityManager, principal: Principal, scheduleId: string, wanted: 'read' | 'write' = 'read'): Promise<Schedule> {
    const schedule = await em.findOne(Schedule, { id: scheduleId });
    if (!schedule) throw triggerErrors.scheduleNotFound();
    try {
      await this.blocks.requireBlock(em, principal, schedule.block.id, { wanted });
    } catch (error) {
      const failure = toTrellisError(error);
      if (failure.code === 'block_not_found') throw triggerErrors.scheduleNotFound();
      throw failure;
    }
    return schedule;
  }

  async create(em: EntityManager, principal: Principal, blockId: string, input: ScheduleInput & { cron: string }): Promise<Schedule> {
    const { block } = await this.blocks.requireBlock(em, principal, blockId, { wanted: 'write' });
    if (!block.latestVersion) throw deploymentNotFound();
    const timezone = input.timezone ?? 'UTC';
    const cron = cronOf(input.cron, timezone);
    const now = this.clock.now();
    const schedule = em.create(Schedule, {
      id: this.ids.next(),
      block: em.getReference(Block, block.id),
      createdBy: em.getReference(User, principal.userId),
      name: input.name ?? input.cron,
      cron: input.cron,
      timezone,
      inputs: input.inputs ?? {},
      version: input.version ?? null,
      missed: input.missed ?? 'skip',
      paused: input.paused ?? false,
      cursorAt: now,
      nextDueAt: nextDue(cron, now),
      createdAt: now,
      updatedAt: now,
    });
    // The timer first: one that refuses the expression refuses the schedule (a timer left without
    // a row, when the insert fails, removes itself at its first due time).
    await this.sync(schedule);
    await em.flush();
    return schedule;
  }

  async update(em: EntityManager, principal: Principal, scheduleId: string, input: ScheduleInput): Promise<Schedule> {
    const schedule = await this.get(em, principal, scheduleId, 'write');
    const expression = input.cron ?? schedule.cron;
    const timezone = input.timezone ?? schedule.timezone;
    const cron = cronOf(expression, timezone);
    if (input.name !== undefined) schedule.name = input.name;
    if (input.inputs !== undefined) schedule.inputs = input.inputs;
    if (input.version !== undefined) schedule.version = input.version;
    if (input.missed !== undefined) schedule.missed = input.missed;
    schedule.cron = expression;
    schedule.timezone = timezone;
    if (input.paused !== undefined && input.paused !== schedule.paused) this.setPaused(schedule, input.paused);
    schedule.nextDueAt = nextDue(cron, schedule.cursorAt);
    schedule.updatedAt = this.clock.now();
    await this.sync(schedule);
    await em.flush();
    return schedule;
  }

  /** Pauses (no runs) or resumes a schedule; a resumed schedule counts from now: what fell due while paused does not run. */
  async pause(em: EntityManager, principal: Principal, scheduleId: string, paused: boolean): Promise<Schedule> {
    return this.applyPause(em, await this.get(em, principal, scheduleId, 'write'), paused);
  }

  private async applyPause(em: EntityManager, schedule: Schedule, paused: boolean): Promise<Schedule> {
    if (schedule.paused !== paused) {
      this.setPaused(schedule, paused);
      schedule.nextDueAt = nextDue(cronOf(schedule.cron, schedule.timezone), schedule.cursorAt);
      schedule.updatedAt = this.clock.now();
      await em.flush();
      await this.sync(schedule);
    }
    return schedule;
  }

  private setPaused(schedule: Schedule, paused: boolean): void {
    schedule.paused = paused;
    if (!paused) schedule.cursorAt = this.clock.now();
  }

  async remove(em: EntityManager, principal: Principal, scheduleId: string): Promise<void> {
    const schedule = await this.get(em, principal, scheduleId, 'write');
    await this.delete(em, schedule.id);
  }

  private async delete(em: EntityManager, scheduleId: string): Promise<void> {
    await em.nativeDelete(ScheduleFire, { schedule: scheduleId });
    await em.nativeDelete(Schedule, { id: scheduleId });
    await this.sync({ id: scheduleId, deleted: true });
  }

  // ---------------------------------------------------------------------------------------------
  // Operator access (`trellis schedules`): every schedule, no permission check.

  /** Every schedule (or a block's), newest first. */
  async listAll(em: EntityManager, options: { blockId?: string; paused?: boolean; size: number }): Promise<{ items: Schedule[]; total: number }> {
    const where = { ...(options.blockId ? { block: options.blockId } : {}), ...(options.paused !== undefined ? { paused: options.paused } : {}) };
    const [items, total] = await em.findAndCount(Schedule, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: options.size });
    return { items, total };
  }

  /** Pauses or resumes any schedule (404 `schedule_not_found`). */
  async setPausedById(em: EntityManager, scheduleId: string, paused: boolean): Promise<Schedule> {
    const schedule = await em.findOne(Schedule, { id: scheduleId });
    if (!schedule) throw triggerErrors.scheduleNotFound();
    return this.applyPause(em, schedule, paused);
  }

  /** Deletes any schedule (404 `schedule_not_found`). */
  async deleteById(em: EntityManager, scheduleId: string): Promise<void> {
    if (!(await em.count(Schedule, { id: scheduleId }))) throw triggerErrors.scheduleNotFound();
    await this.delete(em, scheduleId);
  }

  /** The due times a schedule ran, newest first, with their runs (or why none started). */
  async fires(em: EntityManager, principal: Principal, scheduleId: string, page: Paging): Promise<{ items: ScheduleFire[]; total: number }> {
    const schedule = await this.get(em, principal, scheduleId);
    const [items, total] = await em.findAndCount(ScheduleFire, { schedule: schedule.id }, { orderBy: { dueAt: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  /**
   * One pass over the schedules that are due. Due times at most `schedules.graceSeconds` old run;
   * older ones were missed: `skip` drops them, `runOnce` starts one run for them all (at the
   * latest of them). Answers the runs started by this process.
   */
  async tick(em: EntityManager): Promise<number> {
    if (this.timer) return 0;
    const now = this.clock.now();
    const due = await em.find(Schedule, { paused: false, nextDueAt: { $lte: now } }, { orderBy: { nextDueAt: 'asc' }, limit: PASS_LIMIT });
    let started = 0;
    for (const schedule of due) {
      try {
        started += await this.advance(em, schedule, now);
      } catch (error) {
        this.log.error({ err: error, scheduleId: schedule.id }, 'schedule pass failed');
      }
    }
    return started;
  }

  private async advance(em: EntityManager, schedule: Schedule, now: Date): Promise<number> {
    const cron = cronOf(schedule.cron, schedule.timezone);
    const cutoff = new Date(now.getTime() - this.config.schedules.graceSeconds * 1000);
    const { recent, lastMissed, last } = dueTimes(cron, schedule.cursorAt, now, cutoff);
    const cursor = last ?? schedule.cursorAt;
    const moved = await em.fork().nativeUpdate(Schedule, { id: schedule.id, cursorAt: schedule.cursorAt, paused: false }, { cursorAt: cursor, nextDueAt: nextDue(cron, cursor) });
    // Another process moved the cursor first: those due times are its to run.
    if (!moved || !last) return 0;
    const times = lastMissed && schedule.missed === 'runOnce' ? [lastMissed, ...recent] : recent;
    let started = 0;
    for (const dueAt of times) if (await this.fire(em, schedule, dueAt)) started++;
    return started;
  }

  /** Starts the run of one due time, unless a row for it exists (then another process has it). */
  private async fire(em: EntityManager, schedule: Schedule, dueAt: Date): Promise<boolean> {
    const id = this.ids.next();
    try {
      await em.fork().insert(ScheduleFire, { id, schedule: schedule.id, dueAt, runId: null, error: null, createdAt: this.clock.now() } as never);
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) return false;
      throw error;
    }
    try {
      const run = await this.runs.start(em.fork(), schedule.block.id, { source: 'schedule', inputs: schedule.inputs, version: schedule.version });
      await em.fork().nativeUpdate(ScheduleFire, { id }, { runId: run.runId });
      return true;
    } catch (error) {
      const failure = toTrellisError(error);
      await em.fork().nativeUpdate(ScheduleFire, { id }, { error: { code: failure.code, message: failure.message } });
      this.log.warn({ scheduleId: schedule.id, dueAt, code: failure.code }, 'a scheduled run did not start');
      return false;
    }
  }
}
