import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TrellisError } from '../../../kernel/errors.js';
import { fromMarkdownIr, toMarkdownIr, normalizeDocument } from '../../documents/index.js';
import type { BlockSession } from '../entities/run.entity.js';
import type { BlockExecutor, BlockIo } from './executor.js';
import { executeWithPolicy, failurePolicyIssues, retryDelay } from './failure-policy.js';
import { parseWorkflow, type WorkflowBlock } from './workflow.js';

const fail = (details: unknown) => Object.assign(new Error('invalid'), { details });

function io(signal = new AbortController().signal): BlockIo {
  return {
    runId: 'r',
    userId: 'u',
    tenant: 't',
    signal,
    ctx: new Map<string, unknown>([['other', 'from other']]),
    inputs: {},
    remainingMs: () => 60_000,
    recall: async () => undefined,
    chunk: () => undefined,
    chunks: () => undefined,
    toolStart: () => undefined,
    toolResult: () => undefined,
    modelUsage: () => undefined,
    sandboxTime: () => undefined,
  };
}

const block = (attrs: Record<string, unknown>): WorkflowBlock => ({ index: 0, id: 'b1', name: 'b', type: 'codeBlock', kind: 'code', replayable: true, attrs, text: '' });
const session = (): BlockSession => ({ blockId: 'b1', blockType: 'codeBlock', blockName: 'b', status: 'running', output: '' });

/** An executor that fails its first `failures` calls, recording the attempt each call saw. */
function flaky(failures: number): BlockExecutor & { attempts: Array<number | undefined> } {
  const attempts: Array<number | undefined> = [];
  return {
    kind: 'code',
    attempts,
    async execute(_block, blockIo) {
      attempts.push(blockIo.attempt);
      if (attempts.length <= failures) throw new TrellisError('unavailable', 'flaky', `failure ${attempts.length}`);
      return { output: `ok after ${attempts.length}` };
    },
  };
}

