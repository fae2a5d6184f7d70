import { afterEach, describe, expect, it } from 'vitest';
import type { CodeSandboxRequest } from '../ports/code-sandbox.js';
import { CodeSandboxError, QuickJsCodeSandbox } from './quickjs-code-sandbox.js';

const MiB = 1024 * 1024;
const request = (code: string, extra: Partial<CodeSandboxRequest> = {}): CodeSandboxRequest => ({ code, globals: {}, timeoutMs: 2_000, memoryBytes: 16 * MiB, ...extra });
const settled = (promise: Promise<unknown>) => promise.then(
  () => 'ok',
  (error: unknown) => (error instanceof CodeSandboxError ? error.code : 'other'),
);
const until = async (check: () => boolean) => {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
};

// How the embedded sandbox shares its workers between tenants, and holds back code whose output
// is not taken. No time is asserted: the order of events is.
// Starting a worker thread (through tsx's loader in the tests) takes seconds on a loaded machine.
describe('QuickJsCodeSandbox: sharing and back-pressure', { timeout: 60_000 }, () => {
  const opened: QuickJsCodeSandbox[] = [];
  const open = (options: ConstructorParameters<typeof QuickJsCodeSandbox>[0]) => {
    const sandbox = new QuickJsCodeSandbox(options);
    opened.push(sandbox);
    return sandbox;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((sandbox) => sandbox.close()));
  });

  it('gives one tenant at most its share of the workers: another tenant\'s run starts while the first one\'s endless loops wait', async () => {
    const sandbox = open({ workers: 2, workersPerTenant: 1 });
    // Both workers started (runs without a tenant are not capped), so no run waits for a worker to load.
    await Promise.all([sandbox.warmUp(), sandbox.warmUp()]);
    const order: string[] = [];
    const loops = Array.from({ length: 4 }, (_, i) =>
      settled(sandbox.run(request('for (;;) {}', { tenant: 'attacker', timeoutMs: 1_500 }))).then((code) => order.push(`loop${i}:${code}`)),
    );
    await until(() => sandbox.queueStats().waiting.attacker === 3);
    expect(sandbox.queueStats().held).toEqual({ attacker: 1 });
    const victim = await sandbox.run(request('return 42', { tenant: 'victim' }));
    order.push('victim');
    expect(victim.value).toBe(42);
    await Promise.all(loops);
    // The victim ended before any of the loops (each runs to its time limit), which ran one at a time.
    expect(order).toEqual(['victim', 'loop0:sandbox_timeout', 'loop1:sandbox_timeout', 'loop2:sandbox_timeout', 'loop3:sandbox_timeout']);
    expect(sandbox.queueStats()).toEqual({ waiting: {}, held: {} });
  });

  it('serves waiting tenants in turn, each tenant\'s runs in order', async () => {
    const sandbox = open({ workers: 1, workersPerTenant: 1 });
    await sandbox.warmUp();
    const order: string[] = [];
    // The worker is held until the gate opens (the code waits in emit for its output to be taken).
    let open_!: () => void;
    const gate = new Promise<void>((resolve) => (open_ = resolve));
    let first = true;
    const blocker = sandbox.run(request('for (let i = 0; i < 2000; i++) emit("x".repeat(1000)); return 0', {
      tenant: 'a',
      timeoutMs: 30_000,
      onEmit: () => {
        if (first) {
          first = false;
          return gate;
        }
        return undefined;
      },
    }));
    const queued = [
      ['a', 'a1'],
      ['a', 'a2'],
      ['a', 'a3'],
      ['b', 'b1'],
      ['b', 'b2'],
      ['c', 'c1'],
    ].map(([tenant, name]) => sandbox.run(request('return 1', { tenant })).then(() => order.push(name!)));
    await until(() => Object.values(sandbox.queueStats().waiting).reduce((a, b) => a + b, 0) === 6);
    open_();
    await blocker;
    await Promise.all(queued);
    expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('counts the wait for a worker against the deadline: a run still waiting then fails without starting, and a cancelled one leaves the line', async () => {
    const sandbox = open({ workers: 1 });
    await sandbox.warmUp();
    const order: string[] = [];
    const hog = settled(sandbox.run(request('for (;;) {}', { tenant: 't', timeoutMs: 3_000 }))).then((code) => order.push(`hog:${code}`));
    await until(() => sandbox.queueStats().held.t === 1);
    const late = sandbox.run(request('return 1', { tenant: 'u', deadline: Date.now() + 100 }));
    const error = await late.then(
      () => undefined,
      (e: unknown) => e as CodeSandboxError,
    );
    order.push('late');
    expect(error).toBeInstanceOf(CodeSandboxError);
    expect(error!.code).toBe('sandbox_timeout');
    expect(error!.message).toMatch(/deadline while it waited for a sandbox worker/);
    const controller = new AbortController();
    const cancelled = settled(sandbox.run(request('return 1', { tenant: 'u', signal: controller.signal })));
    await until(() => sandbox.queueStats().waiting.u === 1);
    controller.abort();
    expect(await cancelled).toBe('sandbox_timeout');
    expect(sandbox.queueStats().waiting).toEqual({});
    await hog;
    expect(order).toEqual(['late', 'hog:sandbox_timeout']);
    expect(await settled(sandbox.run(request('return 1', { deadline: Date.now() - 1 })))).toBe('sandbox_timeout');
  });

  it('holds the code back while its listener is behind: no more output is delivered until the listener\'s promise settles', async () => {
    const sandbox = open({ workers: 1 });
    await sandbox.warmUp();
    let delivered = 0;
    let release!: () => void;
    const behind = new Promise<void>((resolve) => (release = resolve));
    let held = true;
    const running = settled(
      sandbox.run(
        request('for (let i = 0; ; i++) emit("x".repeat(1000))', {
          timeoutMs: 4_000,
          onEmit: () => {
            delivered += 1;
            return held ? behind : undefined;
          },
        }),
      ),
    );
    await until(() => delivered > 0);
    // Let whatever was on its way arrive, then look again: the count no longer moves.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const whileHeld = delivered;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(delivered).toBe(whileHeld);
    // At most the batches in flight (each at most ~512 emits of this size) came through.
    expect(whileHeld).toBeLessThan(4 * 512);
    held = false;
    release();
    expect(await running).toBe('sandbox_timeout');
    expect(delivered).toBeGreaterThan(whileHeld);
  });
});
