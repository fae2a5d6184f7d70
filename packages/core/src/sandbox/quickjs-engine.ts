import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSContext, type QuickJSHandle, type QuickJSRuntime, type QuickJSWASMModule } from 'quickjs-emscripten-core';

/**
 * The QuickJS side of the embedded CodeSandbox. It runs inside a worker thread (see
 * `quickjs-worker.ts`); nothing here knows about threads or about Trellis' errors, so it is
 * plain data in and out.
 */

export type SandboxFailureCode = 'sandbox_timeout' | 'sandbox_memory_exceeded' | 'sandbox_error';
export type ConsoleLevel = 'log' | 'info' | 'warn' | 'error';

export interface EngineJob {
  code: string;
  /** The globals, already serialised by the caller. */
  globalsJson: string;
  timeoutMs: number;
  memoryBytes: number;
  maxStackBytes: number;
}

export interface EngineHooks {
  /** A batch of the code's `emit`s, in order: the JSON text of a non-empty array of strings (as the sandbox wrote it, not parsed here). */
  emits(json: string): void;
  console(level: ConsoleLevel, text: string): void;
  /** Polled while the code runs: true stops it (`sandbox_timeout`, "cancelled"). */
  aborted(): boolean;
}

export type EngineOutcome =
  | { ok: true; json: string; durationMs: number }
  | { ok: false; code: SandboxFailureCode; message: string; durationMs: number };

type StopReason = 'deadline' | 'abort' | 'memory';

const PAGE = 65_536;
/** The prebuilt module's data needs its default initial memory (16 MiB). */
export const INITIAL_MODULE_BYTES = 16 * 1024 * 1024;
/** The most memory this WebAssembly build can address (its own growth limit). */
const MAX_MODULE_BYTES = 2 * 1024 * 1024 * 1024;
/** Heap walks against `memoryBytes` happen at least this far apart. */
const MEMORY_CHECK_MS = 5;
const CONSOLE_LEVELS = new Set<string>(['log', 'info', 'warn', 'error']);

/**
 * Drops indentation and whole-line comments: QuickJS parses the prelude afresh in every context,
 * at roughly 0.1 µs a character. (The sources below are `0, function ...` rather than
 * `(function ...)`: QuickJS scans a parenthesised expression twice, to see whether it is the
 * parameter list of an arrow function.)
 */
function compact(source: string): string {
  return source
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('//'))
    .join('\n');
}

/**
 * The code that runs first in every fresh context. It keeps its own references to the built-ins
 * it relies on (so user code that replaces `JSON` or `Object.defineProperty` cannot confuse the
 * host) and returns the functions the host calls: `[install, marshal, more]`. It is kept small
 * because parsing it is a large part of a short run: `console` and `emit` are stubs that call
 * `more`, which on first use calls `load` (a host function) to compile HELPERS with the built-ins
 * captured here, before the code ran. The host calls `more` too, to describe an exception.
 */
const PRELUDE = compact(String.raw`0, function (load) {
  'use strict';
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const defineProperty = Object.defineProperty;
  const keys = Object.keys;
  const ErrorType = Error;
  const toText = String;
  const now = Date.now;
  const join = Array.prototype.join;
  const apply = Reflect.apply;
  let helpers;
  const more = () => helpers || (helpers = load(stringify, ErrorType, toText, now, join, apply));
  const writer = (level) => function () { more().write(level, arguments); };
  const consoleObject = Object.freeze({ log: writer('log'), info: writer('info'), warn: writer('warn'), error: writer('error'), debug: writer('log') });
  // After its first call, emit goes straight to the helper (an emit costs ~1 µs: the stub shows).
  let emitter = (text) => { emitter = more().emit; emitter(text); };
  const emit = function emit(text) { emitter(text); };
  return [
    function install(globalsJson) {
      const values = parse(globalsJson);
      const names = keys(values);
      for (let i = 0; i < names.length; i++) {
        defineProperty(globalThis, names[i], { value: values[names[i]], writable: true, enumerable: true, configurable: true });
      }
      defineProperty(globalThis, 'console', { value: consoleObject, writable: false, enumerable: false, configurable: false });
      // With the helpers compiled ahead (the last run on this worker used them), emit is theirs: two calls fewer per emit.
      defineProperty(globalThis, 'emit', { value: helpers ? helpers.emit : emit, writable: false, enumerable: false, configurable: false });
    },
    function marshal(value) {
      const json = stringify(value);
      return json === undefined ? 'null' : json;
    },
    more,
  ];
}`);