describe('failure policy', () => {
  it('computes backoff delays: delayMs × factor^(n-1), capped at maxDelayMs, jitter within [delay/2, delay]', () => {
    const retry = { maxAttempts: 5, delayMs: 100, factor: 3, maxDelayMs: 500 };
    expect([1, 2, 3, 4].map((n) => retryDelay(retry, n))).toEqual([100, 300, 500, 500]);
    expect(retryDelay({ maxAttempts: 2 }, 1)).toBe(1_000);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.double({ min: 0, max: 0.9999, noNaN: true }), (n, random) => {
        const plain = retryDelay(retry, n);
        const jittered = retryDelay({ ...retry, jitter: true }, n, () => random);
        expect(jittered).toBeGreaterThanOrEqual(Math.floor(plain / 2));
        expect(jittered).toBeLessThanOrEqual(plain);
      }),
    );
  });

  it('without a policy calls the executor once and lets its error through', async () => {
    const executor = flaky(1);
    await expect(executeWithPolicy(executor, block({}), io(), { session: session(), emit: () => 0 })).rejects.toMatchObject({ code: 'flaky' });
    expect(executor.attempts).toEqual([undefined]);
  });

  it('retries, emitting block_error with attempt and retryInMs and block_start with the next attempt, and records the failed attempts', async () => {
    const executor = flaky(2);
    const events: Array<[string, Record<string, unknown>]> = [];
    const s = session();
    const outcome = await executeWithPolicy(executor, block({ retry: { maxAttempts: 3, delayMs: 1, factor: 2 } }), io(), { session: s, emit: (type, data) => events.push([type, data]) });
    expect(outcome).toEqual({ output: 'ok after 3' });
    expect(executor.attempts).toEqual([undefined, 2, 3]);
    expect(events).toEqual([
      ['block_error', { blockId: 'b1', error: 'failure 1', code: 'flaky', attempt: 1, retryInMs: 1 }],
      ['block_start', { blockId: 'b1', blockType: 'codeBlock', blockName: 'b', attempt: 2 }],
      ['block_error', { blockId: 'b1', error: 'failure 2', code: 'flaky', attempt: 2, retryInMs: 2 }],
      ['block_start', { blockId: 'b1', blockType: 'codeBlock', blockName: 'b', attempt: 3 }],
    ]);
    expect(s.attempts).toEqual([
      { attempt: 1, code: 'flaky', message: 'failure 1' },
      { attempt: 2, code: 'flaky', message: 'failure 2' },
    ]);
  });

  it('uses the fallback (rendered) once the attempts are spent; never retries a stop of the run', async () => {
    const s = session();
    const outcome = await executeWithPolicy(flaky(9), block({ retry: { maxAttempts: 2, delayMs: 0 }, fallback: { value: { note: '{{ other }}' } } }), io(), { session: s, emit: () => 0 });
    expect(outcome).toEqual({ output: { note: 'from other' } });
    expect(s).toMatchObject({ fallback: true, attempts: [{ attempt: 1 }, { attempt: 2 }] });

    const controller = new AbortController();
    const stopping: BlockExecutor = {
      kind: 'code',
      async execute() {
        controller.abort(new TrellisError('unavailable', 'run_cancelled', 'stopped'));
        throw new Error('aborted');
      },
    };
    await expect(executeWithPolicy(stopping, block({ retry: { maxAttempts: 5, delayMs: 0 }, fallback: { value: 1 } }), io(controller.signal), { session: session(), emit: () => 0 })).rejects.toThrow('aborted');
  });

  it('fails an attempt that passes timeoutMs with block_timeout, even when the executor ignores its signal', async () => {
    const never: BlockExecutor = { kind: 'code', execute: () => new Promise(() => undefined) };
    await expect(executeWithPolicy(never, block({ timeoutMs: 20 }), io(), { session: session(), emit: () => 0 })).rejects.toMatchObject({ code: 'block_timeout' });
  });

  it('checks the policy attrs on any executable block, with one issue per field', () => {
    expect(failurePolicyIssues({ retry: { maxAttempts: 2, delayMs: 10, factor: 1.5, maxDelayMs: 100, jitter: true }, timeoutMs: 500, fallback: { value: null } })).toEqual([]);
    expect(failurePolicyIssues({ retry: { maxAttempts: 0 }, timeoutMs: 1.5, fallback: { other: 1 } }).map((i) => i.field)).toEqual(['retry', 'timeoutMs', 'fallback']);
    const doc = { type: 'doc', content: [{ type: 'outputBlock', attrs: { id: 'o', name: 'o', retry: { maxAttempts: 'many' } }, content: [{ type: 'text', text: 'x' }] }] };
    expect(() => parseWorkflow(doc, fail)).toThrow(expect.objectContaining({ details: [expect.objectContaining({ field: 'content.0.attrs.retry', constraint: 'isRetryPolicy' })] }));
  });

  it('round-trips policy and sub-workflow attrs through markdown-ir', () => {
    const doc = normalizeDocument({
      type: 'doc',
      content: [
        { type: 'subworkflowBlock', attrs: { id: 's1', name: 'summary', block: '0193a2c4-0000-7000-8000-000000000001', version: '3', inputs: { topic: '{{ topic }}', n: 2 }, retry: { maxAttempts: 3, delayMs: 500, factor: 2, maxDelayMs: 5000, jitter: true }, timeoutMs: 30000 } },
        { type: 'toolBlock', attrs: { id: 't1', name: 'fetch', tool: 'x', action: 'get', args: { q: '{{ topic }}' }, fallback: { value: { items: [], note: 'offline' } }, onError: 'continue' } },
      ],
    });
    const text = toMarkdownIr(doc);
    expect(text).toContain('"retry":{"maxAttempts":3');
    expect(normalizeDocument(fromMarkdownIr(text))).toEqual(doc);
    expect(parseWorkflow(doc, fail).map((b) => b.kind)).toEqual(['subworkflow', 'tool']);
  });
});
