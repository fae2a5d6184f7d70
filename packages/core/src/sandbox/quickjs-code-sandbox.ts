import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { TrellisError } from '../kernel/errors.js';
import type { CodeSandbox, CodeSandboxRequest, CodeSandboxResult } from '../ports/code-sandbox.js';
import type { EngineStats, SandboxFailureCode } from './quickjs-engine.js';
import { ABORT_INDEX, ACK_INDEX, SHARED_BYTES, STARTED_AT_INDEX, STARTED_ID_INDEX } from './quickjs-shared-memory.js';
// Types only: the worker's module (and the engine behind it) must not load on this thread.
import type { ConsoleItem, FromWorker, ToWorker, WorkerData } from './quickjs-worker.js';

export interface QuickJsCodeSandboxOptions {
  /**
   * Worker threads that run code, each one run at a time. Runs beyond this wait for a free
   * worker (the wait does not count against their time limit, but does against their `deadline`).
   * Workers start when first needed. Default: the number of CPUs, at most 4.
   */
  workers?: number;
  /**
   * Workers one tenant (`CodeSandboxRequest.tenant`, a team) may hold at once; its further runs
   * wait while other tenants' runs take the free workers. Waiting runs get workers tenant by
   * tenant in turn (round robin), each tenant's runs in order. Runs without a tenant take their
   * turn as one tenant but are not capped. Default: half the workers (at least 1), so that one
   * tenant's endless loops leave the other half to everyone else.
   */
  workersPerTenant?: number;
  /**
   * Limit of the interpreter's own call stack, in bytes. Deeper recursion fails the run with
   * `sandbox_error` ("Maximum call stack size exceeded"). Default 256 KiB (about 1,400 frames
   * of a small function).
   */
  maxStackBytes?: number;
  /**
   * Most console output kept per run, in characters. Output past it is dropped and one `warn`
   * entry says so; the run goes on. Default 1,048,576.
   */
  maxConsoleChars?: number;
  /**
   * When a run leaves a worker's WebAssembly memory larger than this, the worker drops its
   * module so the memory returns to the system (its next run loads a fresh one, ~20 ms).
   * Default 64 MiB.
   */
  retainMemoryBytes?: number;
  /**
   * How long a run may go on after its time limit (or an abort) before its worker thread is
   * terminated outright. The interpreter normally stops within milliseconds; the hard stop is for
   * code stuck inside one long built-in call. Default 250 ms.
   */
  hardStopGraceMs?: number;
}

type ConsoleEntry = CodeSandboxResult['console'][number];

const MiB = 1024 * 1024;

/**
 * A `CodeSandbox` error: `sandbox_timeout`, `sandbox_memory_exceeded` or `sandbox_error`. It also
 * carries what the code wrote to the console before it failed and how long it ran, so a run can
 * show both on its failed block.
 */
export class CodeSandboxError extends TrellisError {
  constructor(
    code: SandboxFailureCode,
    message: string,
    readonly console: ConsoleEntry[] = [],
    readonly durationMs = 0,
  ) {
    super('bad_request', code, message, { expose: true });
  }
}

interface Active {
  id: number;
  request: CodeSandboxRequest;
  /** The time limit of this run. */
  timeoutMs: number;
  console: ConsoleEntry[];
  hostError?: { error: unknown };
  hardStop?: ReturnType<typeof setTimeout>;
  /** Why the main thread stopped the run, if it did. */
  stopping?: 'deadline' | 'abort' | 'host';
  onAbort?: () => void;
  resolve(result: CodeSandboxResult): void;
  reject(error: unknown): void;
}

interface Slot {
  worker: Worker;
  /** The abort flag and the started job's id (see `quickjs-shared-memory.ts`). */
  flag: Int32Array;
  /** When the started job's code started, `performance.timeOrigin`-based. */
  clock: Float64Array;
  /** Handed to a run (set before the run's job is posted). */
  busy: boolean;
  /** The tenant of the run it is handed to. */
  tenant?: string;
  active?: Active;
  gone: boolean;
  /** The worker's engine counters, as of its last finished job. */
  stats?: EngineStats;
}