/**
 * What `console`, `emit` and `describe` need, compiled in a run the first time one of them is
 * used, with the built-ins the prelude captured and the two host functions.
 */
const HELPERS = compact(String.raw`0, function (stringify, ErrorType, toText, now, join, apply, hostConsole, hostEmit) {
  'use strict';
  const format = (value) => {
    try {
      if (typeof value === 'string') return value;
      if (value instanceof ErrorType) return value.name + ': ' + value.message;
      if (typeof value === 'object' && value !== null) {
        const json = stringify(value);
        if (json !== undefined) return json;
      }
      return toText(value);
    } catch (error) {
      return '[value that cannot be printed]';
    }
  };
  // Emits cross to the host in batches (one call per batch is far cheaper than one per emit):
  // the first emit after a quiet moment goes at once, a burst goes every 256 items or about 2 ms,
  // and the host takes what is left when the code ends. A batch crosses as its strings joined by
  // U+0001, with their count, the joined text's length and the array itself: the host serializes
  // them (QuickJS's JSON.stringify cost five times the join), or asks for the array's JSON when
  // the text did not cross intact (see batchJson).
  let pending = [];
  let lastFlush = 0;
  const separator = [String.fromCharCode(1)];
  const flush = () => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    lastFlush = now();
    const text = apply(join, batch, separator);
    hostEmit(text, batch.length, text.length, batch);
  };
  return {
    write(level, args) {
      let line = '';
      for (let i = 0; i < args.length; i++) line += (i === 0 ? '' : ' ') + format(args[i]);
      hostConsole(level, line);
    },
    emit(text) {
      const n = pending.push(typeof text === 'string' ? text : format(text));
      // The clock is read on the first emit of a batch and every 32nd after (a host call each).
      if (n >= 256 || ((n & 31) === 1 && now() - lastFlush >= 2)) flush();
    },
    flush,
    describe(error) {
      try {
        if (typeof error === 'object' && error !== null && 'message' in error) {
          const name = typeof error.name === 'string' ? error.name : 'Error';
          return stringify([name, typeof error.message === 'string' ? error.message : format(error.message)]);
        }
      } catch (ignored) { /* fall through to the plain form */ }
      return stringify(['', format(error)]);
    },
  };
}`);

/**
 * The JSON text of a batch of emits (an array of strings) from what the sandbox's `flush` sent:
 * the strings joined by U+0001, their count, the joined text's length, and the array. Serialized
 * here (V8, from the joined text) when the text crossed intact: its length as sent (the transfer
 * as a C string ends it at a NUL), `count` strings when split (none held a U+0001), and no U+FFFD
 * (what the UTF-8 transfer makes of a lone surrogate; a real one only costs the slow path). Else
 * the sandbox's own `JSON.stringify`, captured before the code ran, writes it; when that fails
 * (the heap is full, or a limit struck), its exception, for the host function to throw in the
 * sandbox as `load` does.
 */
function batchJson(ctx: QuickJSContext, stringify: QuickJSHandle, joinedHandle: QuickJSHandle, countHandle: QuickJSHandle, lengthHandle: QuickJSHandle, batchHandle: QuickJSHandle): string | { error: QuickJSHandle } {
  const joined = ctx.getString(joinedHandle);
  if (joined.length === ctx.getNumber(lengthHandle) && !joined.includes('\ufffd')) {
    const parts = joined.split('\u0001');
    if (parts.length === ctx.getNumber(countHandle)) return JSON.stringify(parts);
  }
  const json = ctx.callFunction(stringify, ctx.undefined, batchHandle);
  if (json.error) return { error: json.error };
  try {
    return ctx.getString(json.value);
  } finally {
    json.value.dispose();
  }
}

