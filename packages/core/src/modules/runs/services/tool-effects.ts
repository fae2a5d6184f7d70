import { createHash } from 'node:crypto';
import type { RunLogEvent } from '../../../ports/run-store.js';

/** Where a tool call happens in a run: the run, the block's path, the iteration of an enclosing loop, and the call's index in the block. */
export interface ToolCallPlace {
  runId: string;
  /** The block's path in the workflow; a top-level block's is its id. */
  path: string;
  /** The iteration of the enclosing loop (0 outside loops). */
  iteration?: number;
  /** The call's index within the block's execution (0 for a tool block; counted over a model turn's tool calls). */
  callIndex: number;
}

/**
 * The idempotency key of a tool call: derived from (run id, block path, iteration, call index)
 * only, so every attempt of the run (a retry after a lost worker, a continuation) derives the same
 * key for the same call. A UUID-shaped hex string of the place's SHA-256.
 */
export function toolCallIdempotencyKey(place: ToolCallPlace): string {
  const hex = createHash('sha256')
    .update(JSON.stringify([place.runId, place.path, place.iteration ?? 0, place.callIndex]))
    .digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The key of a block's `callIndex`-th tool call, the block's place read from its io (`path` defaults to the block id). */
export const blockToolCallKey = (io: { runId: string; path?: string; iteration?: number }, blockId: string, callIndex: number): string =>
  toolCallIdempotencyKey({ runId: io.runId, path: io.path ?? blockId, iteration: io.iteration ?? 0, callIndex });

/** Reads a run's log a page at a time (`read(runId, after)`), answering the tool results recorded under an idempotency key. */
export async function recordedToolResults(read: (after: number) => Promise<RunLogEvent[]>): Promise<Map<string, unknown>> {
  const results = new Map<string, unknown>();
  let after = 0;
  for (;;) {
    const page = await read(after);
    if (!page.length) return results;
    for (const event of page) {
      if (event.type !== 'tool_result' || !event.json.includes('"idempotencyKey"')) continue;
      const data = JSON.parse(event.json) as { idempotencyKey?: unknown; result?: unknown };
      if (typeof data.idempotencyKey === 'string') results.set(data.idempotencyKey, data.result ?? null);
    }
    after = page.at(-1)!.seq;
  }
}

/** A recall over a run's log, read once at the first question (an attempt that starts a run has nothing to recall). */
export function logRecall(fresh: boolean, read: (after: number) => Promise<RunLogEvent[]>): (key: string) => Promise<{ result: unknown } | undefined> {
  if (fresh) return async () => undefined;
  let loaded: Promise<Map<string, unknown>> | null = null;
  return async (key) => {
    loaded ??= recordedToolResults(read);
    const results = await loaded;
    return results.has(key) ? { result: results.get(key) } : undefined;
  };
}