/** Where the worker's code is: built JavaScript beside the bundle, or the TypeScript source (tests). */
function workerSource(): { script: string | URL; eval: boolean } {
  const built = new URL('./quickjs-worker.js', import.meta.url);
  if (built.protocol === 'file:' && existsSync(fileURLToPath(built))) return { script: built, eval: false };
  const source = new URL('./quickjs-worker.ts', import.meta.url);
  if (source.protocol === 'file:' && existsSync(fileURLToPath(source))) {
    // Running from the sources (the test suite): load the worker through tsx's loader.
    const tsxDir = dirname(createRequire(import.meta.url).resolve('tsx/package.json'));
    const api = pathToFileURL(join(tsxDir, 'dist/esm/api/index.mjs')).href;
    const code = `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source.href)}); });`;
    return { script: code, eval: true };
  }
  throw new Error('QuickJsCodeSandbox: the worker script (quickjs-worker.js) is missing from the build.');
}

/**
 * The embedded `CodeSandbox`: JavaScript in QuickJS compiled to WebAssembly
 * (`quickjs-emscripten`), on a small pool of worker threads, with nothing of the host reachable.
 * A context has the language's built-ins (`JSON`, `Math`, `Date`, `Promise`, typed arrays,
 * `RegExp`, `Proxy`, ...) plus `console` and `emit`, and the request's `globals`; it has no
 * `require`, `import`, `process`, `fetch`, `XMLHttpRequest`, timers, file or network functions.
 *
 * Each run gets a fresh QuickJS runtime and context in its worker's WebAssembly module (loaded
 * once per worker and reused): its heap bounded by `memoryBytes` (the module's memory is capped
 * at `memoryBytes` + 16 MiB, and the heap is measured every few milliseconds), its stack by
 * `maxStackBytes`, its time by an interrupt handler, and, as a backstop, by terminating the
 * worker `hardStopGraceMs` after the limit. The host's event loop stays free while code runs.
 *
 * The code is the body of an `async` function: `return` gives the result and `await` works on
 * promises the code makes itself. `onEmit` (or `onEmits`, a batch at a time) is called on the
 * caller's thread, in order, while the code runs and before `run` settles; after an abort (or a
 * throwing listener) no further emit is delivered.
 */
export class QuickJsCodeSandbox implements CodeSandbox {
  private readonly workers: number;
  private readonly maxStackBytes: number;
  private readonly maxConsoleChars: number;
  private readonly retainMemoryBytes: number;
  private readonly hardStopGraceMs: number;
  private readonly workersPerTenant: number;
  private readonly slots: Slot[] = [];
  /** Runs waiting for a worker, by tenant, in order. */
  private readonly lines = new Map<string, Waiter[]>();
  /** Tenants with waiting runs, in the order they take turns. */
  private readonly turn: string[] = [];
  /** Workers each tenant holds. */
  private readonly held = new Map<string, number>();
  private nextId = 1;
  private closed = false;
  /** The engine counters of workers that are gone. */
  private readonly goneStats: EngineStats = { loads: 0, discards: 0, teardownFailures: 0, warmStarts: 0 };

  /** Checks options; throws with the offending field named. */
  static validateOptions(options: QuickJsCodeSandboxOptions): void {
    for (const name of ['workers', 'workersPerTenant', 'maxStackBytes', 'maxConsoleChars', 'retainMemoryBytes', 'hardStopGraceMs'] as const) {
      const value = options[name];
      if (value !== undefined && (!Number.isSafeInteger(value) || value <= 0)) {
        throw new Error(`QuickJsCodeSandbox: ${name} must be a positive integer, got ${String(value)}.`);
      }
    }
  }

  constructor(options: QuickJsCodeSandboxOptions = {}) {
    QuickJsCodeSandbox.validateOptions(options);
    this.workers = options.workers ?? Math.max(1, Math.min(4, availableParallelism()));
    this.workersPerTenant = Math.min(this.workers, options.workersPerTenant ?? Math.max(1, Math.floor(this.workers / 2)));
    this.maxStackBytes = options.maxStackBytes ?? 256 * 1024;
    this.maxConsoleChars = options.maxConsoleChars ?? MiB;
    this.retainMemoryBytes = options.retainMemoryBytes ?? 64 * MiB;
    this.hardStopGraceMs = options.hardStopGraceMs ?? 250;
  }