/**
 * The code as the body of an async function: the text QuickJS's `AsyncFunction` constructor
 * evaluates for `new AsyncFunction(code)` (same lines, same file name, same function), but
 * `0, async function` where the constructor has `(async function`: QuickJS scans a
 * parenthesised expression twice (is it an arrow function's parameter list?), which costs about
 * a fifth of compiling a larger body.
 */
function wrapCode(code: string): string {
  return `0, async function anonymous(\n) {\n${code}\n}`;
}

type SyncVariant = Extract<Parameters<typeof newQuickJSWASMModuleFromVariant>[0], { type: 'sync' }>;

/** The part of `WebAssembly.Memory` used here (the compiler's `lib` has no WebAssembly types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
const WasmMemoryClass = (globalThis as unknown as { WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory } })
  .WebAssembly.Memory;

interface LoadedModule {
  module: QuickJSWASMModule;
  memory: WasmMemory;
  /** The most the module's memory may grow to. */
  capBytes: number;
  /**
   * Growths of the module's memory that were refused (they would pass `capBytes`). Emscripten asks
   * for a little more than it needs (up to a fifth) and retries smaller, so a refusal means the
   * heap came close to the ceiling; when every retry is refused, the allocation fails and QuickJS
   * raises "out of memory", often where the code never sees it: inside a promise job, the error
   * only rejects some promise.
   */
  refusals: number;
}

/** What an engine did with its modules, for tests and diagnostics. */
export interface EngineStats {
  /** WebAssembly modules loaded (the first, and every reload). */
  loads: number;
  /** Modules dropped on purpose, without freeing the run's runtime: QuickJS could not free it, or the module trapped (see `run`). */
  discards: number;
  /** Runs whose runtime or context failed while being freed (QuickJS aborted the module). */
  teardownFailures: number;
  /** Runs that found their runtime and context made ahead, while the worker was idle (see `QuickJsEngine.recycle`). */
  warmStarts: number;
}

/** An exception raised by the library or WASM (not by the sandboxed code). */
class HostFailure extends Error {
  constructor(readonly original: unknown) {
    super('host failure');
  }
}

/** Carries a finished outcome through the `try`, so the `catch` knows it is not a host failure. */
class Finished {
  constructor(readonly outcome: EngineOutcome) {}
}

function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw new HostFailure(error);
  }
}

/** `memory used` of a runtime, in bytes, from QuickJS's own walk of its heap. */
function heapBytes(runtime: QuickJSRuntime): number {
  const match = /memory used\s+\d+\s+(\d+)/.exec(runtime.dumpMemoryUsage());
  return match ? Number(match[1]) : 0;
}

/** The module's memory ceiling for a memory limit: the limit plus the module's fixed 16 MiB, in whole pages. */
function capFor(memoryBytes: number): number {
  return Math.min(Math.ceil((memoryBytes + INITIAL_MODULE_BYTES) / PAGE) * PAGE, MAX_MODULE_BYTES);
}

/**
 * What the host functions of a context read of the run it serves: made with the context, before
 * the job is known (see `Prepared`), and bound to the run when it starts.
 */
interface Binding {
  hooks: EngineHooks | null;
  stop: StopReason | undefined;
}

/**
 * A runtime and context with the prelude evaluated: the part of a run that does not depend on its
 * job (about half a millisecond of a short run), made ahead of the job when the worker is idle.
 * A context serves one run, then is freed: a prepared one is as fresh as one made at the start.
 */
interface Prepared {
  /** The module it lives in (a prepared context of a module since dropped is not used). */
  loaded: LoadedModule;
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  /** Handles the run owns, freed with it (in reverse). */
  handles: QuickJSHandle[];
  binding: Binding;
  /** The prelude's `[install, marshal, more]`. */
  helpers: QuickJSHandle;
  install: QuickJSHandle;
  /** The helpers of HELPERS, once compiled (the code used `console` or `emit`, or the host `describe`). */
  lazy?: QuickJSHandle;
  flushEmits?: QuickJSHandle;
}

/**
 * Runs jobs one after the other in one WASM module. The module's memory is its own
 * `WebAssembly.Memory` with a maximum of the job's `memoryBytes` plus the module's fixed 16 MiB:
 * QuickJS's per-runtime accounting cannot see the size of large blocks in this build, so the
 * module's memory is the hard ceiling, and a heap walk every few milliseconds is the precise one.
 * Every run has a runtime and context of its own. The part of that which does not depend on the
 * job (making the context, evaluating the prelude, and the helpers when the last run used them)
 * and freeing the last run's are done in `recycle`, which the worker calls once it sent a run's
 * outcome: while it waits for the next job, not at its start.
 */
