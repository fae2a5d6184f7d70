import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { CodeSandboxRequest } from '../ports/code-sandbox.js';
import { CodeSandboxError, QuickJsCodeSandbox } from './quickjs-code-sandbox.js';
import { joinJsonArrays } from './quickjs-worker.js';

const sandbox = new QuickJsCodeSandbox();
const MiB = 1024 * 1024;

const run = (code: string, extra: Partial<CodeSandboxRequest> = {}) =>
  sandbox.run({ code, globals: {}, timeoutMs: 2_000, memoryBytes: 16 * MiB, ...extra });

/** Runs code that must fail, and returns the port error it failed with. */
async function failure(code: string, extra: Partial<CodeSandboxRequest> = {}): Promise<CodeSandboxError> {
  const error = await run(code, extra).then(
    (result) => {
      throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
    },
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(CodeSandboxError);
  return error as CodeSandboxError;
}

describe('QuickJsCodeSandbox', () => {
  afterAll(() => sandbox.close());

  it('returns the value of the function body as JSON and sees the globals', async () => {
    const result = await run('return { sum: inputs.a + inputs.b, names: steps.map((s) => s.name.toUpperCase()), when: typeof Date.now() }', {
      globals: { inputs: { a: 2, b: 40 }, steps: [{ name: 'one' }, { name: 'two' }] },
    });
    expect(result.value).toEqual({ sum: 42, names: ['ONE', 'TWO'], when: 'number' });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect((await run('return "text"')).value).toBe('text');
    expect((await run('const x = 1;')).value).toBeNull();
  });

  it('compiles the code as new AsyncFunction(code) does: a function named anonymous, lines of <input> from 3, var local', async () => {
    const result = await run('var v = 1;\nreturn [arguments.callee.name, new Error("x").stack.trim(), this === globalThis, typeof globalThis.v, String(arguments.callee).slice(0, 29)]');
    expect(result.value).toEqual(['anonymous', expect.stringMatching(/^at anonymous \(<input>:4\b/) as unknown as string, true, 'undefined', 'async function anonymous(\n) {']);
    expect((await failure('import x from "y"; return 1')).code).toBe('sandbox_error');
  });

  it('runs async bodies: await on promises made inside the sandbox', async () => {
    const result = await run('const v = await Promise.all([1, 2].map(async (n) => n * 10)); return v;');
    expect(result.value).toEqual([10, 20]);
    const pending = await failure('await new Promise(() => {}); return 1;');
    expect(pending.code).toBe('sandbox_error');
    expect(pending.message).toMatch(/never settles/);
  });

  it('gives each run a fresh context: globals and prototype changes do not leak', async () => {
    await run('globalThis.leak = 1; Object.prototype.polluted = true; Array.prototype.push = null; return 1');
    const result = await run('return [typeof leak, ({}).polluted === undefined, typeof [].push]');
    expect(result.value).toEqual(['undefined', true, 'function']);
  });

  it('captures console output in order with levels, formatting values', async () => {
    const result = await run(`
      console.log('plain', 1, { a: [1, 2] }, null, undefined);
      console.info('info');
      console.warn(new TypeError('careful'));
      console.error('bad', Symbol('s'));
      console.debug('debug goes to log');
      return 'ok';
    `);
    expect(result.console).toEqual([
      { level: 'log', text: 'plain 1 {"a":[1,2]} null undefined' },
      { level: 'info', text: 'info' },
      { level: 'warn', text: 'TypeError: careful' },
      { level: 'error', text: 'bad Symbol(s)' },
      { level: 'log', text: 'debug goes to log' },
    ]);
  });

  it('makes a worker\'s next context while it is idle, after it sent a run\'s outcome: its next run starts warm and as fresh', async () => {
    const own = new QuickJsCodeSandbox({ workers: 1 });
    try {
      const ask = (code: string, onEmit?: (text: string) => void) => own.run({ code, globals: { n: 2 }, timeoutMs: 2_000, memoryBytes: 16 * MiB, onEmit });
      const first: string[] = [];
      expect((await ask('emit("a"); globalThis.leak = 1; Array.prototype.map = null; return n', (text) => first.push(text))).value).toBe(2);
      const second: string[] = [];
      expect((await ask('emit("b"); return [typeof leak, [1].map((x) => x + n)]', (text) => second.push(text))).value).toEqual(['undefined', [3]]);
      expect([first, second]).toEqual([['a'], ['b']]);
      expect(own.moduleStats()).toMatchObject({ loads: 1, teardownFailures: 0, warmStarts: 1 });
    } finally {
      await own.close();
    }
  });

  it('formats console, emit and errors with the built-ins of the fresh context, even when the code replaced them before first use', async () => {
    const received: string[] = [];
    const tamper = 'JSON.stringify = () => "tampered"; String = () => "tampered"; Error = function () {}; Date.now = () => { throw new Error("no clock") }; Object.prototype.write = () => {}; Object.prototype.emit = () => {}; Array.prototype.join = () => "tampered"; Reflect.apply = () => "tampered";';
    const result = await run(`${tamper} console.log({ a: 1 }, 2, Symbol("s")); emit({ b: 2 }); emit("x"); return 1`, { onEmit: (text) => received.push(text) });
    expect(result.console).toEqual([{ level: 'log', text: '{"a":1} 2 Symbol(s)' }]);
    expect(received).toEqual(['{"b":2}', 'x']);
    expect((await failure(`${tamper} throw new RangeError("boom")`)).message).toBe('boom');
    expect((await failure(`${tamper} throw { code: 7 }`)).message).toBe('{"code":7}');
  });

  it('caps console output, keeping what came first and saying that the rest was dropped', async () => {
    const small = new QuickJsCodeSandbox({ maxConsoleChars: 1_000, workers: 1 });
    const result = await small.run({ code: 'for (let i = 0; i < 10000; i++) console.log("x".repeat(100)); return "done"', globals: {}, timeoutMs: 5_000, memoryBytes: 16 * MiB }).finally(() => small.close());
    expect(result.value).toBe('done');
    expect(result.console).toHaveLength(11);
    expect(result.console[10]).toEqual({ level: 'warn', text: expect.stringMatching(/dropped/) as unknown as string });
  });

  it('calls onEmit in order for 10,000 emits, all before run settles', async () => {
    const received: string[] = [];
    let observedBeforeReturn = -1;
    const result = await run(
      'for (let i = 0; i < 10000; i++) emit("chunk " + i); emit({ n: 1 }); emit(7); const seen = probe(); return seen;',
      {
        globals: {},
        onEmit: (text) => received.push(text),
        timeoutMs: 10_000,
      },
    ).catch((error: unknown) => {
      // `probe` does not exist: this run proves that the sandbox cannot call back into the host.
      observedBeforeReturn = received.length;
      return error as CodeSandboxError;
    });
    expect(result).toBeInstanceOf(CodeSandboxError);
    expect((result as CodeSandboxError).message).toMatch(/probe/);
    expect(observedBeforeReturn).toBe(10_002);
    expect(received.slice(0, 3)).toEqual(['chunk 0', 'chunk 1', 'chunk 2']);
    expect(received[9_999]).toBe('chunk 9999');
    expect(received.slice(10_000)).toEqual(['{"n":1}', '7']);
    for (let i = 0; i < 10_000; i++) if (received[i] !== `chunk ${i}`) throw new Error(`emit ${i} out of order: ${received[i]}`);
  });

  it('delivers a burst of emits in a few batches (one JSON text each), every text intact, interleaved with console lines', async () => {
    const received: string[] = [];
    /** Each worker message is delivered in one task: count the tasks onEmit was called in. */
    let task = 0;
    const tasks = new Set<number>();
    const ticker = setInterval(() => task++, 0);
    const odd = ['quote " and \\ backslash', 'line\nbreak\r\u2028', '✓ ünïcödé 😀', '', ']', '","'];
    try {
      const result = await run(
        `const odd = ${JSON.stringify(odd)};
         for (let i = 0; i < 20000; i++) { emit(i % 1000 === 0 ? odd[(i / 1000) % odd.length] : 'e' + i); if (i % 5000 === 0) console.log('at', i); }
         return 'ok';`,
        {
          onEmit: (text) => {
            tasks.add(task);
            received.push(text);
          },
          timeoutMs: 10_000,
        },
      );
      expect(result.value).toBe('ok');
      expect(result.console).toEqual([0, 5000, 10000, 15000].map((i) => ({ level: 'log', text: `at ${i}` })));
    } finally {
      clearInterval(ticker);
    }
    expect(received).toHaveLength(20_000);
    for (let i = 0; i < 20_000; i++) {
      const expected = i % 1000 === 0 ? odd[(i / 1000) % odd.length] : `e${i}`;
      if (received[i] !== expected) throw new Error(`emit ${i}: ${JSON.stringify(received[i])}, expected ${JSON.stringify(expected)}`);
    }
    expect(tasks.size).toBeLessThan(200);
  });

  it('loads neither the worker\'s entry nor the engine on the caller\'s thread (imports of types only)', () => {
    // A value import would put the worker's entry, which listens on `parentPort` when there is
    // one, and QuickJS in the main bundle.
    const source = readFileSync(fileURLToPath(new URL('./quickjs-code-sandbox.ts', import.meta.url)), 'utf8');
    const imports = source.match(/^import .* from '\.\/quickjs-(worker|engine)\.js';$/gm) ?? [];
    expect(imports.length).toBeGreaterThan(0);
    for (const line of imports) expect(line).toMatch(/^import type /);
  });

  it('joins the sandbox\'s JSON batches into one array text', () => {
    expect(joinJsonArrays(['["a"]'])).toBe('["a"]');
    expect(JSON.parse(joinJsonArrays(['["a","b"]', '[]', '["c,\\"]"]']))).toEqual(['a', 'b', 'c,"]']);
  });

  it('keeps the message of a thrown error, of a thrown string and of a syntax error', async () => {
    const thrown = await failure('throw new RangeError("amount must be positive")');
    expect(thrown.code).toBe('sandbox_error');
    expect(thrown.message).toBe('amount must be positive');
    expect(thrown.kind).toBe('bad_request');
    const rejected = await failure('await Promise.resolve(); throw new Error("after await")');
    expect(rejected.message).toBe('after await');
    expect((await failure('throw "just a string"')).message).toBe('just a string');
    expect((await failure('throw { code: 7 }')).message).toBe('{"code":7}');
    const syntax = await failure('return (1 +');
    expect(syntax.code).toBe('sandbox_error');
    expect(syntax.message.length).toBeGreaterThan(0);
    const withConsole = await failure('console.log("before"); null.x');
    expect(withConsole.console).toEqual([{ level: 'log', text: 'before' }]);
  });

  it('refuses to return values that are not JSON, and turns undefined and functions into null', async () => {
    const bigint = await failure('return 10n');
    expect(bigint.code).toBe('sandbox_error');
    expect(bigint.message).toMatch(/^The returned value is not JSON: /);
    const cyclic = await failure('const a = {}; a.self = a; return a');
    expect(cyclic.message).toMatch(/^The returned value is not JSON: /);
    expect((await run('return undefined')).value).toBeNull();
    expect((await run('return () => 1')).value).toBeNull();
    expect((await run('return { f() {}, d: new Date(0), n: NaN, m: new Map([[1, 2]]) }')).value).toEqual({ d: '1970-01-01T00:00:00.000Z', n: null, m: {} });
    // A toJSON that lies cannot make the host parse something that is not JSON.
    expect((await run('Object.prototype.toJSON = function () { return "x" }; JSON.stringify = () => "{"; return {}')).value).toBe('x');
  });

  describe('cannot reach the host', () => {
    it('has no require, process, module loaders, timers, network or file functions', async () => {
      const result = await run(`return [
        typeof require, typeof process, typeof module, typeof exports, typeof fetch, typeof XMLHttpRequest,
        typeof WebSocket, typeof setTimeout, typeof setInterval, typeof setImmediate, typeof queueMicrotask,
        typeof std, typeof os, typeof Deno, typeof Bun, typeof WebAssembly, typeof globalThis.global,
      ]`);
      expect(new Set(result.value as string[])).toEqual(new Set(['undefined']));
    });

    it('cannot read files: require, import(), std and the Function constructor all fail', async () => {
      expect((await failure('return require("fs").readFileSync("/etc/passwd", "utf8")')).message).toMatch(/require/);
      const dynamicImport = await failure('const fs = await import("fs"); return fs.readFileSync("/etc/passwd", "utf8")');
      expect(dynamicImport.code).toBe('sandbox_error');
      expect(dynamicImport.message).not.toMatch(/root:/);
      expect((await failure('return std.loadFile("/etc/passwd")')).message).toMatch(/std/);
      expect((await failure('return this.constructor.constructor("return process")().mainModule.require("fs")')).message).toMatch(/process/);
      expect((await failure('return (function () { return this })().process.binding("fs")')).message).toMatch(/binding|undefined|process/);
    });

    it('cannot reach the network: no fetch, XMLHttpRequest, sockets or import of http modules', async () => {
      expect((await failure('return await fetch("http://127.0.0.1:1/")')).message).toMatch(/fetch/);
      expect((await failure('return new XMLHttpRequest()')).message).toMatch(/XMLHttpRequest/);
      expect((await failure('return new WebSocket("ws://127.0.0.1:1")')).message).toMatch(/WebSocket/);
      expect((await failure('await import("node:http"); return 1')).code).toBe('sandbox_error');
      expect((await failure('await import("https://example.com/x.js"); return 1')).code).toBe('sandbox_error');
    });

    it('cannot use eval to reach host code: eval runs inside the sandbox', async () => {
      const result = await run('return [eval("1 + 1"), eval("typeof process"), new Function("return typeof require")()]');
      expect(result.value).toEqual([2, 'undefined', 'undefined']);
    });
  });

  describe('limits', () => {
    it('stops an infinite loop at the time limit with sandbox_timeout, and the next run works', async () => {
      const started = Date.now();
      const error = await failure('for (;;) {}', { timeoutMs: 200 });
      expect(error.code).toBe('sandbox_timeout');
      expect(error.message).toMatch(/200 ms/);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(error.durationMs).toBeGreaterThanOrEqual(190);
      expect((await run('return 1')).value).toBe(1);
    });

    it('keeps the host\'s event loop free while code runs', async () => {
      const ticks: number[] = [];
      const timer = setInterval(() => ticks.push(Date.now()), 10);
      try {
        expect((await failure('for (;;) {}', { timeoutMs: 300 })).code).toBe('sandbox_timeout');
      } finally {
        clearInterval(timer);
      }
      expect(ticks.length).toBeGreaterThanOrEqual(10);
    });

    it('terminates code stuck in long built-in calls shortly after the limit, and the next run works', async () => {
      const started = Date.now();
      const stuck = await failure('for (;;) new Array(2e6).fill(1).reverse()', { timeoutMs: 200, memoryBytes: 64 * MiB });
      expect(stuck.code).toBe('sandbox_timeout');
      expect(stuck.durationMs).toBeGreaterThanOrEqual(190);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect((await run('return 2')).value).toBe(2);
    });

    it('counts the hard stop from when the code starts, not from when the worker was asked (it may be loading)', async () => {
      // A fresh worker takes longer than 150 ms + 1 ms to start and load its module (here, from
      // the TypeScript sources, several times that).
      const fresh = new QuickJsCodeSandbox({ workers: 1, hardStopGraceMs: 1 });
      try {
        const result = await fresh.run({ code: 'return 1', globals: {}, timeoutMs: 150, memoryBytes: 16 * MiB });
        expect(result.value).toBe(1);
        const stuck = await fresh.run({ code: 'for (;;) {}', globals: {}, timeoutMs: 50, memoryBytes: 16 * MiB }).catch((e: unknown) => e);
        expect((stuck as CodeSandboxError).code).toBe('sandbox_timeout');
        expect((stuck as CodeSandboxError).durationMs).toBeGreaterThanOrEqual(45);
      } finally {
        await fresh.close();
      }
    });

    it('stops a loop that catches every exception, and an endless chain of promise jobs', async () => {
      expect((await failure('for (;;) { try { while (true) {} } catch (e) {} }', { timeoutMs: 150 })).code).toBe('sandbox_timeout');
      expect((await failure('const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {})', { timeoutMs: 150 })).code).toBe('sandbox_timeout');
    });

    it('stops when the signal aborts during the run (here from onEmit), and refuses an aborted signal', async () => {
      const controller = new AbortController();
      let emits = 0;
      const error = await failure('for (let i = 0; ; i++) emit(String(i))', {
        timeoutMs: 10_000,
        signal: controller.signal,
        onEmit: () => {
          emits += 1;
          if (emits === 100) controller.abort();
        },
      });
      expect(error.code).toBe('sandbox_timeout');
      expect(error.message).toMatch(/cancelled/);
      expect(emits).toBe(100);
      const before = await failure('return 1', { signal: AbortSignal.abort() });
      expect(before.code).toBe('sandbox_timeout');
    });

    it('hands onEmits each batch as the JSON text of its array, every emit in order, and ends the run with its error when it throws', async () => {
      const batches: string[] = [];
      const odd = ['quote " and \\ backslash', 'line\nbreak', '","', '\ud800 lone', '😀', '', 'nul \u0000 inside', 'separator \u0001 inside', 'a real \ufffd'];
      const result = await run(`const odd = ${JSON.stringify(odd)}; for (let i = 0; i < 5000; i++) emit(i % 500 === 0 ? odd[(i / 500) % odd.length] : 'e' + i); emit({ n: 1 }); return 'ok';`, {
        onEmit: () => {
          throw new Error('onEmit is not called when onEmits is given');
        },
        onEmits: (json) => void batches.push(json),
        timeoutMs: 10_000,
      });
      expect(result.value).toBe('ok');
      expect(batches.length).toBeGreaterThan(0);
      const emitted = batches.flatMap((json) => JSON.parse(json) as string[]);
      expect(emitted).toEqual([...Array.from({ length: 5000 }, (_, i) => (i % 500 === 0 ? odd[(i / 500) % odd.length] : `e${i}`)), '{"n":1}']);
      // Written as JSON.stringify writes it.
      for (const json of batches) expect(json).toBe(JSON.stringify(JSON.parse(json)));

      // A NUL in the last emit of a batch (the text crosses as a C string, which a NUL ends).
      const last: string[] = [];
      const ends = await run('emit("x"); emit("y"); emit("z\\u0000tail"); emit("\\u0000"); return 1', { onEmits: (json) => void last.push(...(JSON.parse(json) as string[])) });
      expect(ends.value).toBe(1);
      expect(last).toEqual(['x', 'y', 'z\u0000tail', '\u0000']);

      const listenerError = new Error('client gone');
      const error = await run('for (;;) { try { emit("x") } catch (e) {} }', {
        onEmits: () => {
          throw listenerError;
        },
      }).catch((e: unknown) => e);
      expect(error).toBe(listenerError);
    });

    it('ends the run with the listener\'s own error when onEmit throws, and the code cannot catch it away', async () => {
      const listenerError = new Error('client gone');
      const error = await run('for (;;) { try { emit("x") } catch (e) {} }', {
        onEmit: () => {
          throw listenerError;
        },
      }).catch((e: unknown) => e);
      expect(error).toBe(listenerError);
    });

    it('stops code that allocates past its memory limit with sandbox_memory_exceeded', async () => {
      const arrays = await failure('const keep = []; for (;;) keep.push(new Array(10000).fill(Math.random()))', { memoryBytes: 8 * MiB, timeoutMs: 10_000 });
      expect(arrays.code).toBe('sandbox_memory_exceeded');
      expect(arrays.message).toMatch(/memory limit of 8388608 bytes/);
      const objects = await failure('const keep = []; for (let i = 0; ; i++) keep.push({ i, s: "v" + i })', { memoryBytes: 4 * MiB, timeoutMs: 10_000 });
      expect(objects.code).toBe('sandbox_memory_exceeded');
      const typed = await failure('const keep = []; for (;;) keep.push(new Float64Array(1e5))', { memoryBytes: 8 * MiB, timeoutMs: 10_000 });
      expect(typed.code).toBe('sandbox_memory_exceeded');
      // Code that catches the failed allocation goes on, having been refused the memory: the
      // WebAssembly memory of the run is capped at its limit plus the module's fixed 16 MiB.
      const caught = await run('const keep = []; try { for (;;) keep.push(new Float64Array(1e4)) } catch (e) { return [e.message, keep.length * 8e4] }', { memoryBytes: 8 * MiB, timeoutMs: 10_000 });
      const [message, held] = caught.value as [string, number];
      expect(message).toBe('out of memory');
      expect(held).toBeLessThan(8 * MiB + 16 * MiB);
      expect((await run('return 1')).value).toBe(1);
    });

    it('stops huge strings: a repeat past the limit and a doubling loop', async () => {
      expect((await failure('return "x".repeat(1e9).length', { memoryBytes: 16 * MiB })).code).toBe('sandbox_memory_exceeded');
      expect((await failure('let s = "x"; for (;;) s += s; return s.length', { memoryBytes: 16 * MiB })).code).toMatch(/sandbox_memory_exceeded|sandbox_error/);
      // Within the limit, a large string is fine and comes back whole.
      expect(((await run('return "y".repeat(1e6)', { memoryBytes: 16 * MiB })).value as string).length).toBe(1e6);
    });

    it('turns deep recursion into sandbox_error without hurting later runs', async () => {
      const plain = await failure('const f = (n) => f(n + 1) + 1; return f(0)');
      expect(plain.code).toBe('sandbox_error');
      expect(plain.message).toBe('Maximum call stack size exceeded');
      const throughBuiltins = await failure('const o = {}; o.toString = function () { return String(this) }; return String(o)');
      expect(throughBuiltins.code).toBe('sandbox_error');
      expect(throughBuiltins.message).toBe('Maximum call stack size exceeded');
      const caught = await run('let depth = 0; const f = () => { depth++; f() }; try { f() } catch (e) { return [depth > 100, e instanceof Error] }');
      expect(caught.value).toEqual([true, true]);
      expect((await run('return [1, 2, 3].map((n) => n * 2)')).value).toEqual([2, 4, 6]);
    });

    it('keeps one run\'s failure away from runs in flight together', async () => {
      const results = await Promise.allSettled([
        run('for (;;) {}', { timeoutMs: 100 }),
        run('return inputs.n * 2', { globals: { inputs: { n: 21 } } }),
        run('const k = []; for (;;) k.push(new Array(1e4).fill(1))', { memoryBytes: 4 * MiB, timeoutMs: 10_000 }),
        run('return "still fine"'),
      ]);
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value.value : (r.reason as CodeSandboxError).code))).toEqual([
        'sandbox_timeout',
        42,
        'sandbox_memory_exceeded',
        'still fine',
      ]);
    });
  });

  describe('endless promise chains', () => {
    // Code whose promise jobs allocate without end: the memory limit strikes inside a job, where
    // QuickJS turns the error into the rejection of a promise the code may not be waiting on.
    const allocating = [
      'async function f() { const big = []; for (;;) { big.push(new Array(1e5).fill(1)); await null } } return f();',
      'const keep = []; const step = () => { keep.push(new Array(1e4).fill(1)); return Promise.resolve().then(step) }; return step();',
      'const keep = []; const step = () => { keep.push(new Array(1e4).fill(1)); Promise.resolve().then(step) }; step(); await new Promise(() => {});',
      'const keep = []; const step = () => { keep.push(new Array(1e3).fill(1)); Promise.resolve().then(step); Promise.resolve().then(step) }; step(); await new Promise(() => {});',
      'const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {});',
    ];
    // Chains that only take time: each promise resolved with the next one, or awaits in a loop.
    const spinning = [
      'const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {});',
      'const spin = () => Promise.resolve().then(spin); return spin();',
      'async function f() { for (;;) await null } return f();',
    ];

    it('reports sandbox_memory_exceeded when the memory limit strikes inside promise jobs', async () => {
      for (let round = 0; round < 2; round++) {
        for (const code of allocating) {
          const error = await failure(code, { memoryBytes: 8 * MiB, timeoutMs: 10_000 });
          expect([code, error.code, error.message]).toEqual([code, 'sandbox_memory_exceeded', 'The code used more than its memory limit of 8388608 bytes.']);
        }
      }
      expect((await run('return 1')).value).toBe(1);
    });

    it('reports sandbox_timeout when an endless chain of promise jobs runs past the time limit', async () => {
      for (let round = 0; round < 2; round++) {
        for (const code of spinning) {
          const error = await failure(code, { memoryBytes: 256 * MiB, timeoutMs: 100 });
          expect([code, error.code, error.message]).toEqual([code, 'sandbox_timeout', 'The code ran longer than its time limit of 100 ms.']);
        }
      }
    });

    it('leaves its worker\'s module in a state it can free: no teardown fails after chains stopped by a limit', async () => {
      const own = new QuickJsCodeSandbox({ workers: 1 });
      try {
        const ask = (code: string, timeoutMs: number, memoryBytes: number) => own.run({ code, globals: {}, timeoutMs, memoryBytes }).catch((error: unknown) => error as CodeSandboxError);
        for (const code of spinning) expect((await ask(code, 100, 256 * MiB)) as CodeSandboxError).toHaveProperty('code', 'sandbox_timeout');
        for (const code of allocating) expect(await ask(code, 10_000, 8 * MiB)).toBeInstanceOf(CodeSandboxError);
        const stats = own.moduleStats();
        expect(stats.teardownFailures).toBe(0);
        expect((await ask('return 1 + 1', 1_000, 16 * MiB)) as unknown).toEqual(expect.objectContaining({ value: 2 }));
        // Runs that end well, or stop outside promise jobs, free their runtime and keep the module.
        const before = own.moduleStats().loads;
        expect((await ask('for (;;) {}', 100, 16 * MiB)) as CodeSandboxError).toHaveProperty('code', 'sandbox_timeout');
        expect((await ask('await null; return [await 1, await Promise.resolve(2)]', 1_000, 16 * MiB)) as unknown).toEqual(expect.objectContaining({ value: [1, 2] }));
        expect((await ask('await new Promise(() => {})', 1_000, 16 * MiB)) as CodeSandboxError).toHaveProperty('code', 'sandbox_error');
        expect(own.moduleStats()).toEqual({ ...stats, loads: before, teardownFailures: 0, warmStarts: expect.any(Number) as unknown as number });
      } finally {
        await own.close();
      }
    });
  });

  it('rejects bad options and requests with a clear message', async () => {
    expect(() => new QuickJsCodeSandbox({ maxStackBytes: 0 })).toThrow(/maxStackBytes/);
    expect(() => new QuickJsCodeSandbox({ workers: 1.5 })).toThrow(/workers/);
    expect((await failure('return 1', { timeoutMs: 0 })).message).toMatch(/timeoutMs/);
    expect((await failure('return 1', { memoryBytes: -1 })).message).toMatch(/memoryBytes/);
    const bad = await failure('return 1', { globals: { n: 1n } as unknown as Record<string, unknown> });
    expect(bad.message).toMatch(/globals are not JSON/);
  });
});
