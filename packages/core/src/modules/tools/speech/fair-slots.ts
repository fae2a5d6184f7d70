export interface FairSlotsLimits {
  /** Slots held at once over all keys. */
  maxConcurrent: number;
  /** Slots one key may hold at once. */
  maxConcurrentPerKey: number;
  /** Requests of one key admitted besides `maxConcurrentPerKey`. */
  maxQueuedPerKey: number;
  /** Requests of all keys admitted besides `maxConcurrent`. */
  maxQueued: number;
}

/** Why a request was not admitted. */
export type Refusal = 'key_busy' | 'all_busy';

interface KeyState {
  /** Requests admitted and not yet finished. */
  requests: number;
  /** Slots held. */
  active: number;
  /** Grants waiting for a slot, oldest first. */
  waiters: Array<{ grant: () => void }>;
}

/**
 * Concurrency slots shared fairly among keys (teams): at most `maxConcurrent` held at once, at most
 * `maxConcurrentPerKey` by one key, and a freed slot goes to the keys with waiters in turn (round
 * robin), so a key with a long queue of work cannot starve one that asks for a single slot.
 *
 * Work enters as a request (`admit`), bounded per key and overall so queues cannot grow without
 * end; a request then takes a slot for each step of its work (`run`), so a long request gives way
 * to others between its steps.
 */
export class FairSlots {
  private readonly keys = new Map<string, KeyState>();
  /** Keys with waiters, in the order they get the next free slot. */
  private readonly turn: string[] = [];
  private active = 0;
  private requests = 0;

  constructor(private readonly limits: FairSlotsLimits) {}

  /** Slots held, and requests admitted (for tests and metrics). */
  get stats(): { active: number; requests: number } {
    return { active: this.active, requests: this.requests };
  }

  /** Admits a request of `key`, or answers why not. Call `done` on the ticket exactly once. */
  admit(key: string): SlotTicket | Refusal {
    const { maxConcurrent, maxConcurrentPerKey, maxQueuedPerKey, maxQueued } = this.limits;
    const state = this.keys.get(key);
    if ((state?.requests ?? 0) >= Math.min(maxConcurrentPerKey, maxConcurrent) + maxQueuedPerKey) return 'key_busy';
    if (this.requests >= maxConcurrent + maxQueued) return 'all_busy';
    const entry = state ?? { requests: 0, active: 0, waiters: [] };
    if (!state) this.keys.set(key, entry);
    entry.requests++;
    this.requests++;
    return new SlotTicket(this, key);
  }

  /** @internal */
  finish(key: string): void {
    const state = this.keys.get(key);
    if (!state) return;
    state.requests--;
    this.requests--;
    this.forget(key, state);
  }

  /** @internal Resolves when `key` holds a slot; rejects when `signal` aborts first. */
  acquire(key: string, signal?: AbortSignal): Promise<void> {
    const state = this.keys.get(key);
    if (!state) return Promise.reject(new Error('FairSlots: acquire without an admitted request'));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    // After every dispatch, a free slot means no waiting key may take it: a new step may.
    if (state.waiters.length === 0 && this.active < this.limits.maxConcurrent && state.active < this.limits.maxConcurrentPerKey) {
      this.take(state);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = state.waiters.indexOf(waiter);
        if (at < 0) return;
        state.waiters.splice(at, 1);
        if (state.waiters.length === 0) this.leaveTurn(key);
        reject(abortReason(signal!));
      };
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      state.waiters.push(waiter);
      if (!this.turn.includes(key)) this.turn.push(key);
      this.dispatch();
    });
  }

  /** @internal */
  release(key: string): void {
    const state = this.keys.get(key);
    if (!state || state.active === 0) return;
    state.active--;
    this.active--;
    this.dispatch();
    this.forget(key, state);
  }

  private take(state: KeyState): void {
    state.active++;
    this.active++;
  }

  /** Gives free slots to waiting keys in turn; a key served goes to the back of the line. */
  private dispatch(): void {
    let skipped = 0;
    while (this.active < this.limits.maxConcurrent && skipped < this.turn.length) {
      const key = this.turn.shift()!;
      const state = this.keys.get(key)!;
      if (state.active >= this.limits.maxConcurrentPerKey) {
        this.turn.push(key);
        skipped++;
        continue;
      }
      const waiter = state.waiters.shift()!;
      this.take(state);
      if (state.waiters.length > 0) this.turn.push(key);
      skipped = 0;
      waiter.grant();
    }
  }

  private leaveTurn(key: string): void {
    const at = this.turn.indexOf(key);
    if (at >= 0) this.turn.splice(at, 1);
  }

  private forget(key: string, state: KeyState): void {
    if (state.requests === 0 && state.active === 0 && state.waiters.length === 0) this.keys.delete(key);
  }
}

/** One admitted request: `run` its steps, each with a slot, then `done`. */
export class SlotTicket {
  private finished = false;

  constructor(
    private readonly slots: FairSlots,
    private readonly key: string,
  ) {}

  /** Runs `step` holding one slot of the ticket's key, waiting for the key's turn first. */
  async run<T>(step: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.slots.acquire(this.key, signal);
    try {
      return await step();
    } finally {
      this.slots.release(this.key);
    }
  }

  done(): void {
    if (this.finished) return;
    this.finished = true;
    this.slots.finish(this.key);
  }
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('The request was aborted.');
}