export class QuickJsEngine {
  private loaded: LoadedModule | undefined;
  /** A context made ahead of the next run (see `recycle`). */
  private spare: Prepared | undefined;
  /** The last run's context, freed by `recycle` (or by the next run). */
  private finished: Prepared | undefined;
  /** Whether the last run compiled the helpers: the spare then compiles them too. */
  private usedHelpers = false;
  readonly stats: EngineStats = { loads: 0, discards: 0, teardownFailures: 0, warmStarts: 0 };

  constructor(private readonly retainMemoryBytes: number) {}

  /** True when the module for this memory limit is loaded (`prepare` would do nothing). */
  ready(memoryBytes: number): boolean {
    return this.loaded !== undefined && this.loaded.capBytes === capFor(memoryBytes);
  }

  /** Loads the module for a memory limit, reusing the current one when it fits. */
  async prepare(memoryBytes: number): Promise<void> {
    const capBytes = capFor(memoryBytes);
    if (this.loaded?.capBytes === capBytes) return;
    this.recycle(false);
    this.drop();
    const namespace: unknown = await import('@jitl/quickjs-wasmfile-release-sync');
    // The variant's typings are CommonJS: at run time `default` is the variant itself.
    let base = (namespace as { default: unknown }).default;
    if (base && typeof base === 'object' && 'default' in base && !('type' in base)) base = (base as { default: unknown }).default;
    const memory = new WasmMemoryClass({ initial: INITIAL_MODULE_BYTES / PAGE, maximum: capBytes / PAGE });
    const module = await newQuickJSWASMModuleFromVariant(newVariant(base as SyncVariant, { wasmMemory: memory }));
    const loaded: LoadedModule = { module, memory, capBytes, refusals: 0 };
    // Emscripten grows the heap through this object's `grow`, which throws past `maximum`. Its
    // own growth loop catches that (and may retry smaller), so a refusal is counted here.
    const grow = memory.grow.bind(memory);
    memory.grow = (pages: number) => {
      try {
        return grow(pages);
      } catch (error) {
        loaded.refusals += 1;
        throw error;
      }
    };
    this.loaded = loaded;
    this.stats.loads += 1;
  }

  /**
   * Frees the last run's runtime and, with `ahead` (the default), makes the next run's context
   * now: what a run does before and after its job, done while the worker has nothing else to do
   * (the worker calls this once it handed over a run's outcome). A run calls it too, for what the
   * last one left.
   */
  recycle(ahead = true): void {
    const finished = this.finished;
    this.finished = undefined;
    if (finished) {
      try {
        free(finished);
      } catch {
        if (this.loaded === finished.loaded) this.drop();
        this.stats.teardownFailures += 1;
      }
      // Give memory a large run made the module grow back to the system.
      if (this.loaded === finished.loaded && finished.loaded.memory.buffer.byteLength > this.retainMemoryBytes) this.drop();
    }
    if (!ahead || this.spare || !this.loaded) return;
    try {
      this.spare = this.make(this.loaded, this.usedHelpers);
    } catch {
      // A module that cannot make a context is not trusted with the next run.
      this.drop();
    }
  }

  /** Forgets the module (and a context made ahead in it): the next run loads a fresh one. */
  private drop(): void {
    this.loaded = undefined;
    this.spare = undefined;
  }

