import type { EntityManager } from '@mikro-orm/core';
import { TrellisError } from '../../../kernel/errors.js';
import { RunAlone } from '../../../kernel/group-commit.js';
import type { AiGateway } from '../../../ports/ai-provider.js';
import type { RowSink } from '../../../ports/database.js';
import type { RunSettlement } from '../../../ports/run-store.js';
import type { CreditService } from '../../billing/services/credit.service.js';
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
  ) {}

  /** Credits a run reserves: `creditsPerRun` plus one model turn's estimate per LLM block. */
  async estimate(blocks: readonly WorkflowBlock[]): Promise<number> {
    let amount = this.ctx.config.creditsPerRun;
    const gateway = this.gateway();
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

  /** Holds a run's credits in `tx`; a failure other than `RunAlone` comes out as `HoldFailed`. */
  async hold(tx: EntityManager, alone: boolean, rows: RowSink, run: RunHold, id?: string): Promise<string> {
    try {
      const input = { teamId: run.teamId, amount: run.amount, reason: `run ${run.runId}`, userId: run.userId, ttlSeconds: this.ctx.config.reservationTtlSeconds, id };
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

  /** What closing the reservation of a run that ends with `state` does: settle its real usage (at most what was reserved), or release it. */
  async close(reservationId: string | null, reserved: number, state: RunState): Promise<CreditClose | null> {
    if (!reservationId) return null;
    if (state.status !== 'completed' && state.status !== 'waiting') return { reservationId, used: 0, release: true };
    let used = this.ctx.config.creditsPerRun;
    const gateway = this.gateway();
    for (const [modelId, usage] of Object.entries(state.usage.models)) {
      try {
        used += gateway ? Math.ceil(await gateway.price(modelId, usage)) : 0;
      } catch {
        used = reserved;
      }
    }
    return { reservationId, used: Math.min(Math.max(0, used), reserved), release: false };
  }

  /** `close`'s answer as the settlement of the run's final write (see `RunStore.finishWork`). */
  settlement(close: CreditClose | null, state: RunState): RunSettlement | null {
    return close && { used: close.used, apply: (tx, rows) => this.apply(tx, rows, close, state) };
  }

  /** Applies `close` in `tx`; false when closing wrote nothing (the reservation was closed already, or is gone). */
  private async apply(tx: EntityManager, rows: RowSink, close: CreditClose, state: RunState): Promise<boolean> {
    try {
      await this.credits.closeOnly(tx, close.reservationId, close.release ? { used: 0, release: true, reason: `run ${state.status}` } : { used: close.used, reason: `run ${state.id}` }, rows);
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
  }

  /** Releases a reservation outside any run write (a debug run that failed). */
  async release(reservationId: string, reason: string): Promise<void> {
    await this.credits.release(this.ctx.fork(), reservationId, reason);
  }
}
