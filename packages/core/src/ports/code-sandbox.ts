import type { ServiceIdentifier } from 'inversify';

export interface CodeSandboxRequest {
  /**
   * JavaScript source: the body of a function. Its `return` value (JSON-serialisable) is the
   * result. It sees the globals named in `globals` (plain JSON values), `console`, and
   * `emit(text)`, which streams a chunk of output while the code runs.
   */
  code: string;
  globals: Record<string, unknown>;
  /** Wall-clock limit for the whole execution. */
  timeoutMs: number;
  /**
   * When the caller's own time is up (epoch ms, as `Date.now()`), waiting for the sandbox
   * included: a run still waiting for a worker then fails with `sandbox_timeout` without
   * starting. A run's deadline, for a code block (its `signal` aborts at the same time, and stops
   * code that started).
   */
  deadline?: number;
  /**
   * Who the code runs for (a team): a sandbox that shares a bounded number of workers shares them
   * fairly between tenants (the embedded one: at most `workersPerTenant` each, tenants served in
   * turn). Runs without a tenant share one.
   */
  tenant?: string;
  /** Limit of the sandbox's heap. */
  memoryBytes: number;
  signal?: AbortSignal;
  /**
   * Called for each `emit(text)`, in order, on the caller's thread, while the code runs and before
   * `run` settles (the embedded sandbox runs code on a worker thread and delivers emits in small
   * batches). Not called after `signal` aborts. If it throws, the run stops and rejects with that
   * error. When it answers a promise (its consumer is behind), the sandbox stops taking output
   * from the code until the promise settles: the code waits in `emit` once a little more is on
   * its way (back-pressure; the wait counts against its time limit).
   */
  onEmit?(text: string): unknown;
  /**
   * When given, called instead of `onEmit` with a batch of emits at a time: the JSON text of the
   * array of their strings, in order, as `JSON.stringify` writes it (`["a","b\n"]`, no
   * whitespace; never empty). The same rules as `onEmit` otherwise (a throw stops the run, a
   * promise holds the code back). A listener that writes the texts on as JSON saves parsing and
   * serializing each. A sandbox that does not batch may ignore it and call `onEmit`.
   */
  onEmits?(json: string): unknown;
}

export interface CodeSandboxResult {
  /** The returned value, as JSON (undefined becomes null). */
  value: unknown;
  /** What the code wrote with console.log/info/warn/error, in order. */
  console: Array<{ level: 'log' | 'info' | 'warn' | 'error'; text: string }>;
  durationMs: number;
}

/**
 * The CodeSandbox port: runs untrusted JavaScript with no access to the host: no network, no
 * files, no timers beyond the call, no process, within time and memory limits.
 *
 * Contract: `run` resolves with the result, or rejects with a `TrellisError` whose code is
 * `sandbox_timeout` (time limit or abort), `sandbox_memory_exceeded`, or `sandbox_error` (the
 * code threw or did not compile; the message is the code's error message). A failure of one run
 * never affects another.
 */
export interface CodeSandbox {
  run(request: CodeSandboxRequest): Promise<CodeSandboxResult>;
}

export const codeSandboxServiceIdentifier: ServiceIdentifier<CodeSandbox> = Symbol.for('@trellis/core/CodeSandbox');