  /** A runtime and context of `loaded` with the prelude evaluated (and with `helpers`, the helpers compiled). */
  private make(loaded: LoadedModule, helpers: boolean): Prepared {
    const runtime = loaded.module.newRuntime();
    const handles: QuickJSHandle[] = [];
    const own = (handle: QuickJSHandle) => {
      handles.push(handle);
      return handle;
    };
    let context: QuickJSContext | undefined;
    try {
      const ctx = (context = runtime.newContext());
      const binding: Binding = { hooks: null, stop: undefined };
      // `prepared` is filled in below; `load` runs only once the prelude has been called.
      const prepared = { loaded, runtime, context: ctx, handles, binding } as Prepared;
      const load = own(
        ctx.newFunction('load', (...captured) => {
          if (prepared.lazy) return prepared.lazy.dup();
          const factory = ctx.evalCode(HELPERS, 'helpers.js', { type: 'global' });
          if (factory.error) return factory;
          own(factory.value);
          const hostConsole = own(
            ctx.newFunction('console', (levelHandle, textHandle) => {
              const level = ctx.getString(levelHandle);
              if (CONSOLE_LEVELS.has(level)) binding.hooks?.console(level as ConsoleLevel, ctx.getString(textHandle));
            }),
          );
          const stringify = own(captured[0]!.dup());
          const hostEmit = own(
            ctx.newFunction('emit', (joinedHandle, countHandle, lengthHandle, batchHandle) => {
              const hooks = binding.hooks;
              if (binding.stop || !hooks) return;
              const json = batchJson(ctx, stringify, joinedHandle, countHandle, lengthHandle, batchHandle);
              if (typeof json !== 'string') return json;
              hooks.emits(json);
              if (hooks.aborted()) binding.stop = 'abort';
            }),
          );
          const made = ctx.callFunction(factory.value, ctx.undefined, ...captured, hostConsole, hostEmit);
          if (made.error) return made;
          prepared.lazy = own(made.value);
          prepared.flushEmits = own(ctx.getProp(prepared.lazy, 'flush'));
          return prepared.lazy.dup();
        }),
      );
      const prelude = guard(() => ctx.evalCode(PRELUDE, 'prelude.js', { type: 'global' }));
      if (prelude.error) {
        prelude.error.dispose();
        throw new HostFailure(new Error('The sandbox prelude failed to evaluate.'));
      }
      const made = guard(() => ctx.callFunction(own(prelude.value), ctx.undefined, load));
      if (made.error) {
        made.error.dispose();
        throw new HostFailure(new Error('The sandbox prelude failed to run.'));
      }
      prepared.helpers = own(made.value);
      prepared.install = own(ctx.getProp(prepared.helpers, 0));
      if (helpers) {
        const compiled = guard(() => ctx.callFunction(own(ctx.getProp(prepared.helpers, 2)), ctx.undefined));
        (compiled.error ?? compiled.value).dispose();
      }
      return prepared;
    } catch (error) {
      for (const handle of handles.reverse()) if (handle.alive) handle.dispose();
      context?.dispose();
      runtime.dispose();
      throw error;
    }
  }