  async run(request: CodeSandboxRequest): Promise<CodeSandboxResult> {
    if (this.closed) throw new Error('QuickJsCodeSandbox is closed.');
    checkRequest(request);
    const cancelled = () => new CodeSandboxError('sandbox_timeout', 'The run was cancelled before the code started.');
    if (request.signal?.aborted) throw cancelled();
    let globalsJson: string;
    try {
      globalsJson = JSON.stringify(request.globals ?? {});
    } catch (error) {
      throw new CodeSandboxError('sandbox_error', `The globals are not JSON: ${(error as Error).message}`);
    }
    const slot = await this.acquire(request);
    if (request.signal?.aborted) {
      this.release(slot);
      throw cancelled();
    }
    // The wait for a worker counts against the deadline (the caller's signal stops the code at it).
    const { timeoutMs } = request;
    if (request.deadline !== undefined && request.deadline <= Date.now()) {
      this.release(slot);
      throw pastDeadline();
    }
    return new Promise<CodeSandboxResult>((resolve, reject) => {
      const active: Active = { id: this.nextId++, request, timeoutMs, console: [], resolve, reject };
      slot.active = active;
      Atomics.store(slot.flag, ABORT_INDEX, 0);
      Atomics.store(slot.flag, ACK_INDEX, 0);
      // The backstop of the time limit: checked at the limit, counted from when the code started
      // (the worker writes that to shared memory rather than sending a message).
      active.hardStop = setTimeout(() => this.checkDeadline(slot, active), timeoutMs);
      if (request.signal) {
        active.onAbort = () => this.stop(slot, active, 'abort');
        request.signal.addEventListener('abort', active.onAbort, { once: true });
      }
      const message: ToWorker = {
        type: 'run',
        id: active.id,
        job: {
          code: request.code,
          globalsJson,
          timeoutMs,
          memoryBytes: request.memoryBytes,
          maxStackBytes: this.maxStackBytes,
          maxConsoleChars: this.maxConsoleChars,
        },
      };
      slot.worker.postMessage(message);
    });
  }

  /** Loads a worker and its WebAssembly module now instead of on the first run. */
  async warmUp(): Promise<void> {
    await this.run({ code: 'return 0', globals: {}, timeoutMs: 5_000, memoryBytes: 8 * MiB });
  }

  /**
   * What the workers' engines did with their WebAssembly modules so far (counted when each run
   * ends): modules loaded, modules dropped on purpose after a run QuickJS could not free, runs
   * whose teardown failed (a run's runtime is freed after its outcome was sent, so such a failure
   * shows with the worker's next run), and runs whose context the worker made ahead while it was
   * idle. For tests and diagnostics.
   */
  moduleStats(): EngineStats {
    const total = { ...this.goneStats };
    for (const slot of this.slots) if (slot.stats) addStats(total, slot.stats);
    return total;
  }

  /** Terminates the workers; runs in progress fail with `sandbox_error`. */
  async close(): Promise<void> {
    this.closed = true;
    const waiting = [...this.lines.values()].flat();
    this.lines.clear();
    this.turn.length = 0;
    for (const waiter of waiting) waiter.fail(new CodeSandboxError('sandbox_error', 'The sandbox was closed.'));
    await Promise.all(this.slots.splice(0).map((slot) => this.retire(slot, new CodeSandboxError('sandbox_error', 'The sandbox was closed.'))));
  }

  /**
   * How many runs wait for a worker, by tenant (for tests and diagnostics), and how many workers
   * each tenant holds.
   */
  queueStats(): { waiting: Record<string, number>; held: Record<string, number> } {
    return {
      waiting: Object.fromEntries([...this.lines].map(([tenant, line]) => [tenant, line.length])),
      held: Object.fromEntries(this.held),
    };
  }

