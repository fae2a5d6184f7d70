import { describe, expect, it } from 'vitest';
import { TrellisError } from '../../../../kernel/errors.js';
import { destinationRefused } from '../../../../kernel/net/network-guard.js';
import { blockToolCallKey } from '../../services/tool-effects.js';
import type { BlockIo } from '../executor.js';
import { executeWithPolicy } from '../failure-policy.js';
import { parseWorkflow, type WorkflowBlock } from '../workflow.js';
import { HttpBlockExecutor, renderHttpUrl, type HttpAttrs } from './http.js';

const fail = (details: unknown) => Object.assign(new Error('invalid'), { details });
const doc = (...content: unknown[]) => ({ type: 'doc', content });

function problems(content: unknown): string[] {
  try {
    parseWorkflow(content, fail);
    return [];
  } catch (error) {
    return (error as { details: Array<{ field: string; constraint: string; message: string }> }).details.map((d) => `${d.field}:${d.constraint}:${d.message}`);
  }
}

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** An executor whose guard answers `respond(request)` and records what was sent. */
function executor(respond: (sent: Sent) => Response | Promise<Response>, limits = { timeoutMs: 5_000, maxResponseBytes: 1_024 }) {
  const sent: Sent[] = [];
  const guard = {
    fetch: async (input: URL, init: RequestInit) => {
      const request: Sent = { url: String(input), method: String(init.method), headers: { ...(init.headers as Record<string, string>) }, body: init.body ? Buffer.from(init.body as Buffer).toString('utf8') : undefined };
      sent.push(request);
      return respond(request);
    },
  };
  return { sent, executor: new HttpBlockExecutor(() => guard as never, () => limits) };
}

/** A BlockIo recording its tool events, with a recall answered from `recorded`. */
function io(ctx: Record<string, unknown>, place: { path?: string; iteration?: number; attempt?: number } = {}, recorded = new Map<string, unknown>()) {
  const events: unknown[][] = [];
  const value: BlockIo = {
    runId: 'run-1',
    userId: 'u',
    tenant: 't',
    signal: new AbortController().signal,
    ctx: new Map(Object.entries(ctx)),
    inputs: {},
    remainingMs: () => 60_000,
    ...place,
    recall: async (key) => (recorded.has(key) ? { result: recorded.get(key) } : undefined),
    chunk: () => undefined,
    chunks: () => undefined,
    toolStart: (id, name) => void events.push(['tool_start', id, name]),
    toolResult: (id, result, key) => void events.push(['tool_result', id, result, key]),
    modelUsage: () => undefined,
    sandboxTime: () => undefined,
  };
  return { io: value, events };
}

const block = (attrs: HttpAttrs, id = 'h1'): WorkflowBlock<HttpAttrs> => ({ id, name: 'call', kind: 'http', type: 'httpBlock', attrs, text: '', replayable: false }) as WorkflowBlock<HttpAttrs>;
const json = (value: unknown, status = 200) => new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });

describe('http block attrs', () => {
  it('parse as the http kind, not replayable', () => {
    const [parsed] = parseWorkflow(doc({ type: 'httpBlock', attrs: { id: 'h', name: 'get', method: 'GET', url: '{{ toolUrl }}/items' } }), fail);
    expect(parsed).toMatchObject({ kind: 'http', name: 'get', replayable: false, attrs: { method: 'GET', url: '{{ toolUrl }}/items' } });
  });

  it('report each wrong attr on its field', () => {
    expect(
      problems(
        doc(
          { type: 'httpBlock', attrs: { id: 'a', method: 'FETCH', headers: { 'x-n': 1 }, responseType: 'xml' } },
          { type: 'httpBlock', attrs: { id: 'b', url: 'ftp://example.com/x', headers: { 'bad name': 'v' } } },
          { type: 'httpBlock', attrs: { id: 'c', url: 'https://example.com', headers: ['x'], retry: { maxAttempts: 0 } } },
        ),
      ),
    ).toEqual([
      'content.0.attrs.method:isIn:must be one of GET, POST, PUT, PATCH, DELETE, HEAD',
      'content.0.attrs.url:required:an http block needs a url (an http(s) URL or a template such as {{ toolUrl }}/items)',
      'content.0.attrs.headers:isObject:must be an object of header names to strings (templates)',
      'content.0.attrs.responseType:isIn:must be one of auto, json, text',
      'content.1.attrs.url:isUrl:must be an http or https URL (or a template)',
      'content.1.attrs.headers:isHeaderName:"bad name" is not an HTTP header name',
      'content.2.attrs.headers:isObject:must be an object of header names to strings (templates)',
      'content.2.attrs.retry:isRetryPolicy:must be { maxAttempts (1 to 20), delayMs, factor (1 to 10), maxDelayMs, jitter }',
    ]);
  });
});

describe('http block URL', () => {
  const ctx = new Map<string, unknown>([
    ['toolUrl', 'http://127.0.0.1:8080'],
    ['q', 'a b/c&d'],
  ]);
  it('inserts a leading reference as it is and URL-encodes the others', () => {
    expect(renderHttpUrl('{{ toolUrl }}/search?q={{ q }}', ctx)).toBe('http://127.0.0.1:8080/search?q=a%20b%2Fc%26d');
    expect(renderHttpUrl('https://example.com/{{ q }}', ctx)).toBe('https://example.com/a%20b%2Fc%26d');
  });
});