  /** Runs one job; `prepare(job.memoryBytes)` must have completed. Never throws. */
  run(job: EngineJob, hooks: EngineHooks): EngineOutcome {
    // What the last run left (when the worker did not recycle in between).
    this.recycle(false);
    const loaded = this.loaded;
    if (!loaded) throw new Error('QuickJsEngine.run before prepare');
    const started = performance.now();
    const deadline = started + job.timeoutMs;
    const memoryMessage = `The code used more than its memory limit of ${job.memoryBytes} bytes.`;
    const refusalsBefore = loaded.refusals;
    /** True once the module's memory was refused a growth during this run: the heap hit its ceiling. */
    const refused = () => loaded.refusals !== refusalsBefore;
    /** Set when the run reports `sandbox_memory_exceeded`. */
    let outOfMemory = false;
    /** Set once promise jobs ran (the code awaited or used `then`). */
    let jobsRan = false;
    /** The run's context: the one made ahead, or one made now. */
    let prepared: Prepared | undefined;

    const elapsed = () => Math.max(0, performance.now() - started);
    const fail = (code: SandboxFailureCode, message: string): EngineOutcome => {
      if (code === 'sandbox_memory_exceeded') outOfMemory = true;
      return { ok: false, code, message, durationMs: elapsed() };
    };
    const stopped = (): EngineOutcome => {
      const stop = prepared?.binding.stop;
      if (stop === 'abort') return fail('sandbox_timeout', 'The run was cancelled while the code was running.');
      if (stop === 'memory') return fail('sandbox_memory_exceeded', memoryMessage);
      return fail('sandbox_timeout', `The code ran longer than its time limit of ${job.timeoutMs} ms.`);
    };

    let poisoned = false;
    /** Set when the module trapped in a call the engine made from the interrupt handler. */
    let brokenModule = false;

    try {
      const spare = this.spare;
      this.spare = undefined;
      if (spare && spare.loaded === loaded) {
        prepared = spare;
        this.stats.warmStarts += 1;
      } else prepared = this.make(loaded, false);
      const { runtime: rt, context: ctx, handles, helpers } = prepared;
      const own = (handle: QuickJSHandle) => {
        handles.push(handle);
        return handle;
      };
      const state = prepared.binding;
      state.hooks = hooks;
      rt.setMemoryLimit(job.memoryBytes);
      rt.setMaxStackSize(job.maxStackBytes);
      let nextMemoryCheck = started + MEMORY_CHECK_MS;
      rt.setInterruptHandler(() => {
        if (state.stop) return true;
        const now = performance.now();
        if (hooks.aborted()) state.stop = 'abort';
        else if (now > deadline) state.stop = 'deadline';
        else if (now >= nextMemoryCheck) {
          // Space the heap walks so they cost at most a fifth of the run.
          let used: number;
          try {
            used = heapBytes(rt);
          } catch {
            // The walk's report needs a little memory of its own; with the heap full, the module
            // traps in the middle of it (its C stack is not unwound): stop, and drop the module.
            brokenModule = true;
            state.stop = 'memory';
            return true;
          }
          const after = performance.now();
          nextMemoryCheck = after + Math.max(MEMORY_CHECK_MS, (after - now) * 4);
          if (used > job.memoryBytes) state.stop = 'memory';
        }
        return state.stop !== undefined;
      });

      /** Hands over the emits the code made since the last batch (not after a limit struck). */
      const drain = () => {
        const flush = prepared!.flushEmits;
        if (state.stop || !flush) return;
        const result = guard(() => ctx.callFunction(flush, ctx.undefined));
        (result.error ?? result.value).dispose();
      };

      /** Turns an exception of the sandboxed code into an outcome. */
      const failure = (exception: QuickJSHandle): EngineOutcome => {
        if (state.stop) return stopped();
        const more = own(ctx.getProp(helpers, 2));
        const loadedHelpers = guard(() => ctx.callFunction(more, ctx.undefined));
        if (loadedHelpers.error) {
          loadedHelpers.error.dispose();
          // Compiling the helpers failed: the heap is full or the limits struck in the middle.
          return state.stop ? stopped() : fail('sandbox_memory_exceeded', memoryMessage);
        }
        const describe = own(ctx.getProp(own(loadedHelpers.value), 'describe'));
        const described = guard(() => ctx.callFunction(describe, ctx.undefined, exception));
        if (described.error) {
          described.error.dispose();
          // Describing failed: the heap is full or the limits struck in the middle.
          return state.stop ? stopped() : fail('sandbox_memory_exceeded', memoryMessage);
        }
        const [name, message] = JSON.parse(ctx.getString(own(described.value))) as [string, string];
        if (name === 'InternalError' && message === 'out of memory') return fail('sandbox_memory_exceeded', memoryMessage);
        // QuickJS throws null when it has no memory left for the error object itself.
        if (name === '' && message === 'null' && refused()) return fail('sandbox_memory_exceeded', memoryMessage);
        if (name === 'InternalError' && message === 'stack overflow') return fail('sandbox_error', 'Maximum call stack size exceeded');
        return fail('sandbox_error', message);
      };
      /** One call into the sandbox; an exception of the code finishes the run. */
      const step = (call: () => { value?: QuickJSHandle; error?: QuickJSHandle }): QuickJSHandle => {
        const result = guard(call);
        if (result.error) {
          drain();
          throw new Finished(failure(own(result.error)));
        }
        return own(result.value!);
      };

      step(() => ctx.callFunction(prepared!.install, ctx.undefined, own(ctx.newString(job.globalsJson))));
      const fn = step(() => ctx.evalCode(wrapCode(job.code), '<input>', { type: 'global' }));
      const promise = step(() => ctx.callFunction(fn, ctx.undefined));

      // Settle the async function: run the jobs its promises queued, within the same limits.
      while (rt.hasPendingJob()) {
        jobsRan = true;
        const jobs = guard(() => rt.executePendingJobs());
        if (jobs.error) {
          drain();
          // The error of a job itself (not of the code in it, which rejects a promise) is QuickJS's
          // machinery failing: after a refused allocation, that is the memory limit.
          if (!state.stop && refused()) throw new Finished(fail('sandbox_memory_exceeded', memoryMessage));
          throw new Finished(failure(own(jobs.error)));
        }
        jobs.dispose();
        if (state.stop) throw new Finished(stopped());
      }
      if (state.stop) throw new Finished(stopped());

      drain();
      const promiseState = ctx.getPromiseState(promise);
      if (promiseState.type === 'pending') {
        // QuickJS turns an out-of-memory error inside a promise job into the rejection of that
        // job's promise, which may be one nothing waits on: the chain the code awaits then just
        // stops. A refused allocation in the run says that is what happened.
        if (refused()) throw new Finished(fail('sandbox_memory_exceeded', memoryMessage));
        if (performance.now() > deadline) throw new Finished(stopped());
        throw new Finished(fail('sandbox_error', 'The code awaited a promise that never settles.'));
      }
      if (promiseState.type === 'rejected') throw new Finished(failure(own(promiseState.error)));
      const value = own(promiseState.value);
      const marshal = own(ctx.getProp(helpers, 1));
      const marshalled = guard(() => ctx.callFunction(marshal, ctx.undefined, value));
      if (marshalled.error) {
        const outcome = failure(own(marshalled.error));
        if (!outcome.ok && outcome.code === 'sandbox_error') throw new Finished(fail('sandbox_error', `The returned value is not JSON: ${outcome.message}`));
        throw new Finished(outcome);
      }
      const json = ctx.getString(own(marshalled.value));
      if (state.stop) throw new Finished(stopped());
      return { ok: true, json, durationMs: elapsed() };
    } catch (error) {
      if (error instanceof Finished) return error.outcome;
      poisoned = true;
      const original = error instanceof HostFailure ? error.original : error;
      if (original instanceof RangeError && /call stack/i.test(original.message)) {
        // The thread's own stack ran out inside WASM: the code recursed through built-ins.
        return fail('sandbox_error', 'Maximum call stack size exceeded');
      }
      if (prepared?.binding.stop) return stopped();
      if (original instanceof Error && /out of memory|memory access out of bounds/i.test(original.message)) return fail('sandbox_memory_exceeded', memoryMessage);
      return fail('sandbox_error', 'The sandbox failed while running the code.');
    } finally {
      if (prepared) {
        // The context serves no other run: its host functions see no hooks from now on.
        prepared.binding.hooks = null;
        this.usedHelpers = prepared.lazy !== undefined;
      }
      if (poisoned || brokenModule) {
        // The module may be mid-way through something: drop it rather than dispose into it.
        if (this.loaded === loaded) this.drop();
        if (brokenModule) this.stats.discards += 1;
      } else if (outOfMemory || refused() || (prepared?.binding.stop !== undefined && jobsRan)) {
        // Some paths of QuickJS's promise machinery lose reference counts when an allocation
        // fails or the interrupt strikes in them (seen with an `await` that runs out of memory,
        // and with jobs that resolve one promise with another): objects stay counted as
        // referenced that nothing references. JS_FreeRuntime then fails an assertion that aborts
        // the whole module, whatever the host did first: it runs every job to the end, frees
        // every handle, and JS_FreeRuntime itself drops the queued jobs and collects cycles
        // before it checks. So such a runtime is not freed: the module goes with all its memory,
        // and the next run loads a fresh one. Runs stopped outside promise jobs (a plain loop)
        // free their runtime as usual.
        if (this.loaded === loaded) this.drop();
        this.stats.discards += 1;
      } else if (prepared) {
        // Freed by `recycle`, once the outcome is on its way (or by the next run).
        this.finished = prepared;
      }
    }
  }
}

/** Frees a run's handles, context and runtime (QuickJS may abort the module: the caller drops it then). */
function free(prepared: Prepared): void {
  for (const handle of prepared.handles.reverse()) if (handle.alive) handle.dispose();
  prepared.context.dispose();
  prepared.runtime.dispose();
}
