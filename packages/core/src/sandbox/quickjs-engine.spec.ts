import { afterEach, describe, expect, it } from 'vitest';
import { QuickJsEngine, type ConsoleLevel, type EngineHooks, type EngineJob } from './quickjs-engine.js';

const MiB = 1024 * 1024;
const job = (code: string, extra: Partial<EngineJob> = {}): EngineJob => ({ code, globalsJson: '{}', timeoutMs: 2_000, memoryBytes: 16 * MiB, maxStackBytes: 512 * 1024, ...extra });

/** Hooks that keep what a run handed over. */
function listener() {
  const emitted: string[] = [];
  const lines: [ConsoleLevel, string][] = [];
  const hooks: EngineHooks = {
    emits: (json) => emitted.push(...(JSON.parse(json) as string[])),
    console: (level, text) => lines.push([level, text]),
    aborted: () => false,
  };
  return { emitted, lines, hooks };
}

describe('QuickJsEngine: the next run\'s context made ahead', () => {
  let engine: QuickJsEngine;
  afterEach(() => engine?.recycle(false));

  it('frees the last run and makes the next context in recycle; the run that takes it is as fresh as any, and its output goes to its own hooks', async () => {
    engine = new QuickJsEngine(64 * MiB);
    await engine.prepare(16 * MiB);
    const first = listener();
    const polluted = engine.run(job('emit("a"); console.log("one"); globalThis.leak = 1; Object.prototype.polluted = true; JSON.stringify = () => "tampered"; return 1'), first.hooks);
    expect(polluted).toMatchObject({ ok: true, json: '1' });
    engine.recycle();
    const second = listener();
    const fresh = engine.run(job('emit("b"); console.log({ n: 2 }); return [typeof leak, ({}).polluted === undefined]'), second.hooks);
    expect(fresh).toMatchObject({ ok: true, json: '["undefined",true]' });
    expect(first).toMatchObject({ emitted: ['a'], lines: [['log', 'one']] });
    expect(second).toMatchObject({ emitted: ['b'], lines: [['log', '{"n":2}']] });
    expect(engine.stats).toEqual({ loads: 1, discards: 0, teardownFailures: 0, warmStarts: 1 });
  });

  it('a run made ahead keeps its job\'s limits: memory, time and stack', async () => {
    engine = new QuickJsEngine(64 * MiB);
    await engine.prepare(8 * MiB);
    const { hooks } = listener();
    engine.run(job('return 0', { memoryBytes: 8 * MiB }), hooks);
    engine.recycle();
    expect(engine.run(job('const keep = []; for (;;) keep.push(new Array(1e5).fill(1));', { memoryBytes: 8 * MiB }), hooks)).toMatchObject({ ok: false, code: 'sandbox_memory_exceeded' });
    await engine.prepare(8 * MiB);
    engine.recycle();
    expect(engine.run(job('for (;;) {}', { memoryBytes: 8 * MiB, timeoutMs: 50 }), hooks)).toMatchObject({ ok: false, code: 'sandbox_timeout' });
    engine.recycle();
    expect(engine.run(job('const f = (n) => f(n + 1) + 1; return f(0)', { memoryBytes: 8 * MiB }), hooks)).toMatchObject({ ok: false, code: 'sandbox_error', message: 'Maximum call stack size exceeded' });
    // A recursion that ran out of the thread's stack in WASM drops the module (as before); the worker loads another.
    await engine.prepare(8 * MiB);
    engine.recycle();
    expect(engine.run(job('return 2', { memoryBytes: 8 * MiB }), hooks)).toMatchObject({ ok: true, json: '2' });
    expect(engine.stats.teardownFailures).toBe(0);
    expect(engine.stats.warmStarts).toBeGreaterThanOrEqual(3);
  });

  it('a run with no recycle before it frees what the last run left, and a context made in a module since replaced is not used', async () => {
    engine = new QuickJsEngine(64 * MiB);
    await engine.prepare(16 * MiB);
    const { hooks } = listener();
    expect(engine.run(job('return 1'), hooks)).toMatchObject({ ok: true, json: '1' });
    expect(engine.run(job('return 2'), hooks)).toMatchObject({ ok: true, json: '2' });
    expect(engine.stats.warmStarts).toBe(0);
    engine.recycle();
    // Another memory limit: another module; the context made in the first is dropped with it.
    await engine.prepare(256 * MiB);
    expect(engine.run(job('return 3', { memoryBytes: 256 * MiB }), hooks)).toMatchObject({ ok: true, json: '3' });
    expect(engine.stats).toEqual({ loads: 2, discards: 0, teardownFailures: 0, warmStarts: 0 });
  });
});
