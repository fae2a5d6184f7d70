import { describe, expect, it } from 'vitest';
import type { BlockExecutor, BlockIo } from '../blocks/executor.js';
import { parseWorkflow, type BlockKind } from '../blocks/workflow.js';
import { BACKLOG_EVENTS, LocalEventSink, type RunEventRecord } from './event-log.js';
import { initialState, RunEngine, type OutputLimits, type RunPersistence, type RunState } from './run-engine.js';

const node = (type: string, attrs: Record<string, unknown>, text?: string) => ({ type, attrs, ...(text ? { content: [{ type: 'text', text }] } : {}) });
const code = (name: string, attrs: Record<string, unknown> = {}) => node('codeBlock', { id: `code-${name}`, name, language: 'javascript', ...attrs }, 'return 1;');

/** A code executor standing in for a producer: `produce` gets the block's io. */
function engineWith(produce: (io: BlockIo) => Promise<unknown>, limits: OutputLimits): RunEngine {
  const executor: BlockExecutor = { kind: 'code', execute: async (_block, io) => ({ output: await produce(io) }) };
  return new RunEngine(new Map<BlockKind, BlockExecutor>([['code', executor]]), limits);
}

async function run(engine: RunEngine, content: object[], sink = new LocalEventSink()): Promise<{ finished: RunState; events: RunEventRecord[] }> {
  const blocks = parseWorkflow({ type: 'doc', content }, (issues) => new Error(JSON.stringify(issues)));
  const state = initialState({ id: 'r', documentId: null, userId: 'u', blocks, inputs: {}, onError: 'stop', startedAt: Date.now(), timeoutSeconds: 60 });
  let finished: RunState | null = null;
  const persistence: RunPersistence = { checkpoint: async () => undefined, heartbeat: async () => undefined, finish: async (s) => void (finished = s) };
  const events: RunEventRecord[] = [];
  const reading = (async () => {
    for await (const batch of sink.batches()) events.push(...batch);
  })();
  await engine.execute(state, sink, persistence);
  await sink.close();
  await reading;
  return { finished: finished!, events };
}

const roomy: OutputLimits = { blockEvents: 1e9, blockBytes: 1e12, runEvents: 1e9, runBytes: 1e12 };

describe('output limits of blocks and runs', () => {
  it('fails a block that emits past its event quota with output_limit_exceeded, and nothing past the quota is emitted', async () => {
    const engine = engineWith(async (io) => {
      // An endless producer: only the quota stops it.
      for (;;) await io.chunk('x');
    }, { ...roomy, blockEvents: 50 });
    const { finished, events } = await run(engine, [code('loop')]);
    expect(finished.status).toBe('failed');
    expect(finished.error).toMatchObject({ code: 'output_limit_exceeded' });
    expect(finished.error!.message).toMatch(/runs\.maxBlockEvents/);
    expect(events.filter((e) => e.type === 'block_chunk')).toHaveLength(50);
    expect(events.find((e) => e.type === 'block_error')!.data).toMatchObject({ code: 'output_limit_exceeded' });
  });

  it('counts bytes per block and events per run across blocks; a block that swallows the error still fails', async () => {
    const bytes = engineWith(async (io) => {
      for (;;) await io.chunk('é'.repeat(10)); // 20 bytes of UTF-8 each
    }, { ...roomy, blockBytes: 100 });
    const first = await run(bytes, [code('big')]);
    expect(first.finished.error!.message).toMatch(/runs\.maxBlockOutputBytes/);
    expect(first.events.filter((e) => e.type === 'block_chunk')).toHaveLength(5);

    const swallowing = engineWith(async (io) => {
      for (let i = 0; i < 20; i++) {
        try {
          io.chunk('x');
        } catch {
          // An executor that ignores the quota's error.
        }
      }
      return 'done';
    }, { ...roomy, runEvents: 25 });
    const { finished, events } = await run(swallowing, [code('a', { onError: 'continue' }), code('b', { onError: 'continue' })]);
    const errors = events.filter((e) => e.type === 'block_error').map((e) => e.data);
    expect(errors).toEqual([{ blockId: 'code-b', error: expect.stringMatching(/runs\.maxRunEvents/) as unknown as string, code: 'output_limit_exceeded' }]);
    expect(events.filter((e) => e.type === 'block_chunk')).toHaveLength(25);
    expect(finished.status).toBe('completed');
  });

  it('counts a batch of chunks (a sandbox\'s emits) as its deltas one by one: the quota strikes at the same delta, escapes and multi-byte text counted as their UTF-8 bytes', async () => {
    // 'é\n"' is four bytes of UTF-8 (six characters of JSON): 25 fit in 100 bytes.
    const batches = (chunked: boolean) =>
      engineWith(async (io) => {
        for (;;) {
          const behind = chunked ? io.chunks(JSON.stringify(Array(10).fill('é\n"'))) : io.chunk('é\n"');
          if (behind) await behind;
        }
      }, { ...roomy, blockBytes: 100 });
    for (const chunked of [false, true]) {
      const { finished, events } = await run(batches(chunked), [code('big')]);
      expect(finished.error!.message).toMatch(/runs\.maxBlockOutputBytes/);
      expect(events.filter((e) => e.type === 'block_chunk').map((e) => e.data.delta)).toEqual(Array(25).fill('é\n"'));
    }
    // An array with other values than strings (not what the embedded sandbox sends): each is its JSON text.
    const mixed = engineWith(async (io) => {
      await io.chunks('["a",1,null,{"b":"c"},"d"]');
      return 'done';
    }, roomy);
    const other = await run(mixed, [code('mixed')]);
    expect(other.events.filter((e) => e.type === 'block_chunk').map((e) => e.data.delta)).toEqual(['a', '1', 'null', '{"b":"c"}', 'd']);
    const counted = engineWith(async (io) => {
      for (;;) await io.chunks('["a","b","c"]');
    }, { ...roomy, runEvents: 7 });
    const { events } = await run(counted, [code('abc')]);
    expect(events.filter((e) => e.type === 'block_chunk').map((e) => e.data.delta)).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a']);
  });

  it('answers a promise from chunk while the sink holds too much, and the producer that waits for it never gets far ahead of its reader', async () => {
    const sink = new LocalEventSink();
    let most = 0;
    let waits = 0;
    const engine = engineWith(async (io) => {
      for (let i = 0; i < 5 * BACKLOG_EVENTS; i++) {
        const behind = io.chunk('x');
        most = Math.max(most, (sink as unknown as { queue: unknown[] }).queue.length);
        if (behind) {
          waits += 1;
          await behind;
        }
      }
      return 'done';
    }, roomy);
    const { finished, events } = await run(engine, [code('fast')], sink);
    expect(finished.status).toBe('completed');
    expect(events.filter((e) => e.type === 'block_chunk')).toHaveLength(5 * BACKLOG_EVENTS);
    expect(waits).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(BACKLOG_EVENTS + 1);
  });

  it('keeps no events of a debug run whose caller reads only its result', async () => {
    const sink = new LocalEventSink();
    sink.discard();
    sink.emitChunk('b', 'x');
    expect(sink.backlog()).toBeUndefined();
    const seen: unknown[] = [];
    await sink.close();
    for await (const batch of sink.batches()) seen.push(...batch);
    expect(seen).toEqual([]);
  });
});
