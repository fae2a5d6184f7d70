import type { TrellisError } from '../../../../kernel/errors.js';
import { runErrors } from '../../errors.js';

/**
 * Quotas on the output of a block and of a run's execution (`runs.max*` settings): `block_chunk`,
 * `tool_start` and `tool_result` events, counted and measured (UTF-8 bytes of the delta, or of
 * the tool result's JSON). The block that passes one fails with `output_limit_exceeded`.
 */
export interface OutputLimits {
  blockEvents: number;
  blockBytes: number;
  runEvents: number;
  runBytes: number;
}

export const unlimited: OutputLimits = { blockEvents: Infinity, blockBytes: Infinity, runEvents: Infinity, runBytes: Infinity };

/** What the run's execution output so far (shared by the meters of its blocks, which may run at once). */
export class RunOutput {
  events = 0;
  bytes = 0;
  constructor(readonly limits: OutputLimits) {}

  /** A meter for one block's execution. */
  block(): OutputMeter {
    return new OutputMeter(this);
  }
}

/** What a block's output used so far; `exceeded` is set (and stays) once a quota struck. */
export class OutputMeter {
  blockEvents = 0;
  blockBytes = 0;
  exceeded: TrellisError | null = null;

  constructor(private readonly run: RunOutput) {}

  /**
   * Counts `events` events of `bytes` together when that passes no quota (true); otherwise counts
   * nothing and answers false (the caller charges them one at a time, to fail at the right one).
   */
  chargeAll(events: number, bytes: number): boolean {
    if (this.exceeded) return false;
    const { run } = this;
    const { limits } = run;
    if (this.blockEvents + events > limits.blockEvents || this.blockBytes + bytes > limits.blockBytes) return false;
    if (run.events + events > limits.runEvents || run.bytes + bytes > limits.runBytes) return false;
    this.blockEvents += events;
    this.blockBytes += bytes;
    run.events += events;
    run.bytes += bytes;
    return true;
  }

  /** Counts one event of `bytes`; throws `output_limit_exceeded` when it passes a quota (and for any event after). */
  charge(bytes: number): void {
    if (this.exceeded) throw this.exceeded;
    const { run } = this;
    const { limits } = run;
    this.blockEvents += 1;
    this.blockBytes += bytes;
    run.events += 1;
    run.bytes += bytes;
    if (this.blockEvents > limits.blockEvents) this.exceeded = runErrors.outputLimit('block\'s output events', limits.blockEvents, 'maxBlockEvents');
    else if (this.blockBytes > limits.blockBytes) this.exceeded = runErrors.outputLimit('block\'s output bytes', limits.blockBytes, 'maxBlockOutputBytes');
    else if (run.events > limits.runEvents) this.exceeded = runErrors.outputLimit('run\'s output events', limits.runEvents, 'maxRunEvents');
    else if (run.bytes > limits.runBytes) this.exceeded = runErrors.outputLimit('run\'s output bytes', limits.runBytes, 'maxRunOutputBytes');
    if (this.exceeded) throw this.exceeded;
  }
}