describe('http block execution', () => {
  it('sends method, rendered URL, headers and JSON body with the block idempotency key, and outputs { status, body }', async () => {
    const { sent, executor: http } = executor(() => json({ ok: true }, 201));
    const { io: blockIo, events } = io({ toolUrl: 'http://svc.test', n: 3, name: 'Ann' }, { path: 'loop/h1', iteration: 2 });
    const outcome = await http.execute(block({ url: '{{ toolUrl }}/items', headers: { 'X-Who': 'user {{ name }}' }, body: { count: '{{ n }}', label: 'n={{ n }}' } }), blockIo);
    const key = blockToolCallKey({ runId: 'run-1', path: 'loop/h1', iteration: 2 }, 'h1', 0);
    expect(outcome).toEqual({ output: { status: 201, body: { ok: true } } });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ url: 'http://svc.test/items', method: 'POST', body: '{"count":3,"label":"n=3"}' });
    expect(sent[0]!.headers).toMatchObject({ 'x-who': 'user Ann', 'content-type': 'application/json', 'idempotency-key': key });
    expect(events).toEqual([
      ['tool_start', 'h1:http', 'http'],
      ['tool_result', 'h1:http', { status: 201, body: { ok: true } }, key],
    ]);
  });

  it('derives the same key on every attempt of a block and another one per iteration', async () => {
    const { sent, executor: http } = executor(() => new Response('fine', { headers: { 'content-type': 'text/plain' } }));
    const b = block({ method: 'GET', url: 'http://svc.test/x', body: { ignored: true } });
    await http.execute(b, io({}, { path: 'l/h1', iteration: 0 }).io);
    await http.execute(b, io({}, { path: 'l/h1', iteration: 0, attempt: 2 }).io);
    await http.execute(b, io({}, { path: 'l/h1', iteration: 1 }).io);
    const keys = sent.map((s) => s.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).not.toBe(keys[0]);
    // GET sends no body.
    expect(sent.map((s) => s.body)).toEqual([undefined, undefined, undefined]);
  });

  it('answers a call recorded in the run log without calling again', async () => {
    const { sent, executor: http } = executor(() => json({ fresh: true }));
    const key = blockToolCallKey({ runId: 'run-1' }, 'h1', 0);
    const { io: blockIo, events } = io({}, {}, new Map([[key, { status: 200, body: { recorded: true } }]]));
    await expect(http.execute(block({ url: 'http://svc.test/' }), blockIo)).resolves.toEqual({ output: { status: 200, body: { recorded: true } } });
    expect(sent).toHaveLength(0);
    expect(events[1]).toEqual(['tool_result', 'h1:http', { status: 200, body: { recorded: true } }, key]);
  });

  it('fails a non-2xx answer with http_error and its status, recording nothing', async () => {
    const { executor: http } = executor(() => new Response('no such item', { status: 404 }));
    const { io: blockIo, events } = io({});
    const error = (await http.execute(block({ url: 'http://svc.test/' }), blockIo).catch((e: unknown) => e)) as TrellisError;
    expect(error).toBeInstanceOf(TrellisError);
    expect([error.code, error.message, error.extra]).toEqual(['http_error', 'The server answered 404: no such item', { status: 404 }]);
    expect(events.map((e) => e[0])).toEqual(['tool_start']);
  });

  it('reads the body as responseType says', async () => {
    const answer = () => new Response('{"a":1}', { headers: { 'content-type': 'text/plain' } });
    const run = (responseType: HttpAttrs['responseType']) => executor(answer).executor.execute(block({ url: 'http://svc.test/', responseType }), io({}).io);
    await expect(run('auto')).resolves.toEqual({ output: { status: 200, body: '{"a":1}' } });
    await expect(run('json')).resolves.toEqual({ output: { status: 200, body: { a: 1 } } });
    await expect(run('text')).resolves.toEqual({ output: { status: 200, body: '{"a":1}' } });
    const notJson = executor(() => new Response('<html>')).executor.execute(block({ url: 'http://svc.test/', responseType: 'json' }), io({}).io);
    await expect(notJson).rejects.toMatchObject({ code: 'http_response_invalid' });
  });

  it('fails past the response size limit, on a URL that is not http(s), and with the guard refusal', async () => {
    const big = executor(() => new Response('x'.repeat(2_000)), { timeoutMs: 5_000, maxResponseBytes: 1_024 });
    await expect(big.executor.execute(block({ url: 'http://svc.test/' }), io({}).io)).rejects.toMatchObject({ code: 'http_response_too_large' });
    const any = executor(() => json({}));
    await expect(any.executor.execute(block({ url: '{{ base }}/x' }), io({ base: 'file:///etc' }).io)).rejects.toMatchObject({ code: 'invalid_http_url' });
    expect(any.sent).toHaveLength(0);
    const refused = executor(() => {
      throw new TypeError('fetch failed', { cause: destinationRefused('127.0.0.1', 'a loopback address') });
    });
    await expect(refused.executor.execute(block({ url: 'http://127.0.0.1/' }), io({}).io)).rejects.toMatchObject({ code: 'destination_refused' });
  });
});

describe('http block under a retry policy', () => {
  it('retries an http_error with the same key but never a refused destination', async () => {
    const policyIo = () => ({ session: { status: 'running' } as never, emit: () => undefined });
    const flaky = executor(() => new Response('busy', { status: 503 }));
    const b = block({ url: 'http://svc.test/', retry: { maxAttempts: 3, delayMs: 0 } } as HttpAttrs);
    await expect(executeWithPolicy(flaky.executor, b as never, io({}).io, policyIo())).rejects.toMatchObject({ code: 'http_error' });
    expect(flaky.sent).toHaveLength(3);
    expect(new Set(flaky.sent.map((s) => s.headers['idempotency-key'])).size).toBe(1);
    const refused = executor(() => {
      throw new TypeError('fetch failed', { cause: destinationRefused('10.0.0.1', 'a private address') });
    });
    await expect(executeWithPolicy(refused.executor, b as never, io({}).io, policyIo())).rejects.toMatchObject({ code: 'destination_refused' });
    expect(refused.sent).toHaveLength(1);
  });
});
