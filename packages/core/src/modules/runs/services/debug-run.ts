import type { WorkflowBlock } from '../blocks/workflow.js';
import { modelCallFrame } from '../../ai/index.js';
import { runSpan } from './run-span.js';
import { LocalEventSink } from './event-sink.js';
import type { RunContext } from './run-context.js';
import type { RunCredits } from './run-credits.js';
import { completion, initialState, type RunPersistence } from './run-engine.js';
import { runResult } from './run-result.js';
import type { StartedRun, StartRunInput } from './run-starter.js';

export interface DebugRunArgs {
  runId: string;
  input: StartRunInput;
  blocks: WorkflowBlock[];
  values: Record<string, unknown>;
  onError: 'stop' | 'continue';
  timeoutSeconds: number;
  reservationId: string | null;
  amount: number;
  teamId: string;
}

/** Starts a debug run (content given in the request): executed here, its events on the returned stream only, nothing stored. */
export function startDebugRun(ctx: RunContext, credits: RunCredits, args: DebugRunArgs): StartedRun {
  const { runId, input, blocks } = args;
  const state = initialState({ id: runId, documentId: input.documentId, userId: input.userId, blocks, inputs: args.values, onError: args.onError, startedAt: Date.now(), timeoutSeconds: args.timeoutSeconds });
  state.teamId = args.teamId;
  const sink = new LocalEventSink();
  /** The duration run_complete carried (the result answers the same). */
  let durationMs: number | null = null;
  const persistence: RunPersistence = {
    checkpoint: async () => undefined,
    heartbeat: async () => undefined,
    finish: async (final, events) => {
      await credits.settle(args.reservationId, args.amount, final);
      durationMs = Date.now() - final.startedAt;
      events.emit('run_complete', completion(final, durationMs));
    },
  };
  // Its model calls are recorded (charged to its hold) and traced under its span, as a stored run's.
  const scope = { runId, attempt: 1, reservationId: args.reservationId, teamId: args.teamId, userId: input.userId };
  const done = runSpan({ id: runId, attempt: 1, documentId: input.documentId ?? null }, () =>
    ctx.engine.execute(state, sink, persistence, { heartbeatMs: ctx.config.heartbeatSeconds * 1000, modelCalls: modelCallFrame(scope) }),
  state)
    .then(async () => {
      // A debug run stopped at an ask block cannot be resumed: its credits are settled now.
      if (state.status === 'waiting') await credits.settle(args.reservationId, args.amount, state);
    })
    .catch((error: unknown) => {
      ctx.log.error({ err: error, runId }, 'debug run failed');
      if (args.reservationId) void credits.release(args.reservationId, 'the run failed').catch(() => undefined);
    })
    .finally(() => void sink.close());
  let consumed = false;
  const batches = () => {
    if (consumed) throw new Error('The events of a debug run can be read once.');
    consumed = true;
    return sink.batches();
  };
  return {
    runId,
    documentId: input.documentId,
    stored: false,
    batches,
    events: () =>
      (async function* () {
        for await (const batch of batches()) yield* batch;
      })(),
    result: async () => {
      // Asked for the result only: the events will not be read, so they are not kept.
      if (!consumed) {
        consumed = true;
        sink.discard();
      }
      await done;
      return runResult({ ...state, durationMs: durationMs ?? Date.now() - state.startedAt });
    },
  };
}
