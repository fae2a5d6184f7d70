import { describe, expect, it } from 'vitest';
import type { BlockExecutor, BlockIo } from '../../blocks/executor.js';
import { renderDeep } from '../../blocks/template.js';
import { parseWorkflow, type BlockKind, type WorkflowBlock } from '../../blocks/workflow.js';
import { LocalEventSink } from '../event-log.js';
import { initialState, RunEngine, type RunPersistence, type RunState } from '../run-engine.js';

/** Control flow in the engine, with a tool executor that answers its rendered args (and records each call). */

const tool = (name: string, args: Record<string, unknown>, attrs: Record<string, unknown> = {}) => ({ type: 'toolBlock', attrs: { id: `t-${name}`, name, tool: 'x', action: 'a', args, ...attrs } });
const input = (name: string, type = 'string') => ({ type: 'inputBlock', attrs: { id: `in-${name}`, name, type } });
const loop = (name: string, items: string, children: object[], attrs: Record<string, unknown> = {}) => ({ type: 'loopBlock', attrs: { id: name, name, items, ...attrs }, content: children });
const repeat = (name: string, until: string, children: object[], attrs: Record<string, unknown> = {}) => ({ type: 'repeatBlock', attrs: { id: name, name, until, ...attrs }, content: children });
const branch = (name: string, cases: Array<[string | undefined, object[]]>) => ({ type: 'branchBlock', attrs: { id: name, name }, content: cases.map(([when, blocks], i) => ({ type: 'branchCase', attrs: { name: when ? `c${i}` : 'else', ...(when ? { when } : {}) }, content: blocks })) });
const parallel = (name: string, arms: Array<[string, object[], Record<string, unknown>?]>) => ({ type: 'parallelBlock', attrs: { id: name, name }, content: arms.map(([arm, blocks, attrs]) => ({ type: 'parallelBranch', attrs: { name: arm, ...attrs }, content: blocks })) });

interface Harness {
  calls: Array<{ block: string; args: unknown }>;
  running: number;
  maxRunning: number;
  /** Called as a tool call starts; may throw or stop the run. */
  onCall?: (args: Record<string, unknown>, io: BlockIo) => void;
}

function executors(h: Harness): Map<BlockKind, BlockExecutor> {
  const toolExecutor: BlockExecutor = {
    kind: 'tool',
    async execute(block: WorkflowBlock, io: BlockIo) {
      const args = renderDeep(block.attrs.args ?? {}, io.ctx) as Record<string, unknown>;
      h.calls.push({ block: block.name, args });
      h.running++;
      h.maxRunning = Math.max(h.maxRunning, h.running);
      try {
        h.onCall?.(args, io);
        await new Promise((resolve) => setTimeout(resolve, typeof args.delayMs === 'number' ? args.delayMs : 1));
        if (io.signal.aborted) throw io.signal.reason;
        if (args.fail) throw new Error(`failed on ${JSON.stringify(args.fail)}`);
        return { output: args.value ?? args };
      } finally {
        h.running--;
      }
    },
  };
  const inputExecutor: BlockExecutor = { kind: 'input', execute: async (block, io) => ({ output: io.inputs[block.name] ?? null }) };
  return new Map<BlockKind, BlockExecutor>([
    ['tool', toolExecutor],
    ['input', inputExecutor],
  ]);
}

const parse = (content: object[]) => parseWorkflow({ type: 'doc', content }, (issues) => Object.assign(new Error('invalid_workflow'), { issues }));

async function run(content: object[], inputs: Record<string, unknown> = {}, h: Harness = { calls: [], running: 0, maxRunning: 0 }, from?: RunState) {
  const blocks = parse(content);
  const state = from ?? initialState({ id: 'r', documentId: null, userId: 'u', blocks, inputs, onError: 'stop', startedAt: Date.now(), timeoutSeconds: 60 });
  const sink = new LocalEventSink();
  const events: Array<{ type: string; data: Record<string, unknown> }> = [];
  const reading = (async () => {
    for await (const batch of sink.batches()) events.push(...batch.map((e) => ({ type: e.type, data: e.data })));
  })();
  const checkpoints: RunState[] = [];
  const persistence: RunPersistence = {
    checkpoint: async (s) => void checkpoints.push({ ...s, sessions: structuredClone(s.sessions), ctx: structuredClone(s.ctx) }),
    heartbeat: async () => undefined,
    finish: async (s, out) => {
      out.emit('run_complete', {});
    },
  };
  const controller = new AbortController();
  await new RunEngine(executors(h)).execute(state, sink, persistence, { signal: controller.signal, stopReason: () => 'shutdown' });
  await sink.close();
  await reading;
  const value = (name: string) => state.ctx.find((e) => e.name === name)?.value;
  return { state, events, h, checkpoints, value, controller };
}

