import type { EntityManager } from '@mikro-orm/core';
import { TrellisError } from '../../../kernel/errors.js';
import { RunAlone } from '../../../kernel/group-commit.js';
import type { AiGateway, AiUsage } from '../../../ports/ai-provider.js';
import type { ModelCallReader } from '../../ai/index.js';
import type { RowSink } from '../../../ports/database.js';
import type { RunGrantHold, RunSettlement } from '../../../ports/run-store.js';
import type { CreditService } from '../../billing/index.js';
import { renderTemplate } from '../blocks/template.js';
import type { WorkflowBlock } from '../blocks/workflow.js';
import { runErrors } from '../errors.js';
import type { RunContext } from './run-context.js';
import type { RunState } from './run-engine.js';

/** The credit hold of a run failed (told apart from a failure to store the run). */
export class HoldFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('The credit hold failed.');
  }
}

/** A failed hold wrote nothing when it failed with a TrellisError (see `CreditService.hold`); otherwise its transaction must roll back. */
export const holdWroteNothing = (error: unknown): boolean => error instanceof HoldFailed && error.cause instanceof TrellisError;

/** What closing a run's credit reservation does (worked out before the final write, applied in it). */
export interface CreditClose {
  reservationId: string;
  used: number;
  release: boolean;
  /** Credits used beyond what was reserved (a lost attempt's calls and their retry): charged after the close (`chargeOverflow`). */
  overflow?: number;
}

/** What a run's hold takes. */
export interface RunHold {
  runId: string;
  teamId: string;
  userId: string;
  amount: number;
}

/** A run's credits: what it reserves, its hold, and the close (settle or release) of its reservation. */
export class RunCredits {
  constructor(
    private readonly ctx: RunContext,
    private readonly credits: CreditService,
    private readonly gateway: () => AiGateway | undefined,
    private readonly records: () => ModelCallReader | undefined = () => undefined,
  ) {}

  /** Credits a run reserves: `creditsPerRun` plus one model turn's estimate per LLM block (a templated model id read from `inputs`). */
  async estimate(blocks: readonly WorkflowBlock[], inputs: Readonly<Record<string, unknown>> = {}): Promise<number> {
    let amount = this.ctx.config.creditsPerRun;
    const gateway = this.gateway();
    if (gateway) {
      for (const block of blocks) {
        if (block.kind !== 'llm') continue;
        try {
          const model = renderTemplate(block.attrs.model as string, new Map(Object.entries(inputs)));
          amount += Math.max(0, Math.ceil(await gateway.estimate(model)));
        } catch {
          // An unknown model fails its block when it runs; it reserves nothing.
        }
      }
    }
    return amount;
  }

  /** Holds a run's credits in `tx`; a failure other than `RunAlone` comes out as `HoldFailed`. */
  async hold(tx: EntityManager, alone: boolean, rows: RowSink, run: RunHold, id?: string): Promise<string> {
    try {
      const input = { teamId: run.teamId, amount: run.amount, reason: holdReason(run.runId), userId: run.userId, ttlSeconds: this.ctx.config.reservationTtlSeconds, id };
      return (await this.credits.hold(tx, input, { alone, rows })).id;
    } catch (error) {
      if (error instanceof RunAlone) throw error;
      throw new HoldFailed(error);
    }
  }

  /** The error a failed hold answers: 402 `insufficient_credits` as is, anything else 500 `balance_check_failed` (logged). */
  holdError(failure: HoldFailed, runId: string): TrellisError {
    const error = failure.cause;
    if (error instanceof TrellisError && error.code === 'insufficient_credits') return error;
    this.ctx.log.error({ err: error, runId }, 'credit balance check failed');
    return runErrors.balanceCheckFailed(error);
  }

  /**
   * What closing the reservation of a run that ends with `state` does. Its model usage is what the
   * model call records charged to this hold, from every attempt (a lost attempt's calls included,
   * each once), priced per model; where a model has more usage in `state` than in the records (a
   * record that could not be written, a gateway that records nothing), the state's counts. A
   * completed (or waiting) run adds `creditsPerRun`; a run that ended otherwise pays only the
   * tokens its calls used, and is released when they used none. At most what was reserved.
   */
  async close(reservationId: string | null, reserved: number, state: RunState): Promise<CreditClose | null> {
    if (!reservationId) return null;
    const usage = await this.modelUsage(reservationId, state);
    const succeeded = state.status === 'completed' || state.status === 'waiting';
    if (!succeeded && usage.size === 0) return { reservationId, used: 0, release: true };
    let used = succeeded ? this.ctx.config.creditsPerRun : 0;
    const gateway = this.gateway();
    for (const [modelId, entry] of usage) {
      try {
        used += gateway ? Math.ceil(await gateway.price(modelId, entry)) : 0;
      } catch {
        used = reserved;
      }
    }
    if (!succeeded && used <= 0) return { reservationId, used: 0, release: true };
    const charged = Math.min(Math.max(0, used), reserved);
    return { reservationId, used: charged, release: false, ...(used > charged && usage.size ? { overflow: used - charged } : {}) };
  }

