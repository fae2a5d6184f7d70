import { parentPort, workerData } from 'node:worker_threads';
import { QuickJsEngine, type ConsoleLevel, type EngineJob, type EngineOutcome } from './quickjs-engine.js';

/**
 * Entry of a sandbox worker thread: runs the jobs the main thread sends, one at a time, and
 * streams their emits and console lines back as they happen. The main thread aborts a job
 * through the shared flag (seen by the interpreter's interrupt handler) and, if the job does not
 * stop within the grace period, terminates the whole thread.
 */
export interface WorkerData {
  abortFlag: SharedArrayBuffer;
  retainMemoryBytes: number;
}

export interface WorkerJob extends EngineJob {
  maxConsoleChars: number;
}

export type ToWorker = { type: 'run'; id: number; job: WorkerJob };
/** Emits (a string) and console lines (`[level, text]`), in the order the code produced them. */
export type OutputItem = string | [ConsoleLevel, string];

export type FromWorker =
  | { type: 'started'; id: number }
  | { type: 'output'; id: number; items: OutputItem[] }
  | { type: 'done'; id: number; outcome: EngineOutcome };

/** Output is sent in batches: when this many items wait, or when the oldest waited this long. */
const BATCH_ITEMS = 512;
const BATCH_MS = 2;

const port = parentPort;
if (port) {
  const { abortFlag, retainMemoryBytes } = workerData as WorkerData;
  const flag = new Int32Array(abortFlag);
  const engine = new QuickJsEngine(retainMemoryBytes);
  const send = (message: FromWorker) => port.postMessage(message);

  port.on('message', (message: ToWorker) => {
    void (async () => {
      const { id, job } = message;
      try {
        await engine.prepare(job.memoryBytes);
      } catch (error) {
        send({ type: 'done', id, outcome: { ok: false, code: 'sandbox_error', message: `The sandbox could not start: ${(error as Error).message}`, durationMs: 0 } });
        return;
      }
      if (Atomics.load(flag, 0) !== 0) {
        // Aborted while the worker was getting ready: the code never starts.
        send({ type: 'done', id, outcome: { ok: false, code: 'sandbox_timeout', message: 'The run was cancelled before the code started.', durationMs: 0 } });
        return;
      }
      send({ type: 'started', id });
      let consoleChars = 0;
      let consoleFull = false;
      let batch: OutputItem[] = [];
      let batchStarted = 0;
      const flush = () => {
        if (batch.length === 0) return;
        send({ type: 'output', id, items: batch });
        batch = [];
      };
      const push = (item: OutputItem) => {
        if (batch.length === 0) batchStarted = performance.now();
        batch.push(item);
        if (batch.length >= BATCH_ITEMS || performance.now() - batchStarted >= BATCH_MS) flush();
      };
      const outcome = engine.run(job, {
        emit: (text) => push(text),
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
          if (batch.length > 0 && performance.now() - batchStarted >= BATCH_MS) flush();
          return Atomics.load(flag, 0) !== 0;
        },
      });
      flush();
      send({ type: 'done', id, outcome });
    })();
  });
}