describe('control flow', () => {
  it('when: a block whose condition does not hold is skipped (no events, null output, session skipped)', async () => {
    const r = await run([input('n', 'integer'), tool('big', { value: 'big' }, { when: 'inputs.n > 10' }), tool('small', { value: 'small' }, { when: 'n <= 10' })], { n: 3 });
    expect(r.value('big')).toBeNull();
    expect(r.value('small')).toBe('small');
    expect(r.state.sessions.find((s) => s.blockId === 't-big')!.status).toBe('skipped');
    expect(r.events.filter((e) => e.data.blockId === 't-big')).toEqual([]);
  });

  it('branch: the first case whose when holds runs; else when none does', async () => {
    const doc = () => [input('n', 'integer'), branch('pick', [['n > 100', [tool('huge', { value: 'huge' })]], ['n > 10', [tool('big', { value: 'big' })]], [undefined, [tool('small', { value: 'small {{ n }}' })]]])];
    expect((await run(doc(), { n: 50 })).value('pick')).toBe('big');
    const small = await run(doc(), { n: 2 });
    expect(small.value('pick')).toBe('small 2');
    expect(small.h.calls.map((c) => c.block)).toEqual(['small']);
    expect(small.events.find((e) => e.type === 'block_start' && e.data.blockId === 't-small')!.data).toMatchObject({ path: 'pick.else', branch: 'else' });
  });

  it('loop: one output per item in order, at most `concurrency` at once; events and sessions say where', async () => {
    const items = Array.from({ length: 9 }, (_, i) => i);
    const r = await run([input('xs', 'array'), loop('each', 'xs.map(x, x * 10)', [tool('double', { value: '{{ item }}', delayMs: 5 }), tool('label', { value: '#{{ index }}={{ double }}' })], { concurrency: 3 })], { xs: items });
    expect(r.value('each')).toEqual(items.map((i) => `#${i}=${i * 10}`));
    expect(r.h.maxRunning).toBeLessThanOrEqual(3);
    expect(r.h.maxRunning).toBeGreaterThan(1);
    const start = r.events.find((e) => e.type === 'block_start' && e.data.blockId === 't-label' && e.data.iteration === 4)!;
    expect(start.data).toMatchObject({ path: 'each[4]', iteration: 4, blockName: 'label' });
    const sessions = r.state.sessions.filter((s) => s.blockId === 't-double');
    expect(sessions.map((s) => s.iteration).sort((a, b) => a! - b!)).toEqual(items);
    // Names inside the loop are not in the run's context; the loop's output is.
    expect(r.state.ctx.map((e) => e.name)).toEqual(['xs', 'each']);
  });

  it('repeat: runs until `until` holds, with index and previous, bounded by maxIterations', async () => {
    const r = await run([repeat('grow', 'output >= 8', [tool('next', { value: { i: '{{ index }}', prev: '{{ previous }}' } }), tool('calc', { value: '{{ next.i }}' })], { maxIterations: 20 })]);
    expect(r.h.calls.filter((c) => c.block === 'next')).toHaveLength(9);
    expect(r.h.calls.at(-2)!.args).toMatchObject({ value: { i: 8, prev: 7 } });
    expect(r.value('grow')).toBe(8);
    const capped = await run([repeat('never', 'false', [tool('once', { value: 1 })], { maxIterations: 4 })]);
    expect(capped.h.calls).toHaveLength(4);
    expect(capped.value('never')).toBe(1);
  });

  it('parallel: an object by branch name; a failing branch fails the group and stops the others unless it says onError continue', async () => {
    const ok = await run([parallel('both', [['a', [tool('a1', { value: 'A' })]], ['b', [tool('b1', { value: 'B', delayMs: 5 }), tool('b2', { value: '{{ b1 }}!' })]]])]);
    expect(ok.value('both')).toEqual({ a: 'A', b: 'B!' });
    const bad = await run([parallel('group', [['fast', [tool('boom', { fail: 'x' })]], ['slow', [tool('wait', { delayMs: 200 }), tool('after', {})]]]), tool('later', {})]);
    expect(bad.state.status).toBe('failed');
    expect(bad.state.error).toMatchObject({ code: 'block_failed' });
    expect(bad.h.calls.map((c) => c.block)).not.toContain('after');
    expect(bad.h.calls.map((c) => c.block)).not.toContain('later');
    const tolerant = await run([parallel('group', [['fast', [tool('boom', { fail: 'x' })], { onError: 'continue' }], ['slow', [tool('wait', { value: 'w', delayMs: 20 })]]])]);
    expect(tolerant.state.status).toBe('completed');
    expect(tolerant.value('group')).toEqual({ fast: null, slow: 'w' });
  });

  it('an expression that fails when evaluated fails its block with expression_failed and the position', async () => {
    const r = await run([input('xs', 'array'), loop('each', 'xs.map(x, x.missing)', [tool('t', {})])], { xs: [{}] });
    expect(r.state.status).toBe('failed');
    const error = r.events.find((e) => e.type === 'block_error')!;
    expect(error.data).toMatchObject({ blockId: 'each', code: 'expression_failed', position: 12 });
  });

  it('validation: bad nesting, a repeat without maxIterations and a bad expression are reported with their positions', () => {
    let issues: Array<{ field: string; constraint: string }> = [];
    try {
      parse([repeat('r', 'true', [tool('t', {}), input('inner')]), loop('l', 'xs.map(', [tool('u', {})]), branch('b', [[undefined, [tool('v', {})]], ['true', [tool('w', {})]]])]);
    } catch (error) {
      issues = (error as { issues: typeof issues }).issues;
    }
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: 'content.0.attrs.maxIterations', constraint: 'required' }),
        expect.objectContaining({ field: 'content.0.content.1', constraint: 'nesting' }),
        expect.objectContaining({ field: 'content.1.attrs.items', constraint: 'expression_invalid' }),
        expect.objectContaining({ field: 'content.2.content.0.attrs.when', constraint: 'required' }),
      ]),
    );
  });

  it('a continuation after a lost attempt does not run the loop iterations and blocks that were done again', async () => {
    const h: Harness = { calls: [], running: 0, maxRunning: 0 };
    const content = [input('xs', 'array'), loop('each', 'xs', [tool('first', { value: '{{ item }}a' }), tool('second', { value: '{{ first }}b' })], { concurrency: 2 })];
    const xs = ['p', 'q', 'r', 's', 't'];
    // The first attempt stops (a shutdown) as the 7th tool call starts.
    let stop: (() => void) | null = null;
    h.onCall = () => {
      if (h.calls.length === 7) stop?.();
    };
    const blocks = parse(content);
    const state = initialState({ id: 'r', documentId: null, userId: 'u', blocks, inputs: { xs }, onError: 'stop', startedAt: Date.now(), timeoutSeconds: 60 });
    const controller = new AbortController();
    stop = () => controller.abort();
    const checkpoints: RunState[] = [];
    const persistence: RunPersistence = {
      checkpoint: async (s) => void checkpoints.push({ ...s, sessions: structuredClone(s.sessions), ctx: structuredClone(s.ctx) }),
      heartbeat: async () => undefined,
      finish: async () => undefined,
    };
    await new RunEngine(executors(h)).execute(state, new LocalEventSink(), persistence, { signal: controller.signal, stopReason: () => 'shutdown' });
    const firstCalls = h.calls.length;
    expect(firstCalls).toBe(7);
    const last = checkpoints.at(-1)!;
    const done = last.sessions.filter((s) => 'value' in s).length;
    expect(done).toBeGreaterThanOrEqual(5);
    // The next attempt starts from the last checkpoint (blocks parsed again, as a worker does).
    const again = await run(content, { xs }, h, { ...last, blocks: parse(content), sessions: structuredClone(last.sessions), ctx: structuredClone(last.ctx) });
    expect(again.value('each')).toEqual(xs.map((x) => `${x}ab`));
    // Every block execution ran once, but for those not checkpointed as done when the attempt stopped.
    expect(h.calls.length - firstCalls).toBe(10 - done);
    const perExecution = new Map<string, number>();
    for (const c of h.calls) perExecution.set(JSON.stringify(c), (perExecution.get(JSON.stringify(c)) ?? 0) + 1);
    expect([...perExecution.values()].filter((n) => n > 1).length).toBeLessThanOrEqual(7 - done);
  });
});
