import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BlockExecutor } from '../blocks/executor.js';
import { parseWorkflow, type BlockKind } from '../blocks/workflow.js';
import { LocalEventSink } from './event-log.js';
import { CHECKPOINT_AFTER_MS, DEFERRED_CHECKPOINT_MS, initialState, RunEngine, type RunPersistence, type RunState } from './run-engine.js';

/**
 * Where the engine saves a run: checkpoints are skipped between replayable blocks (input, code,
 * output) only, so a retry never runs an LLM, tool or ask block again that had completed, and
 * never starts one from a state older than the block before it.
 */

const node = (type: string, attrs: Record<string, unknown>, text?: string) => ({ type, attrs, ...(text ? { content: [{ type: 'text', text }] } : {}) });
const input = (name: string) => node('inputBlock', { id: `in-${name}`, name, type: 'string' });
const code = (name: string) => node('codeBlock', { id: `code-${name}`, name, language: 'javascript' }, 'return 1;');
const llm = (name: string) => node('llmBlock', { id: `llm-${name}`, name, model: 'm' }, 'hi');
const output = (name: string) => node('outputBlock', { id: `out-${name}`, name }, 'done');

/** Executors that answer at once (the engine is under test, not the blocks); `code` may take simulated time. */
function engine(codeTakesMs = 0): RunEngine {
  const done = (kind: BlockKind): BlockExecutor => ({
    kind,
    async execute() {
      if (kind === 'code' && codeTakesMs) vi.setSystemTime(Date.now() + codeTakesMs);
      return { output: kind };
    },
  });
  return new RunEngine(new Map((['input', 'code', 'llm', 'output'] as BlockKind[]).map((kind) => [kind, done(kind)])));
}

async function execute(content: object[], codeTakesMs = 0): Promise<{ saved: number[]; finished: RunState | null }> {
  const blocks = parseWorkflow({ type: 'doc', content }, (issues) => new Error(JSON.stringify(issues)));
  const state = initialState({ id: 'r', documentId: null, userId: 'u', blocks, inputs: { a: 'x' }, onError: 'stop', startedAt: Date.now(), timeoutSeconds: 60 });
  const saved: number[] = [];
  let finished: RunState | null = null;
  const persistence: RunPersistence = {
    checkpoint: async (s) => void saved.push(s.cursor),
    heartbeat: async () => undefined,
    finish: async (s) => void (finished = structuredClone(s)),
  };
  await engine(codeTakesMs).execute(state, new LocalEventSink(), persistence);
  return { saved, finished };
}

describe('run checkpoints', () => {
  afterEach(() => vi.useRealTimers());

  it('writes none between replayable blocks: input → code → output is saved by its final record alone', async () => {
    const { saved, finished } = await execute([input('a'), code('c'), output('o')]);
    expect(saved).toEqual([]);
    expect(finished).toMatchObject({ status: 'completed', cursor: 3 });
  });

  it('saves before and after a block that is not replayable (an LLM block is never run again once completed)', async () => {
    // Cursor 1: the input block done, the LLM block next; cursor 3: input, code and LLM done.
    const { saved } = await execute([input('a'), code('c'), llm('l'), code('d'), output('o')]);
    expect(saved).toEqual([2, 3]);
    const first = await execute([input('a'), llm('l'), output('o')]);
    expect(first.saved).toEqual([1, 2]);
  });

  it('saves the skipped checkpoint while a replayable block runs long, with the state from before it', async () => {
    // Regression: with the checkpoint skipped between input and a long code block, readers saw no
    // finished block and a retry redid the input until the run ended.
    const sessions: Array<{ cursor: number; statuses: string[] }> = [];
    const slow: BlockExecutor = {
      kind: 'code',
      async execute() {
        await new Promise((resolve) => setTimeout(resolve, DEFERRED_CHECKPOINT_MS * 3));
        return { output: 'slow' };
      },
    };
    const quick = (kind: BlockKind): BlockExecutor => ({ kind, execute: async () => ({ output: kind }) });
    const runEngine = new RunEngine(new Map<BlockKind, BlockExecutor>([['input', quick('input')], ['code', slow], ['output', quick('output')]]));
    const blocks = parseWorkflow({ type: 'doc', content: [input('a'), code('c'), output('o')] }, (issues) => new Error(JSON.stringify(issues)));
    const state = initialState({ id: 'r', documentId: null, userId: 'u', blocks, inputs: { a: 'x' }, onError: 'stop', startedAt: Date.now(), timeoutSeconds: 60 });
    let finished: RunState | null = null;
    await runEngine.execute(state, new LocalEventSink(), {
      checkpoint: async (s) => void sessions.push({ cursor: s.cursor, statuses: s.sessions.map((x) => x.status) }),
      heartbeat: async () => undefined,
      finish: async (s) => void (finished = structuredClone(s)),
    });
    // Written once, during the code block, as the boundary left it: the input done, the code block next.
    expect(sessions).toEqual([{ cursor: 1, statuses: ['completed', 'pending', 'pending'] }]);
    expect(finished).toMatchObject({ status: 'completed', cursor: 3 });
  });

  it('saves after replayable blocks that took long, so a retry does not redo them', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { saved } = await execute([input('a'), code('c'), code('d'), output('o')], CHECKPOINT_AFTER_MS);
    expect(saved).toEqual([2, 3]);
  });
});

describe('a run that pauses at an ask block', () => {
  it('announces run_waiting only with the checkpoint that stores the waiting state', async () => {
    const ask: BlockExecutor = { kind: 'ask', execute: async () => ({ wait: { question: 'Why?' } }) };
    const input: BlockExecutor = { kind: 'input', execute: async () => ({ output: 'x' }) };
    const blocks = parseWorkflow(
      { type: 'doc', content: [node('inputBlock', { id: 'in-a', name: 'a', type: 'string' }), node('askBlock', { id: 'ask-q', name: 'q', question: 'Why?' })] },
      (issues) => new Error(JSON.stringify(issues)),
    );
    const state = initialState({ id: 'r', documentId: null, userId: 'u', blocks, inputs: { a: 'x' }, onError: 'stop', startedAt: Date.now(), timeoutSeconds: 60 });
    // What readers could see (`emit`: at once) and what waits for the next store (`emitStored`).
    const published: string[] = [];
    const stored: string[] = [];
    const sink = new LocalEventSink();
    const seen: { status: string; published: string[]; stored: string[] }[] = [];
    const recording = Object.assign(Object.create(sink) as LocalEventSink, {
      emit: (type: string, data: Record<string, unknown>) => (published.push(type), sink.emit(type, data)),
      emitStored: (type: string, data: Record<string, unknown>) => (stored.push(type), sink.emit(type, data)),
    });
    const persistence: RunPersistence = {
      checkpoint: async (s) => void seen.push({ status: s.status, published: [...published], stored: [...stored] }),
      heartbeat: async () => undefined,
      finish: async () => undefined,
    };
    await new RunEngine(new Map([['input', input], ['ask', ask]] as [BlockKind, BlockExecutor][])).execute(state, recording, persistence);
    expect(state.status).toBe('waiting');
    // The checkpoint before the ask block (not replayable), then the one that stores the pause.
    expect(seen.at(-1)).toEqual({ status: 'waiting', published: ['run_start', 'block_start', 'block_complete', 'block_end', 'block_start'], stored: ['run_waiting'] });
    expect(seen).toHaveLength(2);
  });
});