  /**
   * A worker for a run of `request.tenant`: at once when one is free (or may start) and the
   * tenant holds fewer than `workersPerTenant`; otherwise the run waits in its tenant's line until
   * `pump` hands it one, its signal aborts, or its deadline passes.
   */
  private acquire(request: CodeSandboxRequest): Promise<Slot> {
    const tenant = request.tenant ?? '';
    if (!this.lines.has(tenant) && this.below(tenant)) {
      const slot = this.freeSlot();
      if (slot) return Promise.resolve(this.claim(slot, tenant));
    }
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const leave = (error: unknown) => {
        const line = this.lines.get(tenant);
        const index = line ? line.indexOf(waiter) : -1;
        if (index < 0) return;
        line!.splice(index, 1);
        if (!line!.length) this.dropLine(tenant);
        waiter.fail(error);
      };
      const onAbort = () => leave(new CodeSandboxError('sandbox_timeout', 'The run was cancelled before the code started.'));
      const waiter: Waiter = {
        take: (slot) => {
          cleanup();
          resolve(slot);
        },
        fail: (error) => {
          cleanup();
          reject(error);
        },
      };
      const cleanup = () => {
        if (timer) clearTimeout(timer);
        request.signal?.removeEventListener('abort', onAbort);
      };
      let line = this.lines.get(tenant);
      if (!line) {
        this.lines.set(tenant, (line = []));
        this.turn.push(tenant);
      }
      line.push(waiter);
      request.signal?.addEventListener('abort', onAbort, { once: true });
      if (request.deadline !== undefined) timer = setTimeout(() => leave(pastDeadline()), Math.max(0, request.deadline - Date.now()));
      // A tenant below its share whose line was empty a moment ago may start at once.
      this.pump();
    });
  }

  private heldBy(tenant: string): number {
    return this.held.get(tenant) ?? 0;
  }

  /** Whether `tenant` may take one more worker (runs without a tenant, `''`, always may). */
  private below(tenant: string): boolean {
    return tenant === '' || this.heldBy(tenant) < this.workersPerTenant;
  }

  /** An idle worker, or a new one when fewer than `workers` run; undefined when all are busy. */
  private freeSlot(): Slot | undefined {
    if (this.closed) return undefined;
    const idle = this.slots.find((slot) => !slot.busy && !slot.gone);
    if (idle) return idle;
    return this.slots.length < this.workers ? this.spawn() : undefined;
  }

  private claim(slot: Slot, tenant: string): Slot {
    slot.busy = true;
    slot.tenant = tenant;
    this.held.set(tenant, this.heldBy(tenant) + 1);
    slot.worker.ref();
    return slot;
  }

  /** The tenant of a worker that is free or gone holds one worker less. */
  private unclaim(slot: Slot): void {
    const tenant = slot.tenant;
    if (tenant === undefined) return;
    slot.tenant = undefined;
    const count = this.heldBy(tenant) - 1;
    if (count > 0) this.held.set(tenant, count);
    else this.held.delete(tenant);
  }

  private dropLine(tenant: string): void {
    this.lines.delete(tenant);
    const at = this.turn.indexOf(tenant);
    if (at >= 0) this.turn.splice(at, 1);
  }

  /**
   * Hands free workers to waiting runs: the tenants take turns (the first in `turn` below its
   * share gets the worker and goes to the back), each tenant's runs in the order they came.
   */
  private pump(): void {
    for (;;) {
      const tenant = this.turn.find((candidate) => this.below(candidate));
      if (tenant === undefined) return;
      const slot = this.freeSlot();
      if (!slot) return;
      const line = this.lines.get(tenant)!;
      const waiter = line.shift()!;
      this.turn.splice(this.turn.indexOf(tenant), 1);
      if (line.length) this.turn.push(tenant);
      else this.lines.delete(tenant);
      waiter.take(this.claim(slot, tenant));
    }
  }

  private release(slot: Slot): void {
    slot.active = undefined;
    if (slot.gone) return;
    this.unclaim(slot);
    slot.busy = false;
    slot.worker.unref();
    this.pump();
  }

  private spawn(): Slot {
    const shared = new SharedArrayBuffer(SHARED_BYTES);
    const data: WorkerData = { shared, retainMemoryBytes: this.retainMemoryBytes };
    const source = workerSource();
    const worker = new Worker(source.script, { eval: source.eval, workerData: data, stdout: false, stderr: false });
    const slot: Slot = { worker, flag: new Int32Array(shared), clock: new Float64Array(shared), busy: false, gone: false };
    this.slots.push(slot);
    worker.on('message', (message: FromWorker) => this.receive(slot, message));
    const lost = (reason: string) => {
      if (slot.gone) return;
      slot.gone = true;
      this.forget(slot);
      const active = slot.active;
      if (active) this.finish(slot, active, () => active.reject(this.lostError(slot, active, reason)));
      // A waiting run gets a fresh worker in place of this one.
      this.pump();
    };
    worker.on('error', (error) => lost(error.message));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    return slot;
  }

  /** When the run's code started, on this thread's `performance.now()` clock, if it did. */
  private startedAt(slot: Slot, active: Active): number | undefined {
    if (Atomics.load(slot.flag, STARTED_ID_INDEX) !== active.id) return undefined;
    return slot.clock[STARTED_AT_INDEX]! - performance.timeOrigin;
  }

  private ranFor(slot: Slot, active: Active): number {
    const started = this.startedAt(slot, active);
    return started === undefined ? 0 : Math.max(0, performance.now() - started);
  }

  /** At the time limit after the job was posted: stops the run if its code has run that long, else looks again when it will have. */
  private checkDeadline(slot: Slot, active: Active): void {
    if (slot.active !== active) return;
    const started = this.startedAt(slot, active);
    const left = started === undefined ? active.timeoutMs : started + active.timeoutMs - performance.now();
    if (left > 0) active.hardStop = setTimeout(() => this.checkDeadline(slot, active), Math.ceil(left));
    else this.stop(slot, active, 'deadline');
  }

  private lostError(slot: Slot, active: Active, reason: string): CodeSandboxError {
    const duration = this.ranFor(slot, active);
    if (/ERR_WORKER_OUT_OF_MEMORY|out of memory/i.test(reason)) {
      return new CodeSandboxError('sandbox_memory_exceeded', `The code used more than its memory limit of ${active.request.memoryBytes} bytes.`, active.console, duration);
    }
    return new CodeSandboxError('sandbox_error', 'The sandbox failed while running the code.', active.console, duration);
  }

  private receive(slot: Slot, message: FromWorker): void {
    const active = slot.active;
    if (!active || active.id !== message.id) return;
    this.output(slot, active, message.emits, message.console, message.type === 'output');
    if (message.type === 'done') {
      slot.stats = message.stats;
      const { outcome } = message;
      this.finish(slot, active, () => {
        if (active.hostError) return active.reject(active.hostError.error);
        if (outcome.ok) return active.resolve({ value: JSON.parse(outcome.json) as unknown, console: active.console, durationMs: outcome.durationMs });
        // An abort that raced with another failure still reports the abort.
        const cancelled = active.stopping === 'abort' && outcome.code !== 'sandbox_timeout';
        const text = cancelled ? 'The run was cancelled while the code was running.' : outcome.message;
        active.reject(new CodeSandboxError(cancelled ? 'sandbox_timeout' : outcome.code, text, active.console, outcome.durationMs));
      });
      this.release(slot);
    }
  }

  /**
   * Delivers a batch of output: console lines kept, emits handed to `onEmits` as they came (the
   * JSON text of their array) or else to `onEmit`, one by one, in order. A batch
   * sent while the code runs (`streamed`) is then counted as taken, which lets the worker send
   * another; when the listener answered a promise (it is behind), only once that settled.
   */
  private output(slot: Slot, active: Active, emits: string, lines: ConsoleItem[], streamed: boolean): void {
    for (const [level, text] of lines) active.console.push({ level, text });
    let behind: PromiseLike<unknown> | undefined;
    // The caller's signal aborting sets `stopping` at once (its listener is added, synchronously,
    // right after `run` checked it): no need to read the signal here. Reading it did cost: the
    // AbortSignals of different runs have different maps, and each new one deoptimized this
    // function, the loop over every emit of a run included (docs/runs.md).
    if (emits && !active.stopping && active.request.onEmits) {
      // The batch as the worker sent it: the JSON text of the array of the emitted strings.
      try {
        const answer = active.request.onEmits(emits);
        if (answer && typeof (answer as PromiseLike<unknown>).then === 'function') behind = answer as PromiseLike<unknown>;
      } catch (error) {
        active.hostError = { error };
        this.stop(slot, active, 'host');
      }
    } else if (emits && !active.stopping) {
      for (const text of JSON.parse(emits) as string[]) {
        if (active.stopping) break;
        try {
          const answer = active.request.onEmit?.(text);
          if (answer && typeof (answer as PromiseLike<unknown>).then === 'function') behind = answer as PromiseLike<unknown>;
        } catch (error) {
          // The listener's failure ends the run with that error; the code cannot catch it away.
          active.hostError = { error };
          this.stop(slot, active, 'host');
        }
      }
    }
    if (!streamed) return;
    const take = () => {
      if (slot.active !== active) return;
      Atomics.add(slot.flag, ACK_INDEX, 1);
      Atomics.notify(slot.flag, ACK_INDEX);
    };
    if (behind && !active.stopping) behind.then(take, take);
    else take();
  }

  /**
   * Asks the code to stop (the interpreter sees the flag within milliseconds), and terminates the
   * worker if it has not finished after the grace period. At the deadline the worker's own
   * interrupt handler normally stops the code first; this is the backstop.
   */
  private stop(slot: Slot, active: Active, why: 'deadline' | 'abort' | 'host'): void {
    if (slot.active !== active) return;
    if (why === 'deadline') {
      active.hardStop = setTimeout(() => this.kill(slot, active, 'deadline'), this.hardStopGraceMs);
      return;
    }
    active.stopping ??= why;
    Atomics.store(slot.flag, ABORT_INDEX, 1);
    // A worker waiting for its output to be taken sees the flag at once.
    Atomics.notify(slot.flag, ACK_INDEX);
    if (active.hardStop) clearTimeout(active.hardStop);
    active.hardStop = setTimeout(() => this.kill(slot, active, why), this.hardStopGraceMs);
  }

  private kill(slot: Slot, active: Active, why: 'deadline' | 'abort' | 'host'): void {
    if (slot.active !== active || slot.gone) return;
    const duration = this.ranFor(slot, active);
    let error: unknown;
    if (why === 'host' && active.hostError) error = active.hostError.error;
    else if (why === 'abort') error = new CodeSandboxError('sandbox_timeout', 'The run was cancelled while the code was running.', active.console, duration);
    else error = new CodeSandboxError('sandbox_timeout', `The code ran longer than its time limit of ${active.timeoutMs} ms.`, active.console, duration);
    void this.retire(slot, error);
  }

  /** Terminates a worker, failing its run with `error`, and starts a replacement for a waiting run. */
  private async retire(slot: Slot, error: unknown): Promise<void> {
    if (slot.gone) return;
    slot.gone = true;
    this.forget(slot);
    const active = slot.active;
    if (active) this.finish(slot, active, () => active.reject(error));
    this.pump();
    await slot.worker.terminate();
  }

  private forget(slot: Slot): void {
    this.unclaim(slot);
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    if (slot.stats) addStats(this.goneStats, slot.stats);
    slot.stats = undefined;
  }

  /** Settles a run once: clears its timer and abort listener, then calls `settle`. */
  private finish(slot: Slot, active: Active, settle: () => void): void {
    if (active.hardStop) clearTimeout(active.hardStop);
    if (active.onAbort) active.request.signal?.removeEventListener('abort', active.onAbort);
    if (slot.active === active) slot.active = undefined;
    settle();
  }
}

interface Waiter {
  take(slot: Slot): void;
  fail(error: unknown): void;
}

const pastDeadline = () => new CodeSandboxError('sandbox_timeout', 'The run reached its deadline while it waited for a sandbox worker.');

function addStats(total: EngineStats, more: EngineStats): void {
  total.loads += more.loads;
  total.discards += more.discards;
  total.teardownFailures += more.teardownFailures;
  total.warmStarts += more.warmStarts;
}

function checkRequest(request: CodeSandboxRequest): void {
  if (typeof request.code !== 'string') throw new CodeSandboxError('sandbox_error', 'The code must be a string.');
  if (!Number.isFinite(request.timeoutMs) || request.timeoutMs <= 0) {
    throw new CodeSandboxError('sandbox_error', `timeoutMs must be a positive number, got ${String(request.timeoutMs)}.`);
  }
  if (!Number.isSafeInteger(request.memoryBytes) || request.memoryBytes <= 0) {
    throw new CodeSandboxError('sandbox_error', `memoryBytes must be a positive integer, got ${String(request.memoryBytes)}.`);
  }
}
