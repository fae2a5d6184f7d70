import { parentPort, workerData } from 'node:worker_threads';
import { QuickJsEngine, type ConsoleLevel, type EngineJob, type EngineOutcome, type EngineStats } from './quickjs-engine.js';
import { ABORT_INDEX, ACK_INDEX, OUTPUT_IN_FLIGHT, STARTED_AT_INDEX, STARTED_ID_INDEX } from './quickjs-shared-memory.js';

/**
 * Entry of a sandbox worker thread: runs the jobs the main thread sends, one at a time, and
 * streams their emits and console lines back as they happen: the emits of a batch as one JSON
 * text (the sandbox's own batches joined, never parsed here), so a burst of thousands of emits
 * costs the main thread a few messages and one `JSON.parse` each. The last batch travels with
 * the job's 'done', so a short job costs one message each way. At most `OUTPUT_IN_FLIGHT` batches
 * travel ahead of what the main thread took (`ACK_INDEX`): past that the code waits in its `emit`
 * (or console call) until the main thread takes one, the job is aborted, or its time is up, so
 * output never piles up faster than its listener stores it. The main thread aborts a job
 * through the shared flag (seen by the interpreter's interrupt handler) and, if the job does not
 * stop within the grace period, terminates the whole thread.
 */
export interface WorkerData {
  /** The memory shared with the main thread: see `quickjs-shared-memory.ts`. */
  shared: SharedArrayBuffer;
  retainMemoryBytes: number;
}

export interface WorkerJob extends EngineJob {
  maxConsoleChars: number;
}

export type ToWorker = { type: 'run'; id: number; job: WorkerJob };
/** A console line: `[level, text]`. */
export type ConsoleItem = [ConsoleLevel, string];

/**
 * A batch of output: `emits`, the JSON text of the array of emitted strings, in order ('' when
 * none), and the console lines, in order (the two are separate streams).
 */
export type FromWorker =
  | { type: 'output'; id: number; emits: string; console: ConsoleItem[] }
  /** The job's end, with the output that was still waiting (`emits` '' and `console` empty when none), and the engine's counters after it. */
  | { type: 'done'; id: number; outcome: EngineOutcome; emits: string; console: ConsoleItem[]; stats: EngineStats };

/** Output is sent in batches: when this much waits, or when the oldest waited this long. */
const BATCH_CHARS = 256 * 1024;
const BATCH_CONSOLE = 512;
const BATCH_MS = 2;

/** Joins JSON arrays (`["a"]`, `["b","c"]`) into one (`["a","b","c"]`). */
export function joinJsonArrays(parts: readonly string[]): string {
  if (parts.length === 1) return parts[0]!;
  let text = '[';
  for (const part of parts) {
    const inner = part.slice(1, -1);
    if (!inner) continue;
    text += (text.length > 1 ? ',' : '') + inner;
  }
  return `${text}]`;
}

const port = parentPort;
if (port) {
  const { shared, retainMemoryBytes } = workerData as WorkerData;
  const flag = new Int32Array(shared);
  const clock = new Float64Array(shared);
  const engine = new QuickJsEngine(retainMemoryBytes);
  const send = (message: FromWorker) => port.postMessage(message);
  const none: ConsoleItem[] = [];
  const failed = (id: number, code: 'sandbox_error' | 'sandbox_timeout', message: string) =>
    send({ type: 'done', id, outcome: { ok: false, code, message, durationMs: 0 }, emits: '', console: none, stats: engine.stats });

  const execute = ({ id, job }: ToWorker) => {
    if (Atomics.load(flag, ABORT_INDEX) !== 0) {
      // Aborted while the worker was getting ready: the code never starts.
      failed(id, 'sandbox_timeout', 'The run was cancelled before the code started.');
      return;
    }
    const startedAt = performance.now();
    clock[STARTED_AT_INDEX] = performance.timeOrigin + startedAt;
    Atomics.store(flag, STARTED_ID_INDEX, id);
    const deadline = startedAt + job.timeoutMs;
    /** Output batches sent for this job (the main thread counts those it took at `ACK_INDEX`). */
    let sent = 0;
    /** Waits while too many batches are on their way, unless the job was aborted or its time is up (the interrupt handler then stops the code). */
    const holdBack = () => {
      for (;;) {
        const taken = Atomics.load(flag, ACK_INDEX);
        if (sent - taken < OUTPUT_IN_FLIGHT) return;
        if (Atomics.load(flag, ABORT_INDEX) !== 0) return;
        const left = deadline - performance.now();
        if (left <= 0) return;
        Atomics.wait(flag, ACK_INDEX, taken, Math.min(20, Math.ceil(left)));
      }
    };
    let consoleChars = 0;
    let consoleFull = false;
    let emits: string[] = [];
    let emitChars = 0;
    let lines: ConsoleItem[] = [];
    let batchStarted = 0;
    /** When the last batch was sent (see `emits`). */
    let lastSent = Number.NEGATIVE_INFINITY;
    const waiting = () => emits.length > 0 || lines.length > 0;
    const flush = () => {
      if (!waiting()) return;
      send({ type: 'output', id, emits: emits.length ? joinJsonArrays(emits) : '', console: lines });
      sent += 1;
      lastSent = performance.now();
      emits = [];
      emitChars = 0;
      lines = [];
      holdBack();
    };
    const due = () => emitChars >= BATCH_CHARS || lines.length >= BATCH_CONSOLE || performance.now() - batchStarted >= BATCH_MS;
    const push = (item: ConsoleItem) => {
      if (!waiting()) batchStarted = performance.now();
      lines.push(item);
      if (due()) flush();
    };
    const outcome = engine.run(job, {
      emits: (json) => {
        if (!waiting()) batchStarted = performance.now();
        emits.push(json);
        emitChars += json.length;
        // The first emits after a quiet moment go at once (a stream's first chunk, a token after
        // a pause: nothing to batch them with yet); a burst is batched from its second batch on.
        if (batchStarted - lastSent >= BATCH_MS || due()) flush();
      },
      console: (level, text) => {
        if (consoleFull) return;
        if (consoleChars + text.length > job.maxConsoleChars) {
          consoleFull = true;
          push(['warn', `[console output past ${job.maxConsoleChars} characters was dropped]`]);
          return;
        }
        consoleChars += text.length;
        push([level, text]);
      },
      aborted: () => {
        // Polled while the code runs: output that waited long enough goes out even if the
        // code is busy computing rather than writing.
        if (waiting() && performance.now() - batchStarted >= BATCH_MS) flush();
        return Atomics.load(flag, ABORT_INDEX) !== 0;
      },
    });
    send({ type: 'done', id, outcome, emits: emits.length ? joinJsonArrays(emits) : '', console: lines, stats: engine.stats });
    // The outcome is on its way: free the run's runtime and make the next one's context now,
    // rather than at the start of the next job.
    engine.recycle();
  };

  port.on('message', (message: ToWorker) => {
    // The module is normally loaded already: the job runs at once, without a promise.
    if (engine.ready(message.job.memoryBytes)) return execute(message);
    engine.prepare(message.job.memoryBytes).then(
      () => execute(message),
      (error: unknown) => failed(message.id, 'sandbox_error', `The sandbox could not start: ${(error as Error).message}`),
    );
  });
}
