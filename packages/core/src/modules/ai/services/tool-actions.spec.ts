import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { runHttpAction } from './http-action.js';
import { isPrivateAddress } from './network-guard.js';
import { renderJson, renderText } from './template.js';
import { priceOf } from './ai-gateway.service.js';

describe('templates', () => {
  const context = { city: 'São Paulo', args: { n: 3, tags: ['a'] }, data: { deep: { x: true } } };
  it('renders text, encodes URL parts and keeps JSON types for whole placeholders', () => {
    expect(renderText('https://x/w?c={{ city }}&n={{args.n}}', context, encodeURIComponent)).toBe('https://x/w?c=S%C3%A3o%20Paulo&n=3');
    expect(renderText('{{missing}}|{{args.tags}}', context)).toBe('|["a"]');
    expect(renderJson({ n: '{{args.n}}', t: 'in {{city}}', list: ['{{data.deep}}'], keep: 5 }, context)).toEqual({ n: 3, t: 'in São Paulo', list: [{ x: true }], keep: 5 });
    expect(renderJson('{{__proto__.constructor}}', context)).toBeNull();
  });
});

describe('private network guard', () => {
  it('tells private, loopback and link-local addresses from public ones', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '::1', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '0.0.0.0', '100.64.0.1']) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) expect(isPrivateAddress(address), address).toBe(false);
  });

  it('refuses a loopback destination before connecting, and reaches it when allowed', async () => {
    let hits = 0;
    const server = createServer((req, res) => {
      hits++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ ok: true, path: req.url, result: { value: 7 } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const conf = { method: 'GET', url: `http://127.0.0.1:${port}/v?q={{q}}`, headers: {}, response: { path: 'result.value' } };
      await expect(runHttpAction(conf, { q: 'a b' }, { allowPrivate: false, timeoutMs: 2000, maxResponseBytes: 1000 })).rejects.toMatchObject({ code: 'tool_destination_refused' });
      await expect(runHttpAction({ ...conf, url: `http://localhost:${port}/` }, {}, { allowPrivate: false, timeoutMs: 2000, maxResponseBytes: 1000 })).rejects.toMatchObject({ code: 'tool_destination_refused' });
      expect(hits).toBe(0);
      expect(await runHttpAction(conf, { q: 'a b' }, { allowPrivate: true, timeoutMs: 2000, maxResponseBytes: 1000 })).toBe(7);
      await expect(runHttpAction(conf, {}, { allowPrivate: true, timeoutMs: 2000, maxResponseBytes: 10 })).rejects.toMatchObject({ code: 'tool_call_failed' });
    } finally {
      server.close();
    }
  });
});

describe('pricing', () => {
  it('charges whole credits per 1,000 tokens, rounded up', () => {
    expect(priceOf({ input: 2, output: 4 }, { inputTokens: 2000, outputTokens: 500 })).toBe(6);
    expect(priceOf({ input: 1, output: 1 }, { inputTokens: 1, outputTokens: 0 })).toBe(1);
    expect(priceOf({ input: 1, output: 1 }, { inputTokens: 0, outputTokens: 0 })).toBe(0);
    expect(priceOf({ input: 0.5, output: 0 }, { inputTokens: 4000, outputTokens: 100 })).toBe(2);
  });
});
