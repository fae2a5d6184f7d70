import { EventSourceParserStream } from 'eventsource-parser/stream';
import { TrellisApiError } from './errors.js';

/** One event of a run (docs/runs.md): its sequence number, type and fields. */
export interface RunEvent {
  seq: number;
  type: string;
  data: Record<string, any>;
}

export interface ResumeOptions {
  /** Start after this sequence number (0: the whole log). */
  after?: number;
  /** Reconnections in a row without a new event before giving up (default 5). */
  attempts?: number;
  /** First wait before reconnecting, doubled each time up to 5 s (default 250 ms). */
  delayMs?: number;
  signal?: AbortSignal;
}

/**
 * Opens the stream again: `after` is the last sequence number received (sent as `Last-Event-ID`),
 * `runId` the run once its `run_start` was seen.
 */
export type OpenRunStream = (after: number, runId: string | undefined, signal: AbortSignal | undefined) => Promise<Response>;

/** A run's stream ends at these events (the run completed, or waits for an answer). */
const last = new Set(['run_complete', 'run_waiting']);

const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

/** The SSE frames of a response body, parsed by eventsource-parser. */
async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<{ id?: string; event?: string; data: string }> {
  const reader = body.pipeThrough(new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>).pipeThrough(new EventSourceParserStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/**
 * Follows a run's SSE stream to its end, reconnecting when the connection drops: each
 * reconnection asks for the events after the last one received (`Last-Event-ID`), so every event
 * arrives exactly once and in order. Ends after `run_complete` or `run_waiting`, or when the
 * server answers 204 (the run ended and nothing is left). Errors the server answers (4xx) are
 * thrown as `TrellisApiError`; a 5xx or a network failure is retried like a drop.
 */
export async function* resumableRunStream(open: OpenRunStream, options: ResumeOptions = {}): AsyncGenerator<RunEvent> {
  let after = options.after ?? 0;
  let runId: string | undefined;
  let failures = 0;
  const attempts = options.attempts ?? 5;
  for (;;) {
    let response: Response | undefined;
    try {
      response = await open(after, runId, options.signal);
    } catch (error) {
      if (options.signal?.aborted) throw error;
    }
    if (response?.status === 204) return;
    if (response && !response.ok && response.status < 500) throw await TrellisApiError.from(response);
    if (response?.ok && response.body) {
      try {
        for await (const frame of frames(response.body)) {
          const seq = Number(frame.id);
          if (!Number.isSafeInteger(seq) || seq <= after || !frame.event) continue;
          after = seq;
          failures = 0;
          const event: RunEvent = { seq, type: frame.event, data: JSON.parse(frame.data) };
          if (event.type === 'run_start' && typeof event.data.runId === 'string') runId = event.data.runId;
          yield event;
          if (last.has(event.type)) return;
        }
      } catch (error) {
        if (options.signal?.aborted) throw error;
      }
    } else if (response) {
      await response.body?.cancel().catch(() => undefined);
    }
    if (++failures > attempts) throw new Error(`The run's stream was lost ${failures} times in a row after event ${after}.`);
    await pause(Math.min(5_000, (options.delayMs ?? 250) * 2 ** (failures - 1)), options.signal);
  }
}