  /**
   * Charges the credits a run used beyond its hold (model calls of a lost attempt and of its
   * retry), once its reservation was closed: a reservation of that amount settled at once. A team
   * without that many credits left is charged nothing more (logged): a balance never goes below 0.
   */
  async chargeOverflow(close: CreditClose | null, state: RunState): Promise<void> {
    if (!close?.overflow || !state.teamId) return;
    const em = this.ctx.fork();
    try {
      const extra = await this.credits.reserve(em, { teamId: state.teamId, amount: close.overflow, reason: `run ${state.id}: model usage beyond its reservation`, userId: state.userId });
      await this.credits.settleOnly(em, extra.id, close.overflow, `run ${state.id}`);
    } catch (error) {
      this.ctx.log.warn({ err: error, runId: state.id, credits: close.overflow }, 'could not charge the model usage of a run beyond its reservation');
    }
  }

  /** The model usage a run's hold pays for, per model: the records' sums, or the state's where it counts more. */
  private async modelUsage(reservationId: string, state: RunState): Promise<Map<string, AiUsage>> {
    let recorded = new Map<string, AiUsage>();
    const records = this.records();
    // A workflow whose blocks never call a model has no records to read (the trivial run's path).
    if (records && (Object.keys(state.usage.models).length > 0 || mayCallModels(state.blocks))) {
      try {
        recorded = await records.usageOfHold(this.ctx.fork(), reservationId);
      } catch (error) {
        this.ctx.log.warn({ err: error, runId: state.id }, 'could not read the model call records of a run: its own usage counts are charged');
      }
    }
    const total = (u: AiUsage) => u.inputTokens + u.outputTokens;
    for (const [modelId, counted] of Object.entries(state.usage.models)) {
      const entry = { inputTokens: counted.inputTokens, outputTokens: counted.outputTokens };
      const found = recorded.get(modelId);
      if (!found || total(entry) > total(found)) recorded.set(modelId, entry);
    }
    for (const [modelId, entry] of recorded) if (total(entry) === 0) recorded.delete(modelId);
    return recorded;
  }

  /**
   * `close`'s answer as the settlement of the run's final write (see `RunStore.finishWork`);
   * `reserved`: the credits the run's hold took (the reservation's amount).
   */
  settlement(close: CreditClose | null, state: RunState, reserved: number): RunSettlement | null {
    if (!close) return null;
    return {
      used: close.used,
      apply: (tx, rows) => this.apply(tx, rows, close, state),
      // What `apply` does, for a store that writes it with the final record in one statement.
      close: {
        reservationId: close.reservationId,
        reserved,
        reservationReason: holdReason(state.id),
        used: close.release ? 0 : close.used,
        release: close.release,
        reason: closeReason(close, state),
        ledgerEntryId: this.ctx.ids.next(),
        now: this.ctx.clock.now(),
      },
    };
  }

  /** What `hold` takes in the common case, as data (see `RunCreditHold.grant`). */
  grant(run: RunHold, now: Date): RunGrantHold {
    return { teamId: run.teamId, userId: run.userId, reason: holdReason(run.runId), now, expiresAt: new Date(now.getTime() + this.ctx.config.reservationTtlSeconds * 1000) };
  }

  /** Applies `close` in `tx`; false when closing wrote nothing (the reservation was closed already, or is gone). */
  private async apply(tx: EntityManager, rows: RowSink, close: CreditClose, state: RunState): Promise<boolean> {
    try {
      await this.credits.closeOnly(tx, close.reservationId, close.release ? { used: 0, release: true, reason: closeReason(close, state) } : { used: close.used, reason: closeReason(close, state) }, rows);
      return true;
    } catch (error) {
      // Any other failure may have written part of the settlement: it fails the whole write (rolled back).
      if (!(error instanceof TrellisError)) throw error;
      // The reservation was closed already, or is gone: nothing was written, the final write goes on.
      this.ctx.log.warn({ err: error, runId: state.id }, 'could not close the credit reservation of a run');
      return false;
    }
  }

  /** Settles a completed run's real usage (at most what was reserved); releases the credits of a run that did not complete (a debug run: no record). */
  async settle(reservationId: string | null, reserved: number, state: RunState): Promise<void> {
    const close = await this.close(reservationId, reserved, state);
    if (close) await this.ctx.store.write((tx, rows) => this.apply(tx, rows, close, state), { concurrent: true });
    await this.chargeOverflow(close, state);
  }

  /** Releases a reservation outside any run write (a debug run that failed). */
  async release(reservationId: string, reason: string): Promise<void> {
    await this.credits.release(this.ctx.fork(), reservationId, reason);
  }
}

/** The reason of a run's credit reservation. */
const holdReason = (runId: string): string => `run ${runId}`;

/** Why a run's reservation is closed (the ledger entry's reason ends with it). */
const closeReason = (close: CreditClose, state: RunState): string => (close.release ? `run ${state.status}` : `run ${state.id}`);

/** Block kinds that never call a model themselves (a sub-workflow's child run bills its own calls). */
const modelFree = new Set(['input', 'output', 'code', 'text', 'ask', 'tool', 'http', 'subworkflow', 'branch', 'loop', 'repeat', 'parallel']);

/** Whether any block of a workflow (inside containers too) is of a kind that may call a model. */
function mayCallModels(blocks: readonly WorkflowBlock[]): boolean {
  return blocks.some((block) => !modelFree.has(block.kind) || mayCallModels(block.children ?? []) || (block.arms ?? []).some((arm) => mayCallModels(arm.blocks)));
}
