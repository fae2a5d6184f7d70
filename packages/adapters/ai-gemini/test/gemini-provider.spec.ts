import type { TrellisError } from '@trellis/core';
import { collectParts, describeProviderLive, describeProviderOnWire, fastRetry, GeminiWireServer } from '@trellis/test-support';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GeminiProvider } from '../src/index.js';

describeProviderOnWire({
  name: 'GeminiProvider on the Gemini API wire format',
  provider: (retry) => new GeminiProvider({ retry }),
  startWire: (apiKey) => new GeminiWireServer({ apiKey }).start(),
  conf: (wire, apiKey) => ({ model: 'gemini-2.5-flash', baseURL: (wire as GeminiWireServer).baseURL, apiKey }),
  embeddings: true,
  // The Gemini API ends a failing stream with an HTTP error, not an error event.
  streamErrorEvents: false,
});

describe('GeminiProvider requests and conf', () => {
  let wire: GeminiWireServer;
  const provider = new GeminiProvider({ retry: fastRetry });
  beforeAll(async () => {
    wire = await new GeminiWireServer({ apiKey: 'AIza-wire' }).start();
  });
  afterAll(async () => {
    await wire.close();
  });
  beforeEach(() => {
    wire.reset();
  });
  const conf = (extra: Record<string, unknown> = {}) => provider.parseConf({ model: 'gemini-2.5-flash', baseURL: wire.baseURL, apiKey: 'AIza-wire', ...extra });

  it('sends streamGenerateContent with the key header, systemInstruction, functionDeclarations and functionResponse', async () => {
    wire.enqueue({ text: ['ok'] });
    await collectParts(
      provider.chat(conf({ temperature: 1.4, topK: 3, maxTokens: 50 }), {
        messages: [
          { role: 'system', content: 'Answer in French.' },
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: '', toolCalls: [{ toolCallId: 'c1', toolName: 'get_weather', input: { city: 'Lyon' } }] },
          { role: 'tool', toolCallId: 'c1', toolName: 'get_weather', content: '{"c":12}' },
        ],
        tools: [{ name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
      }),
    );
    const sent = wire.chatRequests[0];
    expect(sent.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent');
    expect(sent.query.get('alt')).toBe('sse');
    expect(sent.headers['x-goog-api-key']).toBe('AIza-wire');
    expect(sent.body.systemInstruction.parts[0].text).toBe('Answer in French.');
    expect(sent.body.generationConfig).toMatchObject({ temperature: 1.4, topK: 3, maxOutputTokens: 50 });
    expect(sent.body.tools[0].functionDeclarations[0]).toMatchObject({ name: 'get_weather', description: 'Weather' });
    expect(sent.body.contents[1]).toMatchObject({ role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Lyon' } } }] });
    expect(JSON.stringify(sent.body.contents[2])).toContain('functionResponse');
  });

  it('reads a 429 wait from the RetryInfo detail Google sends instead of retry-after', async () => {
    wire.enqueue({ error: { status: 429, message: 'Resource has been exhausted', headers: { 'retry-after': '42' } } });
    const raw = await fetch(`${wire.baseURL}/models/m:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': 'AIza-wire' }, body: '{}' });
    expect(raw.status).toBe(429);
    expect(raw.headers.get('retry-after')).toBeNull();
    expect(((await raw.json()) as any).error.details[0]).toEqual({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '42s' });
    wire.enqueue({ error: { status: 429, message: 'Resource has been exhausted', headers: { 'retry-after': '42' } } });
    const error = (await collectParts(provider.chat(conf(), { messages: [{ role: 'user', content: 'hi' }] })).catch((e: unknown) => e)) as TrellisError;
    expect(error.code).toBe('ai_rate_limited');
    expect(error.extra).toEqual({ retry_after: 42 });
    expect(error.message).toContain('Resource has been exhausted');
  });

  it('maps 403 (no key accepted) to ai_auth_failed', async () => {
    const locked = await new GeminiWireServer({ apiKey: 'AIza-right' }).start();
    try {
      const noKeyFetch: typeof fetch = (input, init) => {
        const headers = new Headers(init?.headers);
        headers.delete('x-goog-api-key');
        return fetch(input, { ...init, headers });
      };
      const bare = new GeminiProvider({ retry: fastRetry, fetch: noKeyFetch });
      const error = (await collectParts(bare.chat(bare.parseConf({ model: 'gemini-2.5-flash', baseURL: locked.baseURL, apiKey: 'x' }), { messages: [{ role: 'user', content: 'hi' }] })).catch((e: unknown) => e)) as TrellisError;
      expect(error.code).toBe('ai_auth_failed');
      expect(locked.requests[0].headers['x-goog-api-key']).toBeUndefined();
    } finally {
      await locked.close();
    }
  });

  it('maps finish reasons (MAX_TOKENS to length) and usageMetadata to usage', async () => {
    wire.enqueue({ text: ['a', 'b'], finishReason: 'MAX_TOKENS', usage: { inputTokens: 8, outputTokens: 2 } });
    const parts = await collectParts(provider.chat(conf(), { messages: [{ role: 'user', content: 'hi' }] }));
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'length', usage: { inputTokens: 8, outputTokens: 2 } });
  });

  it('embeds texts in order through batchEmbedContents', async () => {
    wire.enqueue({ embeddings: [[1, 0], [0, 1], [0.5, 0.5]] });
    const result = await provider.embed(conf({ embeddingModel: 'text-embedding-004', dimensions: 2 }), { texts: ['a', 'b', 'c'] });
    expect(result.embeddings).toEqual([[1, 0], [0, 1], [0.5, 0.5]]);
    const sent = wire.lastRequest(':batchEmbedContents')!;
    expect(sent.path).toBe('/v1beta/models/text-embedding-004:batchEmbedContents');
    expect(sent.body.requests.map((item: any) => item.content.parts[0].text)).toEqual(['a', 'b', 'c']);
    expect(sent.body.requests[0].outputDimensionality).toBe(2);
  });

  it('requires model and apiKey and defaults the base URL and embedding model', () => {
    try {
      provider.parseConf({ topK: 0 });
      expect.unreachable();
    } catch (error) {
      expect((error as TrellisError).details?.map((issue) => issue.field)).toEqual(['conf.model', 'conf.apiKey', 'conf.topK']);
    }
    expect(provider.parseConf({ model: 'gemini-2.5-pro', apiKey: 'k' })).toMatchObject({ baseURL: 'https://generativelanguage.googleapis.com/v1beta', embeddingModel: 'gemini-embedding-001' });
  });
});

const liveKey = process.env.TRELLIS_TEST_GEMINI_API_KEY;
describeProviderLive({
  name: 'GeminiProvider',
  provider: () => new GeminiProvider(),
  conf: liveKey
    ? { model: process.env.TRELLIS_TEST_GEMINI_MODEL ?? 'gemini-2.5-flash', apiKey: liveKey, ...(process.env.TRELLIS_TEST_GEMINI_BASE_URL ? { baseURL: process.env.TRELLIS_TEST_GEMINI_BASE_URL } : {}) }
    : undefined,
});
